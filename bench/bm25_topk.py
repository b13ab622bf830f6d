"""BM25 alone: the pruned top-k (klea_bm25_topk) against the exhaustive query.

Usage: ``python bench/bm25_topk.py --database klea_bench_lat_100000`` on a database
loaded by bench/latency.py (store ``bench-latency``; migrated on start, which rebuilds
old-layout postings: see the printed migration time).

Queries: the first 100 SciFact test claims (as bench/latency.py), tokenised by
``query_lexemes``. Per k (10, and 50 = what ``retrieve()`` asks of each list): p50/p95 ms
of the exhaustive and the pruned query (each query run once to warm, then timed in
alternation), and the share of queries whose pruned top k has the exhaustive ids in the
same order with scores within 1e-9. Index size: bytes per chunk of postings (heap,
index), terms and stats (``pg_total_relation_size``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import command_line, load_qrels, load_scifact, setup_django  # noqa: E402

STORE = "bench-latency"
QUERIES = 100


def index_bytes() -> dict:
    """Bytes of the BM25 tables (heap + indexes) and per chunk."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('domains_bm25posting'), pg_indexes_size('domains_bm25posting'), "
            "pg_total_relation_size('domains_bm25posting'), pg_total_relation_size('domains_bm25term'), "
            "pg_total_relation_size('domains_bm25stats'), (SELECT sum(chunk_count) FROM domains_bm25stats), "
            "(SELECT count(*) FROM domains_bm25posting)"
        )
        heap, index, postings, terms, stats, chunks, count = cursor.fetchone()
    chunks = int(chunks or 0) or 1
    return {
        "chunks": chunks,
        "postings": count,
        "postings_heap_mb": heap / 2**20,
        "postings_index_mb": index / 2**20,
        "bytes_per_posting": postings / max(count, 1),
        "postings_bytes_per_chunk": postings / chunks,
        "terms_bytes_per_chunk": terms / chunks,
        "stats_bytes_per_chunk": stats / chunks,
        "total_bytes_per_chunk": (postings + terms + stats) / chunks,
    }


def measure(queries: list[str], k: int) -> dict:
    from domains.models import Store
    from domains.retrieval import bm25_search, query_lexemes

    store = Store.objects.get(name=STORE)
    lexemes = [query_lexemes(q) for q in queries]
    for terms in lexemes:  # warm both
        bm25_search(store.id, terms, k, exhaustive=True)
        bm25_search(store.id, terms, k, exhaustive=False)
    exhaustive_s, pruned_s, same = [], [], 0
    for terms in lexemes:
        started = time.perf_counter()
        exact = bm25_search(store.id, terms, k, exhaustive=True)
        exhaustive_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        pruned = bm25_search(store.id, terms, k, exhaustive=False)
        pruned_s.append(time.perf_counter() - started)
        same += [c for c, _ in exact] == [c for c, _ in pruned] and all(
            abs(a - b) <= 1e-9 * abs(b) for (_, a), (_, b) in zip(pruned, exact)
        )

    def ms(values, q):
        return float(np.percentile(np.asarray(values) * 1000, q))

    return {
        "k": k,
        "queries": len(lexemes),
        "terms_p50": float(np.median([len(t) for t in lexemes])),
        "exhaustive_p50_ms": ms(exhaustive_s, 50),
        "exhaustive_p95_ms": ms(exhaustive_s, 95),
        "pruned_p50_ms": ms(pruned_s, 50),
        "pruned_p95_ms": ms(pruned_s, 95),
        "identical_share": same / len(lexemes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="a database loaded by bench/latency.py")
    parser.add_argument("--queries", type=int, default=QUERIES, help="first N SciFact test claims")
    parser.add_argument("--k", default="10,50", help="comma-separated k")
    parser.add_argument("--sizes-only", action="store_true", help="index sizes only (no queries)")
    args = parser.parse_args()
    started = time.monotonic()
    setup_django(args.database)  # migrates: 0007 rebuilds old-layout postings
    migrate_s = time.monotonic() - started
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE domains_bm25posting")
    result = {"database": args.database, "setup_and_migrate_s": migrate_s, **index_bytes()}
    if not args.sizes_only:
        _, _, all_queries = load_scifact()
        queries = [all_queries[q] for q in sorted(load_qrels("test"))[: args.queries]]
        result["runs"] = [measure(queries, int(k)) for k in args.k.split(",")]
    result["load_average_1min"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))
    print(f"\ncommand: {command_line()}")
    for run in result.get("runs", []):
        print(
            f"| {result['chunks']:,} | {run['k']} | {run['exhaustive_p50_ms']:.1f} / {run['exhaustive_p95_ms']:.1f} "
            f"| {run['pruned_p50_ms']:.1f} / {run['pruned_p95_ms']:.1f} | {run['identical_share']:.0%} |"
        )
    print(
        f"postings {result['postings']:,} ({result['bytes_per_posting']:.0f} B each; heap "
        f"{result['postings_heap_mb']:.0f} MB, index {result['postings_index_mb']:.0f} MB); bytes per chunk: "
        f"postings {result['postings_bytes_per_chunk']:.0f}, terms {result['terms_bytes_per_chunk']:.0f}, "
        f"stats {result['stats_bytes_per_chunk']:.2f}, total {result['total_bytes_per_chunk']:.0f}"
    )


if __name__ == "__main__":
    main()
