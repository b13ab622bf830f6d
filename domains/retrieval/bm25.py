"""Okapi BM25 in PostgreSQL over the trigger-maintained index (domains/bm25_sql.py).

score(chunk) = sum over distinct query lexemes t present in the chunk of
    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
with the Lucene idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) (always > 0), and N, df,
avgdl of the chunk's store (Robertson & Zaragoza 2009; Lucene's BM25Similarity).
Query terms are ORed. Defaults k1 = 1.2, b = 0.75 (KLEA_BM25_K1, KLEA_BM25_B), which
measured slightly better than Anserini's 0.9 / 0.4 on SciFact (docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from domains.models import SEARCH_CONFIG

from .filters import CompiledFilter


def query_lexemes(text: str) -> list[str]:
    """The distinct lexemes of ``text`` under the search configuration, in text order.

    Any text is valid: tsquery operators are never parsed from user input (the text
    goes through ``to_tsvector``). A query made only of stop words gives ``[]``.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, %s)) ORDER BY positions[1], lexeme",
            [SEARCH_CONFIG, text],
        )
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class Bm25Params:
    """k1: tf saturation (>= 0); b: length normalisation in [0, 1]."""

    k1: float
    b: float

    def __post_init__(self):
        if not self.k1 >= 0:
            raise ValueError(f"BM25 k1 must be >= 0, got {self.k1!r}")
        if not 0 <= self.b <= 1:
            raise ValueError(f"BM25 b must be in [0, 1], got {self.b!r}")

    @classmethod
    def from_settings(cls) -> Bm25Params:
        return cls(float(settings.KLEA_BM25_K1), float(settings.KLEA_BM25_B))


# Top-k pruning (MaxScore, Turtle & Flood 1995), exact: with theta a lower bound of the
# k-th best score, terms whose upper bounds sum below theta are "non-essential": a chunk
# holding only such terms cannot reach the top k, so their postings are never scanned;
# they are looked up only for the candidates found through the other terms.
# Queries touching fewer postings than this are scored in one pass.
PRUNE_MIN_POSTINGS = 20_000
# The probe that gives theta scores the rarest terms up to this many postings.
PROBE_POSTINGS = 5_000

# float8 throughout (a bare 0.5 or a bound 0.75 would make the arithmetic numeric, ~5x
# slower). Per term w = idf * (k1 + 1), which bounds its contribution from above; per
# posting the factor tf / (tf + c1 + c2 dl) < 1, c1 = k1 (1 - b), c2 = k1 b / avgdl.
_TERMS = """
WITH s AS (
    SELECT chunk_count::float8 AS n FROM domains_bm25stats WHERE store_id = %(store)s AND total_length > 0
)
SELECT t.id, t.df, ln(1 + (s.n - t.df + 0.5::float8) / (t.df + 0.5::float8)) * (%(k1)s::float8 + 1)
FROM domains_bm25term t, s
WHERE t.store_id = %(store)s AND t.lexeme = ANY(%(terms)s::text[])
ORDER BY t.df, t.id
"""
_STATS = """
    SELECT %(k1)s::float8 * (1 - %(b)s::float8) AS c1,
           %(k1)s::float8 * %(b)s::float8 * chunk_count / total_length::float8 AS c2
    FROM domains_bm25stats WHERE store_id = %(store)s
"""
_PARTIAL = """
    SELECT p.chunk_id, sum(q.w * p.tf / (p.tf + s.c1 + s.c2 * p.dl)) AS score
    FROM unnest(%({ids})s::bigint[], %({weights})s::float8[]) AS q(id, w)
    JOIN domains_bm25posting p ON p.term_id = q.id CROSS JOIN s
    {join}
    GROUP BY p.chunk_id
"""
_FULL = "WITH s AS (" + _STATS + ")" + _PARTIAL.format(ids="ids", weights="ws", join="{join}") + """
ORDER BY score DESC, chunk_id
LIMIT %(k)s
"""
_PRUNED = "WITH s AS (" + _STATS + "), e AS (" + _PARTIAL.format(ids="ids", weights="ws", join="{join}") + """
), candidates AS MATERIALIZED (
    SELECT chunk_id, score FROM e WHERE score + %(bound)s >= %(theta)s
)
SELECT c.chunk_id, c.score + coalesce((
    SELECT sum(q.w * p.tf / (p.tf + s.c1 + s.c2 * p.dl))
    FROM unnest(%(ne_ids)s::bigint[], %(ne_ws)s::float8[]) AS q(id, w)
    JOIN domains_bm25posting p ON p.term_id = q.id AND p.chunk_id = c.chunk_id
), 0) AS score
FROM candidates c CROSS JOIN s
ORDER BY score DESC, chunk_id
LIMIT %(k)s
"""


