"""HNSW recall@10 and latency against hnsw.ef_search, per corpus, size and build parameters.

Usage: ``python bench/hnsw_recall.py --corpus synthetic --size 1000000 --ef 40,100,200,400,800,1000``
(optionally ``--m 16 --ef-construction 64``, the engine's defaults).

Only the vectors are loaded (database ``klea_bench_hnsw_<corpus>_<size>``, table
``bench_vectors``, kept so a rerun skips the load; one HNSW index at a time): the same
vectors, the same index parameters and the same query shape as the engine's ``hnsw``
strategy (domains/retrieval/vector.py: ``ORDER BY embedding <=> q LIMIT ef`` with
``hnsw.ef_search = ef``), without the BM25 load, so curves at 1M take minutes.
Exact top 10: numpy brute force over the same vectors. Recall@10 = |HNSW top 10 of the
ef-deep list & exact top 10| / 10, mean over the 100 SciFact test claims.

Build figures: wall time, the building backend's peak RSS (VmHWM, includes the shared
buffers it touched) and whether the graph outgrew maintenance_work_mem (pgvector's notice).
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

from bench.common import command_line, setup_django  # noqa: E402
from bench.scale_corpora import CORPORA, chunks, queries  # noqa: E402

MAINTENANCE_WORK_MEM = "4GB"


def _connect(autocommit: bool = True):
    import psycopg
    from django.db import connection
    from pgvector.psycopg import register_vector

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    conn = psycopg.connect(**params, autocommit=autocommit)
    register_vector(conn)
    return conn


def load(conn, corpus: str, size: int) -> tuple[np.ndarray, dict]:
    """The corpus' vectors (row i has id i + 1), loaded into bench_vectors unless present."""
    matrix = np.empty((size, 384), dtype=np.float32)
    for i, (_, vector) in enumerate(chunks(corpus, size)):
        matrix[i] = vector
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    present = conn.execute("SELECT to_regclass('bench_vectors') IS NOT NULL").fetchone()[0]
    if present and conn.execute("SELECT count(*) FROM bench_vectors").fetchone()[0] == size:
        return matrix, {}
    conn.execute("DROP TABLE IF EXISTS bench_vectors")
    conn.execute("CREATE TABLE bench_vectors (id integer PRIMARY KEY, embedding vector(384))")
    conn.execute("ALTER TABLE bench_vectors ALTER COLUMN embedding SET STORAGE MAIN")
    started = time.monotonic()
    with conn.cursor() as cur, cur.copy("COPY bench_vectors (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["integer", "vector"])
        for i in range(size):
            copy.write_row([i + 1, matrix[i]])
    conn.execute("VACUUM ANALYZE bench_vectors")
    return matrix, {"vector_load_s": time.monotonic() - started}


def _vm_hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM")) / 1024
    except OSError:  # the server runs elsewhere
        return None


def build(m: int, ef_construction: int) -> dict:
    """The HNSW index with these parameters (any other dropped); figures when built now."""
    name = f"bench_vectors_hnsw_m{m}_efc{ef_construction}"
    with _connect() as conn:
        existing = [r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'bench_vectors' AND indexname LIKE 'bench_vectors_hnsw%'"
        )]
        for other in existing:
            if other != name:
                conn.execute(f"DROP INDEX {other}")
        figures = {"index": name}
        if name not in existing:
            notices: list[str] = []
            conn.add_notice_handler(lambda diag: notices.append(diag.message_primary))
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            conn.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
            started = time.monotonic()
            conn.execute(
                f"CREATE INDEX {name} ON bench_vectors USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {m}, ef_construction = {ef_construction})"
            )
            figures.update({
                "hnsw_build_s": time.monotonic() - started,
                "hnsw_build_backend_peak_rss_mb": _vm_hwm_mb(pid),
                "maintenance_work_mem": MAINTENANCE_WORK_MEM,
                "build_notices": notices,
            })
        figures["hnsw_index_mb"] = conn.execute(f"SELECT pg_relation_size('{name}')").fetchone()[0] / 2**20
    return figures


def curve(matrix: np.ndarray, query_vectors, efs: list[int]) -> list[dict]:
    exact = []
    for q in query_vectors:
        scores = matrix @ q
        top = np.argpartition(-scores, 10)[:10]
        exact.append({int(i) + 1 for i in top})
    rows = []
    with _connect(autocommit=False) as conn:
        for ef in efs:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            for q in query_vectors[:5]:  # warm the index pages
                conn.execute("SELECT id FROM bench_vectors ORDER BY embedding <=> %s LIMIT %s", [q, ef]).fetchall()
            recall, times = [], []
            for q, truth in zip(query_vectors, exact):
                started = time.perf_counter()
                ids = [r[0] for r in conn.execute(
                    "SELECT id FROM bench_vectors ORDER BY embedding <=> %s LIMIT %s", [q, ef]
                ).fetchall()]
                times.append(time.perf_counter() - started)
                recall.append(len(set(ids[:10]) & truth) / 10)
            rows.append({
                "ef_search": ef,
                "recall_at_10": float(np.mean(recall)),
                "min_recall_at_10": float(np.min(recall)),
                "p50_ms": float(np.percentile(times, 50) * 1000),
                "p95_ms": float(np.percentile(times, 95) * 1000),
            })
            print(json.dumps(rows[-1]), flush=True)
        conn.rollback()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=CORPORA, default="synthetic")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--ef", default="40,100,200,400,800,1000", help="comma-separated hnsw.ef_search values")
    args = parser.parse_args()
    setup_django(f"klea_bench_hnsw_{args.corpus}_{args.size}")
    _, query_vectors = queries()
    with _connect() as conn:
        matrix, figures = load(conn, args.corpus, args.size)
    figures.update(build(args.m, args.ef_construction))
    figures.update({"corpus": args.corpus, "size": args.size, "m": args.m, "ef_construction": args.ef_construction})
    print(json.dumps(figures), flush=True)
    rows = curve(matrix, query_vectors, [int(e) for e in args.ef.split(",")])
    print(f"\ncommand: {command_line()}   load average (1 min): {os.getloadavg()[0]:.1f}")
    print("| corpus | chunks | m / ef_construction | ef_search | recall@10 (min) | p50 / p95 ms |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {args.corpus} | {args.size:,} | {args.m} / {args.ef_construction} | {r['ef_search']} "
              f"| {r['recall_at_10']:.3f} ({r['min_recall_at_10']:.1f}) | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} |")


if __name__ == "__main__":
    main()
