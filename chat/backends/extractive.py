"""The model-free backend: classification by embedding similarity, extractive answers.

Needs no LLM server, so the product answers end to end on any machine. It writes no
free text (``generative = False``): the pipeline's nodes use the functions below instead
of prompts. Answers are the retrieved chunks' sentences closest to the question, each
followed by the number of the source it came from; evaluation is the deterministic checks
only; guard, query generation and general chat are skipped.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from django.db import connection, transaction

from domains import embeddings
from domains.models import Domain
from domains.retrieval import Source

from .base import LLMBackend, Message, NotSupported

# A domain is routed when its best signal reaches CLASSIFY_THRESHOLD: the cosine
# similarity of the question to the domain's nearest chunk, or to its description.
# Measured on the documentation corpora (tests/doc_questions.py): in-domain questions
# score 0.31-0.92, off-topic ones 0.14-0.25.
CLASSIFY_THRESHOLD = 0.3
# Domains within this margin of the best one are routed too (multi-domain questions).
CLASSIFY_MARGIN = 0.03
# How many nearest chunks (of the allowed domains' stores, HNSW) the classifier reads;
# also the HNSW candidate list size (pgvector's ef_search, default 40, caps a LIMIT).
NEAREST_PROBE = 100
# Weight of the retrieval score (0..1) against sentence-question cosine in answers.
RETRIEVAL_WEIGHT = 0.15
MAX_SENTENCES = 3
MAX_PER_SOURCE = 2
MIN_SENTENCE_CHARS = 25
# Embedding every sentence of k chunks costs about a second on 2 cores, so sentences are
# first ranked by a cheap lexical score (question words they contain, weighted by rarity
# among the candidates, plus the chunk's retrieval score); only the best PREFILTER are
# embedded, each cut to SENTENCE_EMBED_CHARS (the opening carries the meaning; the cost
# grows with length, about 4 characters per token).
PREFILTER = 12
SENTENCE_EMBED_CHARS = 300
_WORD = re.compile(r"[a-z0-9_]+")
_STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or the this to what when where which "
    "who why with you your my me we our into use using".split()
)
# The running summary of the extractive backend keeps this many characters.
SUMMARY_CHARS = 2_000
_SENTENCE = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9\"'(\[`])|\n+")


class ExtractiveBackend(LLMBackend):
    """No model server: embeddings only (the store embedding model, all-MiniLM-L6-v2)."""

    name = "extractive"
    generative = False

    @property
    def chat_model(self) -> str:
        return ""

    async def chat(self, messages: Sequence[Message], *, schema: dict | None = None, model: str | None = None) -> str:
        raise NotSupported("the extractive backend writes no free text; set KLEA_LLM_BACKEND to ollama or openai")

    async def stream(self, messages: Sequence[Message], *, model: str | None = None):
        raise NotSupported("the extractive backend writes no free text; set KLEA_LLM_BACKEND to ollama or openai")
        yield ""  # pragma: no cover  (makes this an async generator)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(embeddings.embed_texts, list(texts))
        return vectors.tolist()


@dataclass(frozen=True)
class DomainScore:
    domain: Domain
    score: float


@lru_cache(maxsize=256)
def _description_vector(text: str) -> np.ndarray:
    return embeddings.embed_texts([text])[0]


def nearest_chunk_similarity(query_vector: np.ndarray, domains: Sequence[Domain]) -> dict[int, float]:
    """Per domain id, the cosine similarity of its nearest chunk among the NEAREST_PROBE
    nearest chunks of the given domains' stores (HNSW; reads ``domain.stores.all()``).
    Domains with no chunk in the probe are absent."""
    store_ids = [store.id for domain in domains for store in domain.stores.all()]
    if not store_ids:
        return {}
    literal = "[" + ",".join(f"{x:.8g}" for x in query_vector.tolist()) + "]"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {int(NEAREST_PROBE)}")
        cursor.execute(
            """
            SELECT s.domain_id, max(n.similarity) FROM (
                SELECT store_id, 1 - (embedding <=> %(q)s::vector) AS similarity
                FROM domains_chunk WHERE embedding IS NOT NULL AND store_id = ANY(%(stores)s)
                ORDER BY embedding <=> %(q)s::vector LIMIT %(probe)s
            ) n JOIN domains_store s ON s.id = n.store_id
            GROUP BY s.domain_id
            """,
            {"q": literal, "probe": NEAREST_PROBE, "stores": store_ids},
        )
        return {domain_id: float(similarity) for domain_id, similarity in cursor.fetchall()}


def score_domains(query_vector: np.ndarray, domains: Sequence[Domain]) -> list[DomainScore]:
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


def classify(query_vector: np.ndarray, domains: Sequence[Domain]) -> list[DomainScore]:
    """The domains the question belongs to, best first; [] means "undefined"."""
    scores = score_domains(query_vector, domains)
    if not scores or scores[0].score < CLASSIFY_THRESHOLD:
        return []
    top = scores[0].score
    return [s for s in scores if s.score >= max(CLASSIFY_THRESHOLD, top - CLASSIFY_MARGIN)]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) >= MIN_SENTENCE_CHARS]


def _terms(text: str) -> set[str]:
    """Lower-cased words without stop words, crudely stemmed (plural/verb endings)."""
    terms = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP_WORDS or len(word) < 2:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        terms.add(word)
    return terms


def _matches(wanted: set[str], text: str) -> set[str]:
    """The question terms found in ``text``: as a word, or as the start of one
    ("izhikevich" in "izhikevich2007_network")."""
    words = _terms(text)
    return {t for t in wanted if t in words or any(w.startswith(t) for w in words)}


def prefilter(question: str, candidates: list, keep: int = PREFILTER) -> list[int]:
    """Indexes of the ``keep`` candidates (``(number, position, sentence, chunk score)``)
    with the best lexical score: the idf-weighted share of question terms in the
    sentence, plus the chunk's retrieval score (both in [0, 1]); in original order."""
    if len(candidates) <= keep:
        return list(range(len(candidates)))
    wanted = _terms(question)
    found = [_matches(wanted, c[2]) for c in candidates]
    count = len(candidates)
    idf = {t: np.log(1 + count / (1 + sum(t in terms for terms in found))) for t in wanted}
    total = sum(idf.values()) or 1.0
    scores = [sum(idf[t] for t in terms) / total + c[3] for terms, c in zip(found, candidates)]
    return sorted(sorted(range(count), key=lambda i: -scores[i])[:keep])