def bm25_search(
    store_id: int,
    lexemes: list[str],
    k: int,
    *,
    where: CompiledFilter | None = None,
    params: Bm25Params | None = None,
    prune_min_postings: int = PRUNE_MIN_POSTINGS,
) -> list[tuple[int, float]]:
    """The ``k`` best chunks of a store for the OR of ``lexemes``.

    :param lexemes: from :func:`query_lexemes` (duplicates are counted once).
    :param where: filter over the chunk alias ``c``, applied before ranking.
    :param params: k1 and b; default from settings.
    :param prune_min_postings: queries touching more postings use exact MaxScore
        pruning (same results, fewer postings read).
    :returns: [(chunk_id, BM25 score)] best first, ties by chunk id; [] when
        ``lexemes`` is empty or the store has no chunks.
    """
    if not lexemes or k <= 0:
        return []
    params = params or Bm25Params.from_settings()
    values = {"store": store_id, "terms": sorted(set(lexemes)), "k1": params.k1, "b": params.b, "k": k}
    join = ""
    if where is not None and not where.empty:
        join = f"JOIN domains_chunk c ON c.id = p.chunk_id WHERE {where.sql}"
        values.update(where.params)
    with connection.cursor() as cursor:
        cursor.execute(_TERMS, values)
        terms = [(tid, df, float(w)) for tid, df, w in cursor.fetchall()]  # rarest first
        if not terms:
            return []

        def full(selected):
            cursor.execute(
                _FULL.format(join=join), {**values, "ids": [t[0] for t in selected], "ws": [t[2] for t in selected]}
            )
            return [(cid, float(score)) for cid, score in cursor.fetchall()]

        if sum(df for _, df, _ in terms) <= prune_min_postings or len(terms) == 1:
            return full(terms)
        probe, postings = [], 0
        for term in terms:
            if probe and postings + term[1] > PROBE_POSTINGS:
                break
            probe.append(term)
            postings += term[1]
        ranked = full(probe)
        # Partial scores are lower bounds of full scores: k chunks score >= theta.
        # (less a relative 1e-9, so float rounding can never exclude a top-k chunk).
        theta = ranked[k - 1][1] * (1 - 1e-9) if len(ranked) >= k else 0.0
        non_essential, bound = [], 0.0
        for term in sorted(terms, key=lambda t: (t[2], t[0])):  # smallest upper bound first
            if bound + term[2] >= theta:
                break
            non_essential.append(term)
            bound += term[2]
        if not non_essential:
            return full(terms)
        essential = [t for t in terms if t not in non_essential]
        cursor.execute(
            _PRUNED.format(join=join),
            {
                **values,
                "ids": [t[0] for t in essential],
                "ws": [t[2] for t in essential],
                "ne_ids": [t[0] for t in non_essential],
                "ne_ws": [t[2] for t in non_essential],
                "bound": bound,
                "theta": theta,
            },
        )
        return [(cid, float(score)) for cid, score in cursor.fetchall()]


@dataclass
class StoreStatistics:
    """A store's BM25 statistics: N, sum of dl, {lexeme: df}, {(chunk, lexeme): (tf, dl)}."""

    chunk_count: int
    total_length: int
    df: dict[str, int]
    postings: dict[tuple[int, str], tuple[int, int]]


def indexed_statistics(store_id: int) -> StoreStatistics:
    """The statistics as kept by the triggers (the tables)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_count, total_length FROM domains_bm25stats WHERE store_id = %s", [store_id]
        )
        row = cursor.fetchone() or (0, 0)
        cursor.execute("SELECT lexeme, df FROM domains_bm25term WHERE store_id = %s", [store_id])
        df = dict(cursor.fetchall())
        cursor.execute(
            "SELECT p.chunk_id, t.lexeme, p.tf, p.dl FROM domains_bm25posting p "
            "JOIN domains_bm25term t ON t.id = p.term_id WHERE t.store_id = %s",
            [store_id],
        )
        postings = {(cid, lex): (tf, dl) for cid, lex, tf, dl in cursor.fetchall()}
    return StoreStatistics(int(row[0]), int(row[1]), df, postings)


def recomputed_statistics(store_id: int) -> StoreStatistics:
    """The statistics recomputed from the chunks' tsvectors, ignoring the tables
    (for verification: it must equal :func:`indexed_statistics`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) "
            "FROM domains_chunk c LEFT JOIN LATERAL unnest(c.search_vector) u ON true WHERE c.store_id = %s",
            [store_id],
        )
        rows = cursor.fetchall()
    lengths: dict[int, int] = {}
    for cid, lexeme, tf in rows:
        lengths[cid] = lengths.get(cid, 0) + (tf if lexeme is not None else 0)
    df: dict[str, int] = {}
    postings = {}
    for cid, lexeme, tf in rows:
        if lexeme is None:
            continue
        df[lexeme] = df.get(lexeme, 0) + 1
        postings[(cid, lexeme)] = (tf, lengths[cid])
    return StoreStatistics(len(lengths), sum(lengths.values()), df, postings)
