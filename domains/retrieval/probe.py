"""Evidence probes: how closely each domain's sources match a question, without a full
retrieval. Used to route questions by what the sources say (the extractive backend's
classifier, docs/pipeline.md "classify").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
