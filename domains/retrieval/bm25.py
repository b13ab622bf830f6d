"""Okapi BM25 in PostgreSQL over the trigger-maintained index (domains/bm25_sql.py).

score(chunk) = sum over distinct query lexemes t present in the chunk of
    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
with the Lucene idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) (always > 0), and N, df,
avgdl of the chunk's store (Robertson & Zaragoza 2009; Lucene's BM25Similarity).
Query terms are ORed. Defaults k1 = 1.2, b = 0.75 (KLEA_BM25_K1, KLEA_BM25_B): against
Anserini's 0.9 / 0.4 they tie on SciFact and answer far more documentation questions,
whose chunks vary in length (docs/benchmarks.md).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import groupby

from django.conf import settings
from django.db import connection, transaction

from domains.bm25_sql import IMPACT_B, IMPACT_K1, REREFERENCE, SLASHED_WORDS
from domains.models import SEARCH_CONFIG
from domains.text import check_refused

from .filters import CompiledFilter


def query_lexemes(text: str) -> list[str]:
    """The distinct lexemes of ``text`` under the search configuration, in text order.

    Any text is valid: tsquery operators are never parsed from user input (the text
    goes through ``to_tsvector``). A query made only of stop words gives ``[]``. The text
    is rewritten as the chunks' is (``klea_search_text``, domains/bm25_sql.py): "COVID 19",
    "covid19" and "COVID-19" all give ``covid`` and ``19``, the last two also ``covid19``;
    two words joined by a slash give the slashed lexeme and each word ("safety/guard":
    ``safety/guard``, ``safeti``, ``guard``; :data:`domains.bm25_sql.SLASHED_WORDS`).

    Inside :func:`shared_results` a text's lexemes are read once (the router's, then
    retrieve's).

    :raises ValueError: a NUL character or a lone surrogate in ``text`` (PostgreSQL
        takes neither; refused before the statement, so a caller's transaction stays usable).
    """
    check_refused("text", text)
    shared = _shared.get()
    if shared is not None and ("lexemes", text) in shared:
        return list(shared["lexemes", text])
    with connection.cursor() as cursor:
        cursor.execute(_LEXEMES, _lexeme_parameters(text))
        lexemes = [row[0] for row in cursor.fetchall()]
    _share_lexemes(text, lexemes)
    return lexemes


def _share_lexemes(text: str, lexemes: list[str]) -> None:
    if (shared := _shared.get()) is not None:
        shared["lexemes", text] = tuple(lexemes)


def _lexeme_parameters(text: str) -> dict:
    """The parameters of :data:`_LEXEMES` (and the statements built on it) for ``text``."""
    return {"config": SEARCH_CONFIG, "text": text, "slashed": SLASHED_WORDS}


_LEXEMES = (
    "SELECT lexeme FROM unnest(to_tsvector(%(config)s::regconfig, klea_search_text(%(text)s) || ' ' || "
    "array_to_string(ARRAY(SELECT m[1] || ' ' || m[2] FROM regexp_matches(%(text)s, %(slashed)s, 'g') m), ' '))) "
    "ORDER BY positions[1], lexeme"
)
# The text's lexemes (as _LEXEMES), and each text search configuration's name and count
# of the text's words, by name: the simple configuration keeps them all (it has no stop
# words), another all but its stop words.
_LEXEMES_AND_WORDS_PER_CONFIGURATION = f"""
SELECT ARRAY({_LEXEMES}), array_agg(c.cfgname::text ORDER BY c.cfgname), array_agg((
    SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(to_tsvector(c.oid::regconfig, %(text)s)) u
) ORDER BY c.cfgname)
FROM pg_ts_config c
"""


def lexemes_and_language(text: str) -> tuple[list[str], str]:
    """:func:`query_lexemes` of ``text`` and, in the same statement, its language: the one
    whose stop words it uses most, by PostgreSQL's text search configurations
    ("english", "german", "french", ...); "english" when no other language has more of
    them (ties included), so that the search configuration's language is assumed unless
    the text's own small words say otherwise.

    :returns: ``(lexemes, language)``, language a text search configuration's name.
    :raises ValueError: as :func:`query_lexemes`.
    """
    check_refused("text", text)
    with connection.cursor() as cursor:
        cursor.execute(_LEXEMES_AND_WORDS_PER_CONFIGURATION, _lexeme_parameters(text))
        lexemes, names, counts = cursor.fetchone()
    _share_lexemes(text, lexemes)
    return lexemes, _language(dict(zip(names, counts)))


def _language(kept: dict[str, int]) -> str:
    """The language of a text from each configuration's count of its words, by name."""
    words = kept.pop("simple", 0)
    stops = {name: words - count for name, count in kept.items()}
    best = max(stops, key=lambda name: (stops[name], name == "english"), default="english")
    return best if stops.get(best, 0) > stops.get("english", 0) else "english"


# Letters of a script English is not written in name a language when they are most of a
# question's letters, by the first word of their Unicode names; a script several
# languages share ("CYRILLIC") names none. (Stop words name the language first: "Как
# установить Klea?" is Russian by "как".)
_SCRIPT_LANGUAGES = {"CJK": "chinese", "HIRAGANA": "japanese", "KATAKANA": "japanese", "HANGUL": "korean",
                     "GREEK": "greek", "THAI": "thai", "HEBREW": "hebrew", "GEORGIAN": "georgian",
                     "ARMENIAN": "armenian", "BENGALI": "bengali", "TAMIL": "tamil", "KHMER": "khmer", "LAO": "lao"}


def question_language(text: str) -> str:
    """The language ``text`` is written in: the one routing reads from its stop words
    (:func:`lexemes_and_language`) when two of them are that language's or a letter is
    outside ASCII ("max MCP tool calls per question?" holds one Italian stop word, "per",
    and no English one: English; "Welche Formate unterstützt Klea?": German), or else, when
    most of its words are of a script other than Latin, the script's ("chinese"; "japanese"
    when any kana is among them; "other" for a script several languages share).

    :returns: a lower-case language name ("english", "german", "chinese", ...) or "other".
    :raises ValueError: as :func:`query_lexemes`.
    """
    check_refused("text", text)
    with connection.cursor() as cursor:
        cursor.execute(_LEXEMES_AND_WORDS_PER_CONFIGURATION, _lexeme_parameters(text))
        _, names, counts = cursor.fetchone()
    kept = dict(zip(names, counts))
    language = _language(dict(kept))
    if language != "english" and (kept["simple"] - kept[language] >= 2 or not text.isascii()):
        return language
    return _script_language(text)


def _script_language(text: str) -> str:
    """"english" unless most of the words of ``text`` are of a script other than Latin
    (a word: a run of letters of one script; each Han character or kana is one, as those
    languages put no space between words: "如何安装Klea？" is four words to one), else the
    language of the most used such script (_SCRIPT_LANGUAGES; "japanese" when any kana is
    among them) or "other"."""
    words = []
    for script, run in groupby(unicodedata.name(c, "UNKNOWN").split()[0] if c.isalpha() else "" for c in text):
        if script:
            words += [script] * (len(list(run)) if script in _UNSPACED else 1)
    foreign = [script for script in words if script != "LATIN"]
    if len(foreign) * 2 <= len(words):
        return "english"
    if {"HIRAGANA", "KATAKANA"} & set(foreign):
        return "japanese"
    return _SCRIPT_LANGUAGES.get(max(sorted(set(foreign)), key=foreign.count), "other")


# Scripts written without spaces between words: each character counts as a word.
_UNSPACED = frozenset({"CJK", "HIRAGANA", "KATAKANA"})


_CONTENT_WORDS = """
SELECT coalesce(string_agg(w.lexeme, ' '), '') FROM unnest(to_tsvector('pg_catalog.simple', %(text)s)) w
WHERE w.positions && ARRAY(SELECT p FROM unnest(to_tsvector(%(language)s::regconfig, %(text)s)) u, unnest(u.positions) p)
"""


def content_words(text: str, language: str) -> str:
    """The words of ``text`` that are not stop words of ``language`` (a text search
    configuration's name), lower-cased, space-separated, in no particular order.

    :raises ValueError: as :func:`query_lexemes`.
    """
    check_refused("text", text)
    with connection.cursor() as cursor:
        cursor.execute(_CONTENT_WORDS, {"text": text, "language": language})
        return cursor.fetchone()[0]


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


# float8 throughout (a bare 0.5 or a bound 0.75 would make the arithmetic numeric, ~3x
# slower). Per term w = idf * (k1 + 1); per posting tf / (tf + c1 + c2 dl) with
# c1 = k1 (1 - b), c2 = k1 b / avgdl. Reads only the postings of the query's terms,
# from the postings index (index-only scan). The terms are read one after the other in
# id order (a materialised CTE, scanned serially), so a hash aggregate adds each chunk's
# terms in that order, as the pruned query does: equal chunks get bit-equal scores and
# tie by id. A plan that sorts before aggregating may add them in another order and
# change the last bit (tests/test_bm25_topk.py compares scores to 1e-12).
_SEARCH = """
WITH s AS (
    SELECT chunk_count::float8 AS n,
           %(k1)s::float8 * (1 - %(b)s::float8) AS c1,
           %(k1)s::float8 * %(b)s::float8 * chunk_count / total_length::float8 AS c2
    FROM domains_bm25stats WHERE store_id = %(store)s AND total_length > 0
), q AS MATERIALIZED (
    SELECT t.id, ln(1 + (s.n - t.df + 0.5::float8) / (t.df + 0.5::float8)) * (%(k1)s::float8 + 1) AS w
    FROM domains_bm25term t, s
    WHERE t.store_id = %(store)s AND t.lexeme = ANY(%(terms)s::text[])
    ORDER BY t.id
)
SELECT p.chunk_id, sum(q.w * p.tf / (p.tf + s.c1 + s.c2 * p.dl)) AS score
FROM s, q CROSS JOIN LATERAL (
    SELECT p.chunk_id, p.tf, p.dl FROM domains_bm25posting p WHERE p.term_id = q.id
) p
{join}
GROUP BY p.chunk_id
ORDER BY score DESC, p.chunk_id
LIMIT %(k)s
"""


# Postings the pruned query reads first (the shortest lists, whole) to seed its threshold.
PRUNED_SEED = 20_000


# A question turn searches BM25 twice with the same terms: the router's lexical probe
# (depth 3) and retrieve's list (depth 50). The exhaustive query costs the same at any
# depth (it sums every posting), the pruned one little more at 50 than at 3 (both read
# the rare lists and score a few hundred chunks), so inside `shared_results()` an
# unfiltered search asks for at least SHARED_DEPTH and a later request for no more is
# served from it: one BM25 search per store per turn. The terms are read once too.
SHARED_DEPTH = 50
_shared: ContextVar[dict | None] = ContextVar("klea_bm25_shared", default=None)


@contextmanager
def shared_results() -> Iterator[None]:
    """Within this scope (one question turn; contextvars, so threads started through
    asgiref's ``sync_to_async`` share it) unfiltered :func:`bm25_search` results are
    computed once per (store, terms, k1, b, pruned or not), and :func:`query_lexemes` once
    per text. Stores must not change inside the scope (a turn only reads)."""
    token = _shared.set({})
    try:
        yield
    finally:
        _shared.reset(token)


def bm25_search(
    store_id: int,
    lexemes: list[str],
    k: int,
    *,
    where: CompiledFilter | None = None,
    params: Bm25Params | None = None,
    exhaustive: bool | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` best chunks of a store for the OR of ``lexemes``.

    With ``exhaustive=False`` (the default, ``KLEA_BM25_PRUNED``), no filter
    and the impacts' k1 and b (the defaults), the pruned query ``klea_bm25_topk``
    (domains/bm25_topk_sql.py) reads the short lists of the rare terms and looks the
    common terms up only for the chunks that can still enter the top k (MaxScore);
    otherwise every posting of the terms is summed.
    Both give the same ids and scores (to ~1e-12; chunks whose scores agree to the
    last bits may come in either order).

    :param lexemes: from :func:`query_lexemes` (duplicates are counted once).
    :param where: filter over the chunk alias ``c``, applied before ranking.
    :param params: k1 and b; default from settings.
    :param exhaustive: True: sum every posting (the reference the pruned query must
        equal); False: prune where possible; None: per ``KLEA_BM25_PRUNED``.
    :returns: [(chunk_id, BM25 score)] best first, ties by chunk id; [] when
        ``lexemes`` is empty or the store has no chunks.
    """
    if not lexemes or k <= 0:
        return []
    params = params or Bm25Params.from_settings()
    terms = sorted(set(lexemes))
    filtered = where is not None and not where.empty
    if exhaustive is None:
        exhaustive = not settings.KLEA_BM25_PRUNED
    pruned = not (exhaustive or filtered) and (params.k1, params.b) == (IMPACT_K1, IMPACT_B)
    search = _pruned if pruned else _exhaustive
    shared = None if filtered else _shared.get()
    if shared is not None:
        key = (store_id, tuple(terms), params.k1, params.b, pruned)
        depth, hits = shared.get(key, (0, []))
        if depth < k:
            depth = max(k, SHARED_DEPTH)
            hits = search(store_id, terms, depth, params, None)
            shared[key] = (depth, hits)
        return hits[:k]
    return search(store_id, terms, k, params, where if filtered else None)


def _pruned(
    store_id: int, terms: list[str], k: int, params: Bm25Params, where: CompiledFilter | None
) -> list[tuple[int, float]]:
    with connection.cursor() as cursor:  # never filtered (``where`` is for _exhaustive's signature)
        cursor.execute(
            "SELECT chunk_id, score FROM klea_bm25_topk(%s, %s::text[], %s, %s, %s::float8, %s::float8)",
            [store_id, terms, k, PRUNED_SEED, params.k1, params.b],
        )
        return [(cid, float(score)) for cid, score in cursor.fetchall()]


def _exhaustive(
    store_id: int, terms: list[str], k: int, params: Bm25Params, where: CompiledFilter | None
) -> list[tuple[int, float]]:
    values = {"store": store_id, "terms": terms, "k1": params.k1, "b": params.b, "k": k}
    join = ""
    if where is not None:
        join = f"JOIN domains_chunk c ON c.id = p.chunk_id WHERE {where.sql}"
        values.update(where.params)
    with connection.cursor() as cursor:
        cursor.execute(_SEARCH.format(join=join), values)
        return [(cid, float(score)) for cid, score in cursor.fetchall()]


def rereference_impacts(store_id: int) -> int:
    """Set the store's reference avgdl to its current avgdl and rewrite the impacts that
    change (one UPDATE of up to every posting of the store: minutes at 1M chunks).

    Worth it when the avgdl has grown well above the reference (the pruned query's
    bound factor is their ratio). :returns: the number of postings rewritten.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(REREFERENCE[0], {"store": store_id})
        cursor.execute(REREFERENCE[1], {"store": store_id})
        return cursor.rowcount


@dataclass
class StoreStatistics:
    """A store's BM25 statistics: N, sum of dl, {lexeme: df}, {(chunk, lexeme): (tf, dl)},
    and the number of postings whose stored impact is not ``klea_bm25_impact`` of their
    tf, dl and the store's reference avgdl (0 when the index is right)."""

    chunk_count: int
    total_length: int
    df: dict[str, int]
    postings: dict[tuple[int, str], tuple[int, int]]
    stale_impacts: int = 0


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
        cursor.execute(
            "SELECT count(*) FROM domains_bm25posting p JOIN domains_bm25term t ON t.id = p.term_id "
            "JOIN domains_bm25stats s ON s.store_id = t.store_id "
            "WHERE t.store_id = %s AND p.impact <> klea_bm25_impact(p.tf, p.dl, s.impact_avgdl)",
            [store_id],
        )
        stale = cursor.fetchone()[0]
    return StoreStatistics(int(row[0]), int(row[1]), df, postings, stale)


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
