"""Dense retrieval: cosine distance on the HNSW index, exact when that is safer.

relevance = 1 - cosine distance. HNSW (pgvector) filters *after* its candidate list,
so a store restriction or a metadata filter could leave fewer than k rows. Strategy:

- ``exact``: the store holds at most KLEA_VECTOR_EXACT_MAX_ROWS chunks, or its share of
  the table is so small that HNSW would need more than HNSW_EF_MAX candidates.
- ``hnsw``: over-fetch ``ef`` nearest chunks of the whole table (hnsw.ef_search = ef,
  :func:`hnsw_ef_search`: k x OVERFETCH / estimated selectivity, at least the floor
  measured for the table's size), then keep the store's rows that pass the filter.
- ``iterative``: pgvector >= 0.8, ``hnsw.iterative_scan = relaxed_order`` scans on until
  k filtered rows are found (the filter inside the index scan).
- ``+exact``: the HNSW attempt found fewer than k rows: an exact scan of the filtered
  rows of the store follows, so k rows come back whenever k rows match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from domains.embeddings import EmbeddingError, dimension

from .filters import CompiledFilter

# hnsw.ef_search accepts 1..1000 (pgvector).
HNSW_EF_MAX = 1000
HNSW_EF_MIN = 40  # pgvector's default
# Candidates fetched per wanted row, beyond the selectivity: 2 left a store of a tenth
# of a 100k table at recall@10 0.943 (ef 200); 4 keeps every measured share >= 0.96.
OVERFETCH = 4
# A filter's share of the store's rows is not estimated: assumed to keep half of them
# (a filter that keeps fewer leaves the HNSW attempt short and the exact scan follows).
FILTER_SELECTIVITY = 0.5
# The smallest ef_search whose top 10 reaches recall@10 >= 0.95 against exact search
# on both benchmark corpora (near-duplicates and real text), by the number of rows in the
# index (all stores: one index covers the table), with the index's m = 32,
# ef_construction = 200 (domains.models; docs/benchmarks.md, "HNSW recall against
# ef_search"): (at most this many rows, ef_search). A store of a share s of the table
# fetches k x OVERFETCH / s, at least this floor. At 1M rows ef 400 left stores of a fifth
# and a tenth of the near-duplicates at 0.945; 600 keeps every measured share >= 0.96 on
# both corpora, a third faster than HNSW_EF_MAX on real text. Larger tables (not
# measured) get HNSW_EF_MAX.
HNSW_EF_FLOOR = ((10_000, 100), (100_000, 200), (1_000_000, 600))
ITERATIVE_SCAN_VERSION = (0, 8)


@dataclass
class VectorHits:
    """``hits``: [(chunk_id, relevance)] best first; ``strategy``: how they were found."""

    hits: list[tuple[int, float]] = field(default_factory=list)
    strategy: str = "exact"


_versions: dict[str, tuple[int, ...]] = {}


def pgvector_version() -> tuple[int, ...]:
    """The server's pgvector version, e.g. (0, 6, 2); cached per database name."""
    key = str(connection.settings_dict.get("NAME"))
    if key not in _versions:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        _versions[key] = tuple(int(p) for p in row[0].split(".") if p.isdigit()) if row else (0,)
    return _versions[key]


def vector_literal(query_vector: np.ndarray) -> str:
    """pgvector text form of a query embedding.

    :raises EmbeddingError: wrong shape, a non-finite value, or an all-zero vector
        (its cosine distance is NaN).
    """
    vector = np.asarray(query_vector, dtype=np.float32)
    if vector.shape != (dimension(),):
        raise EmbeddingError(f"query embedding has shape {vector.shape}; expected ({dimension()},)")
    if not np.isfinite(vector).all():
        raise EmbeddingError("query embedding contains NaN or infinite values")
    if not vector.any():
        raise EmbeddingError("query embedding is all zeros (cosine distance would be NaN)")
    return "[" + ",".join(f"{x:.8g}" for x in vector.tolist()) + "]"


def hnsw_ef_floor(total_rows: int) -> int:
    """The ef_search a table of ``total_rows`` chunks needs for recall@10 >= 0.95."""
    return next((ef for rows, ef in HNSW_EF_FLOOR if total_rows <= rows), HNSW_EF_MAX)


def hnsw_ef_search(k: int, store_rows: int, total_rows: int, filtered: bool) -> int | None:
    """hnsw.ef_search (= candidates fetched) for ``k`` rows of a store on the HNSW index.

    Estimated selectivity s = store_rows / total_rows, halved with a filter
    (FILTER_SELECTIVITY); ef = max(ceil(k x OVERFETCH / s), hnsw_ef_floor(total_rows)),
    at most HNSW_EF_MAX.

    :returns: ef in [HNSW_EF_MIN, HNSW_EF_MAX], or None when k x OVERFETCH / s exceeds
        HNSW_EF_MAX (too selective for post-filtering: search exactly, or iteratively).
    """
    selectivity = store_rows / total_rows * (FILTER_SELECTIVITY if filtered else 1.0)
    # round() first: float noise in the ratio must not add a candidate
    wanted = math.ceil(round(k * OVERFETCH / selectivity, 6))
    if wanted > HNSW_EF_MAX:
        return None
    return min(HNSW_EF_MAX, max(wanted, hnsw_ef_floor(total_rows)))


