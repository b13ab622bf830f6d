"""The model-free backend: classification by embedding similarity, extractive answers.

Needs no LLM server, so the product answers end to end on any machine. Answers are the
retrieved chunks' sentences closest to the question, each followed by the number of the
source it came from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection

from domains import embeddings
from domains.models import Domain
from domains.retrieval import RetrievedChunk

# A domain is routed when its best signal reaches CLASSIFY_THRESHOLD: the cosine
# similarity of the question to the domain's nearest chunk, or to its description.
# Measured on the documentation corpora (tests/doc_questions.py): in-domain questions
# score 0.31-0.92, off-topic ones 0.14-0.25.
CLASSIFY_THRESHOLD = 0.3
# Domains within this margin of the best one are routed too (multi-domain questions).
CLASSIFY_MARGIN = 0.03
# How many nearest chunks (over all stores, HNSW) the classifier looks at.
NEAREST_PROBE = 100
# Weight of the retrieval score (0..1) against sentence-question cosine in answers.
RETRIEVAL_WEIGHT = 0.15
MAX_SENTENCES = 3
MAX_PER_SOURCE = 2
MIN_SENTENCE_CHARS = 25
_SENTENCE = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9\"'(\[`])|\n+")


@dataclass(frozen=True)
class DomainScore:
    domain: Domain
    score: float


def nearest_chunk_similarity(query_vector: np.ndarray, domain_ids: Sequence[int]) -> dict[int, float]:
    """Per domain, the cosine similarity of its nearest chunk among the NEAREST_PROBE
    nearest chunks overall (HNSW). Domains with no chunk in the probe are absent."""
    literal = "[" + ",".join(f"{x:.8g}" for x in query_vector.tolist()) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT s.domain_id, max(n.similarity) FROM (
                SELECT store_id, 1 - (embedding <=> %(q)s::vector) AS similarity
                FROM domains_chunk WHERE embedding IS NOT NULL
                ORDER BY embedding <=> %(q)s::vector LIMIT %(probe)s
            ) n JOIN domains_store s ON s.id = n.store_id
            WHERE s.domain_id = ANY(%(domains)s)
            GROUP BY s.domain_id
            """,
            {"q": literal, "probe": NEAREST_PROBE, "domains": list(domain_ids)},
        )
        return {domain_id: float(similarity) for domain_id, similarity in cursor.fetchall()}


def score_domains(question: str, domains: Sequence[Domain]) -> list[DomainScore]:
    """Each domain's best signal: nearest-chunk or description cosine similarity.

    :returns: one DomainScore per domain, best first.
    """
    if not domains:
        return []
    q = embeddings.embed_query(question)
    descriptions = embeddings.embed_texts([f"{d.name}: {d.description}" for d in domains])
    nearest = nearest_chunk_similarity(q, [d.id for d in domains])
    scores = [
        DomainScore(domain, max(float(q @ description), nearest.get(domain.id, -1.0)))
        for domain, description in zip(domains, descriptions)
    ]
    return sorted(scores, key=lambda s: -s.score)


def classify(question: str, domains: Sequence[Domain]) -> list[Domain]:
    """The domains the question belongs to; [] means "undefined"."""
    scores = score_domains(question, domains)
    if not scores or scores[0].score < CLASSIFY_THRESHOLD:
        return []
    top = scores[0].score
    return [s.domain for s in scores if s.score >= max(CLASSIFY_THRESHOLD, top - CLASSIFY_MARGIN)]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) >= MIN_SENTENCE_CHARS]


def compose_answer(question: str, sources: Sequence[RetrievedChunk]) -> tuple[str, list[int]]:
    """Answer from the sources' sentences most similar to the question.

    :param sources: numbered 1..n in this order.
    :returns: (answer text where each sentence ends with ``[n]``, cited numbers in order
        of first citation); ("", []) when no sentence qualifies.
    """
    candidates: list[tuple[int, int, str]] = []  # (source number, position, sentence)
    for number, chunk in enumerate(sources, start=1):
        for position, sentence in enumerate(split_sentences(chunk.text)):
            candidates.append((number, position, sentence))
    if not candidates:
        return "", []
    q = embeddings.embed_query(question)
    vectors = embeddings.embed_texts([s for _, _, s in candidates])
    # Retrieval already weighed each source (fusion + recency): keep some of that.
    retrieval = np.array([sources[n - 1].score for n, _, _ in candidates], dtype=np.float32)
    scores = vectors @ q + RETRIEVAL_WEIGHT * retrieval
    chosen: list[tuple[int, int, str]] = []
    per_source: dict[int, int] = {}
    order = list(np.argsort(-scores))
    # The best-ranked source always contributes its best sentence: retrieval saw the
    # whole chunk, the sentence scorer sees sentences alone.
    first = next((i for i in order if candidates[i][0] == candidates[0][0]), None)
    if first is not None:
        order.remove(first)
        order.insert(0, first)
    for index in order:
        number, position, sentence = candidates[index]
        if per_source.get(number, 0) >= MAX_PER_SOURCE:
            continue
        chosen.append((number, position, sentence))
        per_source[number] = per_source.get(number, 0) + 1
        if len(chosen) == MAX_SENTENCES:
            break
    # Read in source order, and in text order within a source.
    chosen.sort(key=lambda c: (c[0], c[1]))
    cited: list[int] = []
    for number, _, _ in chosen:
        if number not in cited:
            cited.append(number)
    text = " ".join(f"{sentence} [{number}]" for number, _, sentence in chosen)
    return text, cited
