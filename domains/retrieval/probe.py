"""Evidence probes: how closely each domain's sources match a question, without a full
retrieval. Used to route questions by what the sources say (the extractive backend's
classifier, docs/pipeline.md "classify").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np
from django.db import connection

from domains.bm25_sql import TITLE_CHARS
from domains.models import SEARCH_CONFIG

from .bm25 import bm25_search
from .vector import vector_literal, vector_search


def nearest_chunk_similarity(query_vector: np.ndarray, domains: Sequence) -> dict[int, float]:
    """Per domain id, the cosine similarity of its nearest chunk (over all its stores,
    each searched on its own: a small domain is never crowded out by a large one).

    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :param domains: Domain rows (reads ``domain.stores.all()``).
    :returns: {domain id: similarity in [-1, 1]}; domains without an embedded chunk
        are absent.
    :raises EmbeddingError: a malformed query vector (see :func:`vector_search`).
    """
    best: dict[int, float] = {}
    for domain in domains:
        for store in domain.stores.all():
            hits = vector_search(store.id, query_vector, 1, -1.0).hits
            if hits:
                best[domain.id] = max(best.get(domain.id, -1.0), hits[0][1])
    return best




def _idf_weights(cursor, store_id: int, terms: Sequence[str]) -> dict[str, float]:
    """BM25 idf of each term in the store's chunks (a term the store never uses weighs most)."""
    cursor.execute("SELECT chunk_count FROM domains_bm25stats WHERE store_id = %s", [store_id])
    row = cursor.fetchone()
    total = float(row[0]) if row else 0.0
    cursor.execute(
        "SELECT lexeme, df FROM domains_bm25term WHERE store_id = %s AND lexeme = ANY(%s::text[])",
        [store_id, list(terms)],
    )
    df = dict(cursor.fetchall())
    return {t: math.log(1 + (total - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}


def lexemes_in_use(lexemes: Sequence[str], domains: Sequence,
                   known: Mapping[int, Collection[str]] | None = None) -> list[str]:
    """The ``lexemes`` some store of the ``domains`` indexes (or ``known`` holds), in
    their order: the words of a question in another language that the sources can match
    (names, numbers, loanwords), the rest being words no source uses in any case.

    :returns: a sublist of ``lexemes``; [] when none is in use.
    """
    terms = sorted(set(lexemes))
    used = {t for words in (known or {}).values() for t in words if t in terms}
    stores = [store.id for domain in domains for store in domain.stores.all()]
    if terms and stores:
        with connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT lexeme FROM domains_bm25term WHERE store_id = ANY(%s) AND lexeme = ANY(%s::text[])",
                           [stores, terms])
            used |= {row[0] for row in cursor.fetchall()}
    return [t for t in lexemes if t in used]


def lexical_coverage(lexemes: Sequence[str], domains: Sequence, depth: int = 3,
                     known: Mapping[int, Collection[str]] | None = None,
                     query_vector: np.ndarray | None = None, near: float = 0.0,
                     body: Callable[[str], str] | None = None) -> dict[int, float]:
    """Per domain id, how much of the question one chunk of the domain holds: over the
    ``depth`` best BM25 chunks of each of its stores, the largest idf-weighted share of
    the question's lexemes a chunk contains, its document's bibliographic metadata
    (title, authors, journal, year, file name) and ``known`` counting as part of it
    (idf of the chunk's store; a lexeme the store never uses weighs most, as if its df
    were 0).

    With ``query_vector`` and ``near`` > 0, a chunk's share counts in proportion to how
    near the chunk is to the question in meaning: times min(1, cosine / ``near``), a
    negative cosine as 0 (a chunk not yet embedded counts whole). A list of affiliations
    holds "capital" and "Australia", a table "table" and "Excel", and is near no
    question; the share ``known`` gives alone is never scaled.

    With ``body``, a chunk holds the lexemes of its headings and of ``body(text)`` (what
    of its text counts: without a paper's affiliations and reference entries, whose
    place names and title words match any question) rather than of its whole text.

    :param lexemes: the question's lexemes (:func:`domains.retrieval.bm25.query_lexemes`).
    :param known: {domain id: lexemes the domain holds whatever the chunk (its name and
        description)}; absent = none.
    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :param near: the cosine from which a chunk's share counts whole (in [0, 1]).
    :param body: a chunk's text -> the part of it whose words count.
    :returns: {domain id: share in [0, 1]}; every domain with a store is present
        (0.0 when nothing holds any lexeme); {} when ``lexemes`` is empty.
    :raises EmbeddingError: a malformed ``query_vector`` (see :func:`vector_literal`).
    """
    terms = sorted(set(lexemes))
    if not terms:
        return {}
    known = known or {}
    scaled = query_vector is not None and near > 0
    vector = vector_literal(query_vector) if scaled else None
    shares: dict[int, float] = {}
    with connection.cursor() as cursor:
        for domain in domains:
            given = set(known.get(domain.id, ())) & set(terms)
            for store in domain.stores.all():
                weight = _idf_weights(cursor, store.id, terms)
                whole = sum(weight.values()) or 1.0
                best = max(shares.get(domain.id, 0.0), sum(weight[t] for t in given) / whole)
                ids = [cid for cid, _ in bm25_search(store.id, terms, depth)]
                if ids:
                    cursor.execute(_CHUNK_TERMS, {"terms": terms, "ids": ids, "vector": vector})
                    rows = cursor.fetchall()
                    if body is not None:
                        rows = _body_terms(cursor, rows, terms, body)
                    for _, held, _, cosine, _, _ in rows:
                        share = sum(weight[t] for t in given.union(held)) / whole
                        if scaled and cosine is not None:
                            share *= min(1.0, max(cosine, 0.0) / near)
                        best = max(best, share)
                shares[domain.id] = best
    return shares


def _body_terms(cursor, rows: list[tuple], terms: list[str], body: Callable[[str], str]) -> list[tuple]:
    """``rows`` of _CHUNK_TERMS with each chunk's held lexemes those of its document's
    line, its headings and ``body(text)``; a chunk whose body is its whole text keeps
    the lexemes its search vector gave."""
    rows = [list(row) for row in rows]
    changed = {}
    for index, (_, _, _, _, headings, text) in enumerate(rows):
        kept = body(text)
        if kept != text:
            changed[index] = " ".join(headings) + " " + kept  # as the chunk_search_vector trigger joins them
    if changed:
        cursor.execute(_TEXT_TERMS, {"terms": terms, "texts": list(changed.values()), "config": SEARCH_CONFIG})
        for index, (held,) in zip(changed, cursor.fetchall()):
            rows[index][1] = sorted(set(held) | set(rows[index][2]))
    return rows


# A document's bibliographic line as searchable text: title, authors (a list or one
# string), journal, year and the file name (its words: "ongaro2013_raft_draft.pdf").
# IMMUTABLE (it reads only its arguments), so that an index can be built on it
# (migration 0019). Each part is cut to a length (characters) that keeps the line's
# tsvector far below PostgreSQL's 1 MB limit (up to ~7 bytes a character of the line):
# over it, writing the document's row failed, and with it the whole ingest run (a 1.5 MB
# heading as a Markdown file's title); 40,000 characters hold ~2,000 authors.
# (The file name is at most 500 characters, Document.file_name.)
BIBLIOGRAPHIC_LIMITS = {"title": TITLE_CHARS, "authors": 40_000, "journal": 1_000, "year": 100}
BIBLIOGRAPHIC_FUNCTION = r"""
CREATE OR REPLACE FUNCTION klea_bibliographic_text(metadata jsonb, file_name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT concat_ws(' ', left(metadata->>'title', {title}),
    left(CASE WHEN jsonb_typeof(metadata->'authors') = 'array'
              THEN (SELECT string_agg(a, ' ') FROM jsonb_array_elements_text(metadata->'authors') a)
              ELSE metadata->>'authors' END, {authors}),
    left(metadata->>'journal', {journal}), left(metadata->>'year', {year}),
    translate(file_name, '_./-', '    '))
$$;
""".format(**BIBLIOGRAPHIC_LIMITS)
# The line's lexemes: the expression of the GIN index domains_document_bibliographic
# (``{d}`` = the table's alias and a dot, or nothing). A query must spell it the same way,
# with the search configuration as a constant, for the planner to use the index.
BIBLIOGRAPHIC_VECTOR = (f"to_tsvector('{SEARCH_CONFIG}'::regconfig, "
                        "klea_search_text(klea_bibliographic_text({d}metadata, {d}file_name)))")
_DOCUMENT_VECTOR = BIBLIOGRAPHIC_VECTOR.format(d="d.")
# The store's documents whose line holds any of the terms (through the index), with the
# terms each holds.
_DOCUMENT_TERMS = f"""
SELECT d.id, ARRAY(SELECT u.lexeme FROM unnest({_DOCUMENT_VECTOR}) u WHERE u.lexeme = ANY(%(terms)s::text[]))
FROM domains_document d WHERE d.store_id = %(store)s AND {_DOCUMENT_VECTOR} @@ %(query)s::tsquery
"""
# A chunk's lexemes among the terms, its document's bibliographic line's included; those
# of the line alone; its cosine to the query vector (NULL without one, or when the chunk
# has no embedding); its headings and text.
_CHUNK_TERMS = f"""
SELECT c.id, ARRAY(SELECT u.lexeme FROM unnest(c.search_vector) u WHERE u.lexeme = ANY(%(terms)s::text[])
    UNION SELECT u.lexeme FROM unnest({_DOCUMENT_VECTOR}) u
    WHERE u.lexeme = ANY(%(terms)s::text[])),
    ARRAY(SELECT u.lexeme FROM unnest({_DOCUMENT_VECTOR}) u WHERE u.lexeme = ANY(%(terms)s::text[])),
    1 - (c.embedding <=> %(vector)s::vector), c.headings, c.text
FROM domains_chunk c JOIN domains_document d ON d.id = c.document_id WHERE c.id = ANY(%(ids)s)
"""
# Each text's lexemes among the terms, as a chunk's search vector reads its text, in order.
_TEXT_TERMS = """
SELECT ARRAY(SELECT u.lexeme FROM unnest(to_tsvector(%(config)s::regconfig, klea_search_text(x.text))) u
             WHERE u.lexeme = ANY(%(terms)s::text[]))
FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS x(text, position) ORDER BY x.position
"""


def any_of(lexemes: Sequence[str]) -> str:
    """A tsquery (as text) true for a tsvector holding any of ``lexemes``, each taken as
    it is (quoted: no parsing or stemming again; quotes and backslashes escaped).

    >>> any_of(["raft", "it's"])
    "'raft' | 'it''s'"
    """
    return " | ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


def document_coverage(lexemes: Sequence[str], domains: Sequence,
                      known: Mapping[int, Collection[str]] | None = None) -> dict[int, tuple[float, int]]:
    """Per domain id, the document whose bibliographic metadata (title, authors, journal,
    year, file name) holds the largest idf-weighted share of ``lexemes`` (idf of its
    store's chunks, as :func:`lexical_coverage`): a question naming a paper by its title
    or authors finds it even when its chunks do not print them.

    Reads only the documents whose line holds a term (the GIN index of migration 0019;
    every document was read per question before: 0.4-0.5 s at 50,000 documents).

    :param lexemes: the question's lexemes that name the document (not the field asked for).
    :param known: as for :func:`lexical_coverage`: lexemes counted as held by every
        document of the domain.
    :returns: {domain id: (share in [0, 1], document id)}; domains with no matching
        document are absent; {} when ``lexemes`` is empty.
    """
    terms = sorted(set(lexemes))
    if not terms:
        return {}
    known = known or {}
    found: dict[int, tuple[float, int]] = {}
    with connection.cursor() as cursor:
        for domain in domains:
            given = set(known.get(domain.id, ())) & set(terms)
            for store in domain.stores.all():
                weight = _idf_weights(cursor, store.id, terms)
                whole = sum(weight.values()) or 1.0
                cursor.execute(_DOCUMENT_TERMS, {"terms": terms, "store": store.id, "query": any_of(terms)})
                for document_id, held in cursor.fetchall():
                    share = sum(weight[t] for t in given.union(held)) / whole
                    if share > found.get(domain.id, (0.0, 0))[0]:
                        found[domain.id] = (share, document_id)
    return found