def _row_counts(store_id: int) -> tuple[int, int]:
    """(chunks in the store, chunks in all stores), from the BM25 statistics table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(chunk_count) FILTER (WHERE store_id = %s), 0), coalesce(sum(chunk_count), 0) "
            "FROM domains_bm25stats",
            [store_id],
        )
        store_rows, total_rows = cursor.fetchone()
    return int(store_rows), int(total_rows)


# The OFFSET 0 fence keeps the planner off the HNSW index (whose post-filtering could
# return fewer than k rows) and computes each distance once.
_EXACT = """
SELECT id, 1 - distance AS relevance FROM (
    SELECT c.id, c.embedding <=> %(q)s::vector AS distance
    FROM domains_chunk c
    WHERE c.store_id = %(store)s AND c.embedding IS NOT NULL AND {where}
    OFFSET 0
) x
ORDER BY distance, id
LIMIT %(k)s
"""
# Over-fetch from the index over the whole table (no WHERE, so the planner uses it),
# then restrict to the store and the filter. The candidates carry the columns a filter
# reads (filters.py: c.year, c.metadata) from the heap tuple the index scan fetched
# anyway: joining the table again cost a primary-key probe per candidate (1,000 at 1M).
_HNSW = """
SELECT c.id, 1 - c.distance AS relevance
FROM (
    SELECT id, store_id, year, metadata, embedding <=> %(q)s::vector AS distance FROM domains_chunk
    ORDER BY embedding <=> %(q)s::vector LIMIT %(ef)s
) c
WHERE c.store_id = %(store)s AND {where}
ORDER BY c.distance, c.id
LIMIT %(k)s
"""
_ITERATIVE = """
WITH h AS MATERIALIZED (
    SELECT c.id, c.embedding <=> %(q)s::vector AS distance FROM domains_chunk c
    WHERE c.store_id = %(store)s AND {where}
    ORDER BY c.embedding <=> %(q)s::vector LIMIT %(k)s
)
SELECT id, 1 - distance AS relevance FROM h ORDER BY distance, id
"""


def _run(sql: str, values: dict, local_settings: dict[str, str], restore: bool = True) -> list[tuple[int, float]]:
    if not local_settings:
        with connection.cursor() as cursor:
            cursor.execute(sql, values)
            return [(cid, float(rel)) for cid, rel in cursor.fetchall()]
    # Transaction-local settings (a transaction of our own in autocommit mode), put back
    # afterwards when a caller's transaction goes on (a savepoint release keeps them) and
    # ``restore`` asks for it; no savepoint of our own (a failed statement fails the
    # caller's transaction either way; retrieve() isolates its lists itself). Reading the
    # old values and setting the new ones is one statement (a row's items are evaluated
    # in order): on a loaded machine round trips are much of a search's time.
    restore = restore and connection.in_atomic_block
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.name, current_setting(s.name, true), set_config(s.name, s.value, true) "
            "FROM unnest(%s::text[], %s::text[]) AS s(name, value)",
            [list(local_settings), list(local_settings.values())],
        )
        previous = {name: value for name, value, _ in cursor.fetchall() if value is not None}
        cursor.execute(sql, values)
        rows = [(cid, float(rel)) for cid, rel in cursor.fetchall()]
        if restore and previous:
            cursor.execute(
                "SELECT set_config(s.name, s.value, true) FROM unnest(%s::text[], %s::text[]) AS s(name, value)",
                [list(previous), list(previous.values())],
            )
    return rows


def vector_search(
    store_id: int,
    query_vector: np.ndarray,
    k: int,
    min_relevance: float,
    *,
    where: CompiledFilter | None = None,
    exact_max_rows: int | None = None,
    restore_settings: bool = True,
) -> VectorHits:
    """The ``k`` chunks of a store nearest to ``query_vector`` (cosine).

    :param query_vector: shape (384,), L2-normalised (any non-zero vector works).
    :param min_relevance: hits with 1 - distance below this are dropped (after the cut
        to k, so fewer than k may remain).
    :param where: filter over the chunk alias ``c``, applied before ranking.
    :param exact_max_rows: override of KLEA_VECTOR_EXACT_MAX_ROWS.
    :param restore_settings: put ``hnsw.ef_search`` (set for the HNSW statement, local to
        the transaction) back afterwards inside a caller's transaction; False when the
        caller rolls that transaction back anyway (retrieve()), one statement fewer.
    :returns: VectorHits (hits best first, ties by chunk id; the strategy used).
    :raises EmbeddingError: when the query vector has the wrong dimension, a non-finite
        value or is all zeros.
    """
    literal = vector_literal(query_vector)
    if k <= 0:
        return VectorHits()
    where = where or CompiledFilter()
    values = {"q": literal, "store": store_id, "k": k, **where.params}
    limit = settings.KLEA_VECTOR_EXACT_MAX_ROWS if exact_max_rows is None else exact_max_rows
    store_rows, total_rows = _row_counts(store_id)
    if store_rows == 0:
        return VectorHits()
    ef = hnsw_ef_search(k, store_rows, total_rows, filtered=not where.empty)
    rows: list[tuple[int, float]] = []
    strategy = "exact"
    if store_rows > limit and (ef is not None or pgvector_version() >= ITERATIVE_SCAN_VERSION):
        if pgvector_version() >= ITERATIVE_SCAN_VERSION:
            strategy = "iterative"
            local = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": str(ef or HNSW_EF_MAX)}
            rows = _run(_ITERATIVE.format(where=where.sql), values, local, restore_settings)
        else:
            strategy = "hnsw"
            rows = _run(_HNSW.format(where=where.sql), {**values, "ef": ef}, {"hnsw.ef_search": str(ef)},
                        restore_settings)
        if len(rows) < k:
            strategy += "+exact"
            rows = []
    if not rows:
        rows = _run(_EXACT.format(where=where.sql), values, {})
    return VectorHits([(cid, rel) for cid, rel in rows if rel >= min_relevance], strategy)
