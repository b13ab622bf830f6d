"""Hybrid retrieval latency at 10k / 100k / 1M chunks, against the in-memory design.

Usage: ``python bench/latency.py`` (10k and 100k), ``python bench/latency.py --sizes 1000000``.

Each size lives in its own database ``klea_bench_lat_<size>`` (kept, so a rerun skips
the load). Synthetic chunks: 3-6 consecutive sentences of a random SciFact abstract
plus one sentence of another; vector = the abstract's MiniLM embedding + Gaussian noise
(cosine ~0.85 to it), so neighbours cluster like real chunks. Queries: the SciFact test
claims and their real embeddings.

Measured per size: load time (COPY, BM25 triggers included), HNSW build time, table and
index sizes, recall@10 of the HNSW search against exact search, the query-embedding
time alone, and hybrid ``retrieve()`` latency (k = 10, query vector passed in) next to
``rank_bm25.BM25Okapi`` + numpy brute-force cosine + RRF in Python on the same data.
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

from bench.common import cached_embeddings, command_line, load_qrels, load_scifact, scifact_dir, setup_django  # noqa: E402

STORE = "bench-latency"
QUERIES = 100
IN_MEMORY_QUERIES = {10_000: 100, 100_000: 30}
NOISE = 0.6  # norm of the noise added to a unit vector: cosine ~0.85 to the abstract
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def synthetic(size: int, texts: list[str], vectors: np.ndarray, seed: int = 1):
    """Yield (text, vector) pairs; deterministic for a seed."""
    rng = np.random.default_rng(seed)
    sentences = [_SENTENCE.split(t) for t in texts]
    for _ in range(size):
        j, other = rng.integers(len(texts), size=2)
        own = sentences[j]
        n = int(rng.integers(3, 7))
        start = int(rng.integers(max(1, len(own) - n + 1)))
        extra = sentences[other][int(rng.integers(len(sentences[other])))]
        text = " ".join(own[start : start + n] + [extra])
        noise = rng.normal(size=vectors.shape[1]).astype(np.float32)
        vector = vectors[j] + NOISE * noise / np.linalg.norm(noise)
        yield text, vector / np.linalg.norm(vector)


def percentile(values, q):
    return float(np.percentile(np.asarray(values) * 1000, q))


def load(size, texts, vectors) -> dict:
    """Create the store with ``size`` synthetic chunks unless present; build HNSW."""
    import psycopg
    from django.db import connection
    from pgvector.psycopg import register_vector

    from domains.models import Chunk, Document, Domain, Store

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
        rows = synthetic(size, texts, vectors)
        batch = 20_000
        for start in range(0, size, batch):
            with conn.cursor() as cur, cur.copy(
                "COPY domains_chunk (store_id, document_id, ordinal, text, headings, metadata, token_count, embedding)"
                " FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["bigint", "bigint", "integer", "text", "text[]", "jsonb", "integer", "vector"])
                for i in range(start, min(size, start + batch)):
                    text, vector = next(rows)
                    copy.write_row([store.id, docs[i // per_doc].id, i % per_doc, text, [], "{}", 0, vector])
            conn.commit()
            print(f"  loaded {min(size, start + batch)}/{size} ({time.monotonic() - started:.0f} s)", flush=True)
    figures["load_s"] = time.monotonic() - started
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE domains_chunk")
        cursor.execute("VACUUM ANALYZE domains_bm25posting")
        cursor.execute("VACUUM ANALYZE domains_bm25term")
        cursor.execute("SET maintenance_work_mem = '3GB'")
        started = time.monotonic()
        cursor.execute(
            "CREATE INDEX chunk_embedding_hnsw ON domains_chunk USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        figures["hnsw_build_s"] = time.monotonic() - started
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


def measure_engine(queries, query_vectors) -> dict:
    from domains import embeddings
    from domains.models import Domain, Store
    from domains.retrieval import retrieve, vector_search
    from domains.retrieval.engine import LIST_DEPTH

    domain = Domain.objects.get(name=STORE)
    store = Store.objects.get(name=STORE)
    embeddings.embed_query("warm up")
    embed_times = []
    for text in queries:
        started = time.perf_counter()
        embeddings.embed_query(text)
        embed_times.append(time.perf_counter() - started)
    for text, vector in list(zip(queries, query_vectors))[:10]:
        retrieve(text, [domain], k=10, query_vectors=[vector])
    times = []
    for text, vector in zip(queries, query_vectors):
        started = time.perf_counter()
        retrieve(text, [domain], k=10, query_vectors=[vector])
        times.append(time.perf_counter() - started)
    recall = []
    strategy = vector_search(store.id, query_vectors[0], 10, -1.0).strategy  # what retrieve() used
    for vector in query_vectors:
        # HNSW forced, as deep as retrieve() asks (LIST_DEPTH 50, so ef_search 100)
        approximate = vector_search(store.id, vector, LIST_DEPTH, -1.0, exact_max_rows=0).hits[:10]
        exact = vector_search(store.id, vector, 10, -1.0, exact_max_rows=10**12).hits
        recall.append(len({c for c, _ in approximate} & {c for c, _ in exact}) / 10)
    return {
        "embed_p50_ms": percentile(embed_times, 50),
        "hybrid_p50_ms": percentile(times, 50),
        "hybrid_p95_ms": percentile(times, 95),
        "vector_strategy": strategy,
        "hnsw_recall_at_10": float(np.mean(recall)),
    }


def measure_in_memory(size, texts, vectors, queries, query_vectors) -> dict:
    """The design users run today: rank_bm25 + numpy brute force + RRF in Python."""
    from rank_bm25 import BM25Okapi

    def rss_mb():
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024

    tokenize = re.compile(r"\w+").findall
    before = rss_mb()
    started = time.monotonic()
    corpus_text, matrix = [], np.empty((size, vectors.shape[1]), dtype=np.float32)
    for i, (text, vector) in enumerate(synthetic(size, texts, vectors)):
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


def one_size(size: int, in_memory: bool, load_only: bool = False) -> dict:
    setup_django(f"klea_bench_lat_{size}")
    ids, texts, all_queries = load_scifact()
    vectors = cached_embeddings("scifact-corpus", texts, scifact_dir() / "corpus.jsonl")
    qids = sorted(all_queries)
    matrix = cached_embeddings("scifact-queries", [all_queries[q] for q in qids], scifact_dir() / "queries.jsonl")
    by_id = dict(zip(qids, matrix))
    test = sorted(load_qrels("test"))[:QUERIES]
    queries = [all_queries[q] for q in test]
    query_vectors = [by_id[q] for q in test]
    figures = {"size": size, **load(size, texts, vectors)}
    if load_only:
        return figures
    figures.update(sizes_mb())
    figures.update(measure_engine(queries, query_vectors))
    if in_memory:
        figures.update(measure_in_memory(size, texts, vectors, queries, query_vectors))
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["load_average_1min"] = os.getloadavg()[0]  # the machine is shared: context
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    parser.add_argument("--no-in-memory", action="store_true", help="skip the rank_bm25 + numpy comparison")
    parser.add_argument("--load-only", action="store_true", help="load (and index) only; measure on a later run")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one size, JSON out
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(one_size(args.one, not args.no_in_memory, args.load_only)), flush=True)
        return
    if args.load_only:
        for size in (int(s) for s in args.sizes.split(",")):
            print(json.dumps(one_size(size, False, True)), flush=True)
        return
    started = time.monotonic()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        t0 = time.monotonic()
        command = [sys.executable, __file__, "--one", str(size)] + (["--no-in-memory"] if args.no_in_memory else [])
        output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
        for line in output.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[7:])
                result["wall_s"] = time.monotonic() - t0
                results.append(result)
                print(json.dumps(result), flush=True)
            else:
                print(line, flush=True)
    print(f"\ncommand: {command_line()}")
    print("| chunks | hybrid p50 / p95 ms | query embedding p50 ms | in-memory p50 / p95 ms | speed-up (p50) "
          "| HNSW build s | HNSW recall@10 | HNSW MB | BM25 postings MB | chunks table MB | load s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        memory = (
            f"{r['mem_p50_ms']:.0f} / {r['mem_p95_ms']:.0f} ({r['mem_rss_mb']:.0f} MB)" if "mem_p50_ms" in r else "-"
        )
        speedup = f"{r['mem_p50_ms'] / r['hybrid_p50_ms']:.0f}x" if "mem_p50_ms" in r else "-"
        print(
            f"| {r['size']:,} | {r['hybrid_p50_ms']:.1f} / {r['hybrid_p95_ms']:.1f} | {r['embed_p50_ms']:.1f} | {memory} "
            f"| {speedup} | {r.get('hnsw_build_s', float('nan')):.0f} | {r['hnsw_recall_at_10']:.3f} "
            f"({r['vector_strategy']}) | {r['hnsw_index_mb']:.0f} | {r['bm25_postings_mb']:.0f} "
            f"| {r['chunks_table_mb']:.0f} | {r.get('load_s', float('nan')):.0f} |"
        )
    print(f"total {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
