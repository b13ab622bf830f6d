"""HNSW recall@10 and latency against hnsw.ef_search, per corpus, size and build parameters.

Usage: ``python bench/hnsw_recall.py --corpus synthetic --size 1000000 --ef 40,100,200,400,800,1000``
(optionally ``--m 32 --ef-construction 200``, the engine's index; ``--workers 1``
parallel build workers; ``--insert 2000`` single-row inserts timed afterwards).

Only the vectors are loaded (database ``klea_bench_hnsw_<corpus>_<size>``, table
``bench_vectors``, kept so a rerun skips the load; one HNSW index at a time): the same
vectors, the same index parameters and the same query shape as the engine's ``hnsw``
strategy (domains/retrieval/vector.py: ``ORDER BY embedding <=> q LIMIT ef`` with
``hnsw.ef_search = ef``), without the BM25 load, so curves at 1M take minutes.
Exact top 10: numpy brute force over the same vectors. Recall@10 = |HNSW top 10 of the
ef-deep list & exact top 10| / 10, mean over the 100 SciFact test claims.

Build figures: wall time, the building backend's peak RSS (VmHWM, includes the shared
buffers it touched), the peak of the build's memory sampled every second (private memory
of the leader and its parallel workers plus the largest shared-memory share, so pgvector's
shared graph of a parallel build counts once) and whether the graph outgrew
maintenance_work_mem (pgvector's notice). ``--workers`` parallel maintenance workers join
the leader (pgvector >= 0.6 builds the graph in parallel).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CACHE, command_line, scifact_dir, setup_django, sha8  # noqa: E402
from bench.scale_corpora import CORPORA, chunks, queries  # noqa: E402

MAINTENANCE_WORK_MEM = "5GB"


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


def vectors(corpus: str, size: int) -> np.ndarray:
    """The corpus' vectors, row i for id i + 1 (float32), cached under var/bench-cache
    (1.5 GB at 1M) like the embeddings they derive from (same model and SciFact hash)."""
    from django.conf import settings

    path = CACHE / (f"vectors-{corpus}-{size}-{settings.KLEA_EMBEDDING_MODEL.replace('/', '_')}-"
                    f"{sha8(scifact_dir() / 'corpus.jsonl')}.npy")
    if path.exists():
        return np.load(path)
    matrix = np.empty((size, 384), dtype=np.float32)
    for i, (_, vector) in enumerate(chunks(corpus, size)):
        matrix[i] = vector
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix


def load(conn, corpus: str, size: int) -> dict:
    """The corpus' vectors (row i has id i + 1) in bench_vectors, loaded unless present."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    present = conn.execute("SELECT to_regclass('bench_vectors') IS NOT NULL").fetchone()[0]
    if present and conn.execute("SELECT count(*) FROM bench_vectors").fetchone()[0] == size:
        return {}
    matrix = vectors(corpus, size)
    conn.execute("DROP TABLE IF EXISTS bench_vectors")
    conn.execute("CREATE TABLE bench_vectors (id integer PRIMARY KEY, embedding vector(384))")
    conn.execute("ALTER TABLE bench_vectors ALTER COLUMN embedding SET STORAGE MAIN")
    started = time.monotonic()
    with conn.cursor() as cur, cur.copy("COPY bench_vectors (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["integer", "vector"])
        for i in range(size):
            copy.write_row([i + 1, matrix[i]])
    conn.execute("VACUUM ANALYZE bench_vectors")
    return {"vector_load_s": time.monotonic() - started}


def _vm_hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM")) / 1024
    except OSError:  # the server runs elsewhere
        return None


def _status_kb(pid: int) -> dict[str, int]:
    """VmHWM, RssAnon, RssShmem (kB) of a process on this machine; {} when gone or remote."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in fh)
                    if k in ("VmHWM", "RssAnon", "RssShmem")}
    except (OSError, ValueError):
        return {}


class _MemorySampler(threading.Thread):
    """Peak memory (MB) of a building backend and its parallel workers, sampled each second.

    peak_mb = max over samples of (sum of private RssAnon + largest RssShmem): the shared
    graph and shared buffers appear in every process' RssShmem, so they count once.
    """

    def __init__(self, leader_pid: int):
        super().__init__(daemon=True)
        self.leader_pid, self.peak_mb, self.workers_seen = leader_pid, 0.0, 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        with _connect() as conn:
            while not self._stop_event.wait(1.0):
                pids = [self.leader_pid] + [r[0] for r in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE leader_pid = %s AND pid <> %s",
                    [self.leader_pid, self.leader_pid],
                )]
                self.workers_seen = max(self.workers_seen, len(pids) - 1)
                stats = [s for s in map(_status_kb, pids) if s]
                if stats:
                    total = sum(s.get("RssAnon", 0) for s in stats) + max(s.get("RssShmem", 0) for s in stats)
                    self.peak_mb = max(self.peak_mb, total / 1024)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def build(m: int, ef_construction: int, workers: int = 0, work_mem: str = MAINTENANCE_WORK_MEM) -> dict:
    """The HNSW index with these parameters (any other dropped); figures when built now.

    workers: max_parallel_maintenance_workers for the build (0 = the leader alone);
    work_mem: maintenance_work_mem (the graph should fit, else the build slows down).
    """
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
            conn.execute(f"SET maintenance_work_mem = '{work_mem}'")
            conn.execute(f"SET max_parallel_maintenance_workers = {int(workers)}")
            sampler = _MemorySampler(pid)
            sampler.start()
            started = time.monotonic()
            try:
                conn.execute(
                    f"CREATE INDEX {name} ON bench_vectors USING hnsw (embedding vector_cosine_ops) "
                    f"WITH (m = {m}, ef_construction = {ef_construction})"
                )
            finally:
                sampler.stop()
            figures.update({
                "hnsw_build_s": time.monotonic() - started,
                "hnsw_build_backend_peak_rss_mb": _vm_hwm_mb(pid),
                "hnsw_build_peak_mb": sampler.peak_mb,
                "parallel_workers_seen": sampler.workers_seen,
                "maintenance_work_mem": work_mem,
                "build_notices": notices,
                "load_average_after_build": os.getloadavg()[0],
            })
        figures["hnsw_index_mb"] = conn.execute(f"SELECT pg_relation_size('{name}')").fetchone()[0] / 2**20
    return figures


# Shares of the table a store (with its filter) keeps: the engine's post-filtering keeps
# the store's rows of the ef-deep list (domains/retrieval/vector.py, strategy ``hnsw``).
SELECTIVITIES = (1.0, 0.5, 0.2, 0.1, 0.05, 0.02)


def store_masks(size: int) -> dict[float, np.ndarray]:
    """Per selectivity s, a boolean mask over row i (id i + 1): a pseudo-random store of s x size rows."""
    ids = np.arange(1, size + 1, dtype=np.uint64)
    u = ((ids * np.uint64(2654435761)) % np.uint64(2**32)).astype(np.float64) / 2**32  # Knuth hash
    return {s: u < s for s in SELECTIVITIES}


def curve(matrix: np.ndarray, query_vectors, efs: list[int]) -> list[dict]:
    """Per ef: recall@10 of the whole table and of each SELECTIVITIES store, p50/p95 ms.

    A store's recall: its rows among the ef-deep list, first 10, against its exact top 10;
    a list holding fewer than 10 of them counts as exact (the engine then scans exactly)
    and its share is reported as ``short``.
    """
    masks = store_masks(len(matrix))
    exact: list[dict[float, set[int]]] = []
    for q in query_vectors:
        scores = matrix @ q
        truth = {}
        for s, mask in masks.items():
            rows = np.flatnonzero(mask)
            top = rows[np.argpartition(-scores[rows], 10)[:10]]
            truth[s] = {int(i) + 1 for i in top}
        exact.append(truth)
    rows = []
    with _connect(autocommit=False) as conn:
        for ef in efs:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            for q in query_vectors[:5]:  # warm the index pages
                conn.execute("SELECT id FROM bench_vectors ORDER BY embedding <=> %s LIMIT %s", [q, ef]).fetchall()
            recall = {s: [] for s in SELECTIVITIES}
            short = {s: 0 for s in SELECTIVITIES}
            times, lowest = [], 1.0
            for q, truth in zip(query_vectors, exact):
                started = time.perf_counter()
                ids = [r[0] for r in conn.execute(
                    "SELECT id FROM bench_vectors ORDER BY embedding <=> %s LIMIT %s", [q, ef]
                ).fetchall()]
                times.append(time.perf_counter() - started)
                for s, mask in masks.items():
                    kept = [i for i in ids if mask[i - 1]][:10]
                    if len(kept) < 10:
                        short[s] += 1
                        recall[s].append(1.0)
                    else:
                        recall[s].append(len(set(kept) & truth[s]) / 10)
                lowest = min(lowest, recall[1.0][-1])
            rows.append({
                "ef_search": ef,
                "recall_at_10": float(np.mean(recall[1.0])),
                "min_recall_at_10": lowest,
                "p50_ms": float(np.percentile(times, 50) * 1000),
                "p95_ms": float(np.percentile(times, 95) * 1000),
                "by_selectivity": {str(s): {"recall_at_10": round(float(np.mean(recall[s])), 4),
                                            "short": short[s] / len(query_vectors)} for s in SELECTIVITIES},
                "load_average": os.getloadavg()[0],
            })
            print(json.dumps(rows[-1]), flush=True)
        conn.rollback()
    return rows


def insert_rate(corpus: str, size: int, n: int) -> dict:
    """Rows/s of ``n`` single-row INSERTs into the indexed table (as ingest pays the graph),
    rolled back; the vectors are new rows of the corpus (another seed)."""
    vectors = [v for _, v in chunks(corpus, n, seed=2)]
    with _connect(autocommit=False) as conn:
        started = time.monotonic()
        for i, v in enumerate(vectors):
            conn.execute("INSERT INTO bench_vectors (id, embedding) VALUES (%s, %s)", [size + 1 + i, v])
        elapsed = time.monotonic() - started
        conn.rollback()
    return {"inserted": n, "insert_rows_per_s": n / elapsed, "insert_load_average": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=CORPORA, default="synthetic")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--m", type=int, help="default: the engine's (domains.models.HNSW_M)")
    parser.add_argument("--ef-construction", type=int, help="default: domains.models.HNSW_EF_CONSTRUCTION")
    parser.add_argument("--workers", type=int, default=1, help="max_parallel_maintenance_workers for the build")
    parser.add_argument("--maintenance-work-mem", default=MAINTENANCE_WORK_MEM)
    parser.add_argument("--insert", type=int, default=0, help="then time this many single-row inserts (rolled back)")
    parser.add_argument("--ef", default="40,100,200,400,800,1000", help="comma-separated hnsw.ef_search values")
    args = parser.parse_args()
    setup_django(f"klea_bench_hnsw_{args.corpus}_{args.size}")
    from domains.models import HNSW_EF_CONSTRUCTION, HNSW_M

    args.m = args.m or HNSW_M
    args.ef_construction = args.ef_construction or HNSW_EF_CONSTRUCTION
    _, query_vectors = queries()
    with _connect() as conn:
        figures = load(conn, args.corpus, args.size)
    print(json.dumps({**figures, "loaded_at_load_average": os.getloadavg()[0]}), flush=True)
    figures.update(build(args.m, args.ef_construction, args.workers, args.maintenance_work_mem))
    figures.update({"corpus": args.corpus, "size": args.size, "m": args.m, "ef_construction": args.ef_construction})
    print(json.dumps(figures), flush=True)
    rows = curve(vectors(args.corpus, args.size), query_vectors, [int(e) for e in args.ef.split(",")])
    if args.insert:
        print(json.dumps(insert_rate(args.corpus, args.size, args.insert)), flush=True)
    print(f"\ncommand: {command_line()}   load average (1 min): {os.getloadavg()[0]:.1f}")
    shares = " / ".join(f"{s:g}" for s in SELECTIVITIES[1:])
    print(f"| corpus | chunks | m / ef_construction | ef_search | recall@10 (min) | store of {shares}: recall@10 "
          "(short lists %) | p50 / p95 ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        stores = " / ".join(
            f"{v['recall_at_10']:.3f}" + (f" ({v['short'] * 100:.0f})" if v["short"] else "")
            for s, v in r["by_selectivity"].items() if s != "1.0"
        )
        print(f"| {args.corpus} | {args.size:,} | {args.m} / {args.ef_construction} | {r['ef_search']} "
              f"| {r['recall_at_10']:.3f} ({r['min_recall_at_10']:.1f}) | {stores} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} |")


if __name__ == "__main__":
    main()
