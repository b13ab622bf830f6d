"""Model-free routing: a question goes to the domains whose sources match it.

Each domain's score is its best evidence: the cosine similarity of the question to the
domain's nearest chunk (probed per domain through :mod:`domains.retrieval.probe`), or to
its description. A domain is routed when its score reaches CLASSIFY_THRESHOLD; domains
within CLASSIFY_MARGIN of the best one are routed too (multi-domain questions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from domains import embeddings
from domains.retrieval import nearest_chunk_similarity

# Measured on the documentation corpora (python bench/docs_qa.py): in-domain questions
# score 0.303-0.92, off-topic ones at most 0.238; 0.27 sits midway between the two.
CLASSIFY_THRESHOLD = 0.27
CLASSIFY_MARGIN = 0.03


@dataclass(frozen=True)
class DomainScore:
    domain: object  # domains.models.Domain
    score: float


@lru_cache(maxsize=256)
def _description_vector(text: str) -> np.ndarray:
    return embeddings.embed_texts([text])[0]


def score_domains(query_vector: np.ndarray, domains: Sequence) -> list[DomainScore]:
    """Each domain's best signal: nearest-chunk or description cosine similarity.

    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :returns: one DomainScore per domain, best first.
    """
    if not domains:
        return []
    nearest = nearest_chunk_similarity(query_vector, domains)
    scores = [
        DomainScore(
            domain,
            max(float(query_vector @ _description_vector(f"{domain.name}: {domain.description}")),
                nearest.get(domain.id, -1.0)),
        )
        for domain in domains
    ]
    return sorted(scores, key=lambda s: -s.score)


def classify(query_vector: np.ndarray, domains: Sequence) -> list[DomainScore]:
    """The domains the question belongs to, best first; [] means "undefined"."""
    scores = score_domains(query_vector, domains)
    if not scores or scores[0].score < CLASSIFY_THRESHOLD:
        return []
    top = scores[0].score
    return [s for s in scores if s.score >= max(CLASSIFY_THRESHOLD, top - CLASSIFY_MARGIN)]
