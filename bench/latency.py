"""Hybrid retrieval latency at 10k / 100k / 1M chunks, against the in-memory design.

Usage: ``python bench/latency.py`` (10k and 100k), ``python bench/latency.py --sizes 1000000``,
``--corpus realtext`` for the second corpus (bench/scale_corpora.py describes both).

Each (corpus, size) lives in its own database ``klea_bench_lat_<size>`` (synthetic) or
``klea_bench_lat_realtext_<size>`` (kept, so a rerun skips the load). Queries: the 100
first SciFact test claims and their real embeddings.

Measured per size: load (COPY, BM25 triggers included) in chunks/s with the loader's
peak memory (this process and its server backend), HNSW build time and the building
backend's peak memory, bytes per chunk of the chunks table / HNSW index / BM25 postings,
recall@10 of the engine's HNSW search (its own ef_search) against exact search, the
query-embedding time alone, and ``retrieve()`` latency (k = 10, query vector passed in)
hybrid (its lists at once from KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS chunks, docs/retrieval.md),
hybrid with the lists one after the other, BM25 alone and vector alone, next to ``rank_bm25.BM25Okapi`` + numpy
brute-force cosine + RRF in Python on the same data.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import command_line, setup_django  # noqa: E402
from bench.hnsw_recall import _vm_hwm_mb  # noqa: E402
from bench.scale_corpora import CORPORA, chunks, queries  # noqa: E402

STORE = "bench-latency"
IN_MEMORY_QUERIES = {10_000: 100, 100_000: 30}
MAINTENANCE_WORK_MEM = "3GB"


def database(corpus: str, size: int) -> str:
    return f"klea_bench_lat_{size}" if corpus == "synthetic" else f"klea_bench_lat_{corpus}_{size}"


def percentile(values, q):
    return float(np.percentile(np.asarray(values) * 1000, q))


def load(corpus: str, size: int) -> dict:
    """Create the store with ``size`` chunks of ``corpus`` unless present; build HNSW."""
    import psycopg
    from django.db import connection
    from pgvector.psycopg import register_vector

    from domains.models import HNSW_EF_CONSTRUCTION, HNSW_M, Chunk, Document, Domain, Store

    figures = {}
    domain, _ = Domain.objects.get_or_create(name=STORE, defaults={"description": "latency"})
    store = Store.objects.filter(name=STORE).first()
    if store and Chunk.objects.filter(store=store).count() == size:
        return figures
    if store:
        store.delete()
    store = Store.objects.create(name=STORE, domain=domain)
    per_doc = 20
    docs = Document.objects.bulk_create(
        Document(store=store, file_name=f"doc-{i:07d}", status="stored") for i in range((size + per_doc - 1) // per_doc)
    )
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    started = time.monotonic()
    with psycopg.connect(**params) as conn:
        register_vector(conn)
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        rows = chunks(corpus, size)
        batch = 20_000
        for start in range(0, size, batch):
            with conn.cursor() as cur, cur.copy(
                "COPY domains_chunk (store_id, document_id, ordinal, text, headings, metadata, provenance,"
                " token_count, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["bigint", "bigint", "integer", "text", "text[]", "jsonb", "jsonb", "integer", "vector"])
                for i in range(start, min(size, start + batch)):
                    text, vector = next(rows)
                    copy.write_row([store.id, docs[i // per_doc].id, i % per_doc, text, [], "{}", "{}", 0, vector])
            conn.commit()
            print(f"  loaded {min(size, start + batch)}/{size} ({time.monotonic() - started:.0f} s)", flush=True)
        figures["load_backend_peak_rss_mb"] = _vm_hwm_mb(backend)
    figures["load_s"] = time.monotonic() - started
    figures["load_chunks_per_s"] = size / figures["load_s"]
    figures["loader_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE domains_chunk")
        cursor.execute("VACUUM ANALYZE domains_bm25posting")
        cursor.execute("VACUUM ANALYZE domains_bm25term")
        cursor.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
        started = time.monotonic()
        cursor.execute(
            "CREATE INDEX chunk_embedding_hnsw ON domains_chunk USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
        )
        figures["hnsw_build_s"] = time.monotonic() - started
        figures["hnsw_build_backend_peak_rss_mb"] = _vm_hwm_mb(backend)
    return figures


def sizes_mb() -> dict:
    from django.db import connection

    names = {
        "chunks_table_mb": "pg_total_relation_size('domains_chunk') - pg_indexes_size('domains_chunk')",
        "hnsw_index_mb": "pg_relation_size('chunk_embedding_hnsw')",
        "bm25_postings_mb": "pg_total_relation_size('domains_bm25posting')",
        "bm25_terms_mb": "pg_total_relation_size('domains_bm25term')",
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"{sql} AS {name}" for name, sql in names.items()))
        return {name: value / 2**20 for name, value in zip(names, cursor.fetchone())}


def _timed(call, items) -> list[float]:
    times = []
    for item in items:
        started = time.perf_counter()
        call(item)
        times.append(time.perf_counter() - started)
    return times


def measure_engine(queries, query_vectors) -> dict:
    from django.conf import settings
    from django.test import override_settings

    from domains import embeddings
    from domains.models import Domain, Store
    from domains.retrieval import retrieve, vector_search
    from domains.retrieval.engine import LIST_DEPTH
    from domains.retrieval.vector import _row_counts, hnsw_ef_search

    domain = Domain.objects.get(name=STORE)
    store = Store.objects.get(name=STORE)
    embeddings.embed_query("warm up")
    figures = {"embed_p50_ms": percentile(_timed(embeddings.embed_query, queries), 50)}
    pairs = list(zip(queries, query_vectors))
    # "serial": hybrid with the lists one after the other on one connection, the way
    # retrieve() runs them below KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS (docs/retrieval.md)
    runs = (("hybrid", None, settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS), ("serial", None, -1),
            ("bm25", ["bm25"], -1), ("vector", ["vector"], -1))
    times: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    at_once = set()
    for i, (text, vector) in enumerate(pairs[:10] + pairs):  # 10 to warm up, then all
        # the modes of a query in turn, the first rotating: each meets the same cache and
        # load (timed one after the other, the first mode warmed the others)
        for label, modes, threshold in runs[i % 4:] + runs[:i % 4]:
            with override_settings(KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS=threshold):
                started = time.perf_counter()
                result = retrieve(text, [domain], k=10, query_vectors=[vector], modes=modes)
                elapsed = time.perf_counter() - started
            if i >= 10:
                times[label].append(elapsed)
            if label == "hybrid":
                at_once.add(result.lists_at_once)
    for label, _, _ in runs:
        figures[f"{label}_p50_ms"] = percentile(times[label], 50)
        figures[f"{label}_p95_ms"] = percentile(times[label], 95)
    figures["hybrid_lists_at_once"] = sorted(at_once)
    store_rows, total_rows = _row_counts(store.id)
    figures["vector_strategy"] = vector_search(store.id, query_vectors[0], LIST_DEPTH, -1.0).strategy
    figures["hnsw_ef_search"] = hnsw_ef_search(LIST_DEPTH, store_rows, total_rows, filtered=False)
    recall = []
    for vector in query_vectors:
        # HNSW forced, as deep as retrieve() asks (LIST_DEPTH), with the engine's ef_search
        approximate = vector_search(store.id, vector, LIST_DEPTH, -1.0, exact_max_rows=0).hits[:10]
        exact = vector_search(store.id, vector, 10, -1.0, exact_max_rows=10**12).hits
        recall.append(len({c for c, _ in approximate} & {c for c, _ in exact}) / 10)
    figures["hnsw_recall_at_10"] = float(np.mean(recall))
    return figures


def measure_in_memory(corpus, size, queries, query_vectors) -> dict:
    """The design users run today: rank_bm25 + numpy brute force + RRF in Python."""
    from rank_bm25 import BM25Okapi

    def rss_mb():
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024

    tokenize = re.compile(r"\w+").findall
    before = rss_mb()
    started = time.monotonic()
    corpus_text, matrix = [], np.empty((size, 384), dtype=np.float32)
    for i, (text, vector) in enumerate(chunks(corpus, size)):
        corpus_text.append(text)
        matrix[i] = vector
    bm25 = BM25Okapi([tokenize(t.lower()) for t in corpus_text])
    build_s = time.monotonic() - started
    memory = rss_mb() - before
    count = IN_MEMORY_QUERIES.get(size, 30)
    times = []
    for text, vector in list(zip(queries, query_vectors))[:count]:
        started = time.perf_counter()
        sparse = bm25.get_scores(tokenize(text.lower()))
        dense = matrix @ vector
        fused: dict[int, float] = {}
        for scores in (sparse, dense):
            top = np.argpartition(-scores, 50)[:50]
            for rank, idx in enumerate(top[np.argsort(-scores[top])], start=1):
                fused[int(idx)] = fused.get(int(idx), 0.0) + 1 / (60 + rank)
        sorted(fused, key=fused.get, reverse=True)[:10]
        times.append(time.perf_counter() - started)
    return {
        "mem_p50_ms": percentile(times, 50),
        "mem_p95_ms": percentile(times, 95),
        "mem_build_s": build_s,
        "mem_rss_mb": memory,
        "mem_queries": count,
    }


def one_size(corpus: str, size: int, in_memory: bool, load_only: bool = False) -> dict:
    setup_django(database(corpus, size))
    texts, vectors = queries()
    figures = {"corpus": corpus, "size": size, **load(corpus, size)}
    if load_only:
        return figures
    figures.update(sizes_mb())
    figures.update(measure_engine(texts, vectors))
    if in_memory:
        figures.update(measure_in_memory(corpus, size, texts, vectors))
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["load_average_1min"] = os.getloadavg()[0]  # the machine is shared: context
    return figures


def table(results: list[dict]) -> None:
    print("| corpus | chunks | hybrid p50 / p95 ms | lists one after the other p50 / p95 ms | BM25 p50 / p95 ms | vector p50 / p95 ms | in-memory p50 / p95 ms "
          "| HNSW ef_search, recall@10 | bytes/chunk: chunks table, HNSW, postings | load chunks/s (peak MB) "
          "| HNSW build s (peak MB) | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        memory = (
            f"{r['mem_p50_ms']:.0f} / {r['mem_p95_ms']:.0f} ({r['mem_rss_mb']:.0f} MB)" if "mem_p50_ms" in r else "-"
        )
        per_chunk = " / ".join(f"{r[key] * 2**20 / r['size']:,.0f}" for key in
                               ("chunks_table_mb", "hnsw_index_mb", "bm25_postings_mb"))
        load = (f"{r['load_chunks_per_s']:,.0f} ({r['loader_peak_rss_mb']:.0f} + {r['load_backend_peak_rss_mb']:.0f})"
                if "load_s" in r else "-")
        build = f"{r['hnsw_build_s']:.0f} ({r['hnsw_build_backend_peak_rss_mb']:.0f})" if "hnsw_build_s" in r else "-"
        print(
            f"| {r['corpus']} | {r['size']:,} | {r['hybrid_p50_ms']:.1f} / {r['hybrid_p95_ms']:.1f} "
            f"| {r['serial_p50_ms']:.1f} / {r['serial_p95_ms']:.1f} "
            f"| {r['bm25_p50_ms']:.1f} / {r['bm25_p95_ms']:.1f} | {r['vector_p50_ms']:.1f} / {r['vector_p95_ms']:.1f} "
            f"| {memory} | {r['hnsw_ef_search']}, {r['hnsw_recall_at_10']:.3f} ({r['vector_strategy']}) "
            f"| {per_chunk} | {load} | {build} | {r['load_average_1min']:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    parser.add_argument("--corpus", choices=CORPORA, default="synthetic")
    parser.add_argument("--no-in-memory", action="store_true", help="skip the rank_bm25 + numpy comparison")
    parser.add_argument("--load-only", action="store_true", help="load (and index) only; measure on a later run")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one size, JSON out
    args = parser.parse_args()
    if args.one:
        result = one_size(args.corpus, args.one, not args.no_in_memory, args.load_only)
        print("RESULT " + json.dumps(result), flush=True)
        return
    started = time.monotonic()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        t0 = time.monotonic()
        command = [sys.executable, __file__, "--one", str(size), "--corpus", args.corpus]
        command += ["--no-in-memory"] * args.no_in_memory + ["--load-only"] * args.load_only
        # a process per size: the peak memory figures are each size's own
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
            for line in process.stdout:
                if line.startswith("RESULT "):
                    result = json.loads(line[7:])
                    result["wall_s"] = time.monotonic() - t0
                    results.append(result)
                    print(json.dumps(result), flush=True)
                else:
                    print(line, end="", flush=True)
        if process.returncode:
            raise SystemExit(process.returncode)
    print(f"\ncommand: {command_line()}")
    if not args.load_only:
        table(results)
    print(f"total {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
