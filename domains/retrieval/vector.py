"""Dense retrieval: cosine similarity over pgvector embeddings of one store."""

from __future__ import annotations

import numpy as np
from django.db import connection

from domains.embeddings import EmbeddingError, dimension


def vector_search(store_id: int, query_vector: np.ndarray, k: int, min_relevance: float) -> list[tuple[int, float]]:
    """The ``k`` chunks of a store closest to ``query_vector``.

    Exact scan of the store's rows (the ``+ 0`` keeps the planner off the HNSW index,
    whose post-filtering could return fewer than k rows for a store restriction).

    :param query_vector: shape (384,), L2-normalised.
    :returns: [(chunk_id, relevance)] best first; relevance = 1 - cosine distance,
        only rows with relevance >= ``min_relevance``.
    :raises EmbeddingError: when the query vector has the wrong dimension.
    """
    if query_vector.shape != (dimension(),):
        raise EmbeddingError(f"query embedding has shape {query_vector.shape}; expected ({dimension()},)")
    literal = "[" + ",".join(f"{x:.8g}" for x in query_vector.tolist()) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT id, 1 - (embedding <=> %(q)s::vector) AS relevance
            FROM domains_chunk
            WHERE store_id = %(store)s AND embedding IS NOT NULL
            ORDER BY (embedding <=> %(q)s::vector) + 0
            LIMIT %(k)s
            """,
            {"q": literal, "store": store_id, "k": k},
        )
        return [(cid, float(rel)) for cid, rel in cursor.fetchall() if rel >= min_relevance]
