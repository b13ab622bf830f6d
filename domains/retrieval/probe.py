"""Evidence probes: how closely each domain's sources match a question, without a full
retrieval. Used to route questions by what the sources say (the extractive backend's
classifier, docs/pipeline.md "classify").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from django.db import connection

from .bm25 import bm25_search
from .vector import vector_search


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


_CHUNK_TERMS = """
SELECT c.id, ARRAY(SELECT u.lexeme FROM unnest(c.search_vector) u WHERE u.lexeme = ANY(%(terms)s::text[]))
FROM domains_chunk c WHERE c.id = ANY(%(ids)s)
"""


def lexical_coverage(lexemes: Sequence[str], domains: Sequence, depth: int = 3) -> dict[int, float]:
    """Per domain id, how much of the question one chunk of the domain holds: over the
    ``depth`` best BM25 chunks of each of its stores, the largest idf-weighted share of
    the question's lexemes a chunk contains (idf of the chunk's store; a lexeme the store
    never uses weighs most, as if its df were 0).

    :param lexemes: the question's lexemes (:func:`domains.retrieval.bm25.query_lexemes`).
    :returns: {domain id: share in [0, 1]}; every domain with a store is present
        (0.0 when no chunk holds any lexeme); {} when ``lexemes`` is empty.
    """
    terms = sorted(set(lexemes))
    if not terms:
        return {}
    shares: dict[int, float] = {}
    with connection.cursor() as cursor:
        for domain in domains:
            for store in domain.stores.all():
                cursor.execute("SELECT chunk_count FROM domains_bm25stats WHERE store_id = %s", [store.id])
                row = cursor.fetchone()
                total = float(row[0]) if row else 0.0
                cursor.execute(
                    "SELECT lexeme, df FROM domains_bm25term WHERE store_id = %s AND lexeme = ANY(%s::text[])",
                    [store.id, terms],
                )
                df = dict(cursor.fetchall())
                weight = {t: math.log(1 + (total - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}
                whole = sum(weight.values()) or 1.0
                best = shares.get(domain.id, 0.0)
                ids = [cid for cid, _ in bm25_search(store.id, terms, depth)]
                if ids:
                    cursor.execute(_CHUNK_TERMS, {"terms": terms, "ids": ids})
                    for _, held in cursor.fetchall():
                        best = max(best, sum(weight[t] for t in held) / whole)
                shares[domain.id] = best
    return shares