def compose_answer(query_vector: np.ndarray, sources: Sequence[Source], question: str = "") -> list[tuple[int, str]]:
    """Pick the sources' sentences most similar to the question.

    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :param sources: numbered sources (``Source.number``), chunks best first.
    :param question: the question's text, for the lexical prefilter.
    :returns: [(source number, sentence)] in reading order (source order, then text
        order); [] when no sentence qualifies.
    """
    candidates: list[tuple[int, int, str, float]] = []  # (number, position, sentence, chunk score)
    for source in sources:
        position = 0
        for chunk in source.chunks:
            for sentence in split_sentences(chunk.text):
                candidates.append((source.number, position, sentence, chunk.score))
                position += 1
    if not candidates:
        return []
    candidates = [candidates[i] for i in prefilter(question, candidates)]
    vectors = embeddings.embed_texts([c[2][:SENTENCE_EMBED_CHARS] for c in candidates])
    # Retrieval already weighed each chunk (fusion + recency): keep some of that.
    retrieval = np.array([c[3] for c in candidates], dtype=np.float32)
    scores = vectors @ query_vector + RETRIEVAL_WEIGHT * retrieval
    order = [int(i) for i in np.argsort(-scores, kind="stable")]
    # The first source always contributes its best sentence: retrieval saw whole
    # chunks, the sentence scorer sees sentences alone.
    first = next((i for i in order if candidates[i][0] == sources[0].number), None)
    if first is not None:
        order.remove(first)
        order.insert(0, first)
    chosen: list[tuple[int, int, str]] = []
    per_source: dict[int, int] = {}
    for index in order:
        number, position, sentence, _ = candidates[index]
        if per_source.get(number, 0) >= MAX_PER_SOURCE:
            continue
        chosen.append((number, position, sentence))
        per_source[number] = per_source.get(number, 0) + 1
        if len(chosen) == MAX_SENTENCES:
            break
    chosen.sort(key=lambda c: (c[0], c[1]))
    return [(number, sentence) for number, _, sentence in chosen]


def fold_summary(summary: str, messages: Sequence[Message]) -> str:
    """A running summary without a model: one line per message (its first sentence,
    at most 200 characters), appended, the whole cut to the last SUMMARY_CHARS."""
    lines = [summary] if summary else []
    for message in messages:
        first = split_sentences(message["content"])[:1] or [message["content"].strip()]
        lines.append(f"{message['role']}: {first[0][:200]}")
    text = "\n".join(line for line in lines if line)
    return text[-SUMMARY_CHARS:]
