"""The model-free backend: classification by embedding similarity, extractive answers.

Needs no LLM server, so the product answers end to end on any machine. It writes no
free text (``generative = False``): the pipeline's nodes use the functions below instead
of prompts. Answers are the retrieved chunks' sentences closest to the question, each
followed by the number of the source it came from; evaluation is the deterministic checks
only; guard, query generation and general chat are skipped. It picks no MCP tools
(``supports_tools = False``): choosing a tool and its arguments needs a model, so the
answer comes from the retrieved chunks alone.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
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
# Measured on the documentation corpora (python bench/docs_qa.py): in-domain questions
# score 0.303-0.92, off-topic ones at most 0.238; 0.27 sits midway between the two.
CLASSIFY_THRESHOLD = 0.27
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
# When no sentence of the sources reaches this cosine similarity to the question, the
# sources do not answer it and the turn says so; beyond source 1's best sentence, only
# sentences reaching it are added. Measured (best sentence per question): questions the
# documentation corpora answer score >= 0.38 (this project's terse docs/ 0.38-0.75,
# NeuroML/xarray >= 0.47); the same questions forced into the other domain score
# 0.17-0.65, below 0.35 for 15 of 27. Set low: declining an answerable question is worse.
MIN_SENTENCE_SIMILARITY = 0.35
# Lines of code lose their fences in conversion; in a prose answer they read as noise.
_CODE_START = re.compile(
    r"^(\$ |# |>>> |\.\.\. |\.venv/|import |from \S+ import |export |pip |python |[\w.]+ = "
    r"|(return|def|class|async|await|raise|yield|assert|with|for|if|elif|try|except|print)\b)"
)
_CODE_CHARS = frozenset("=(){}[]<>;$#`\\|_/")
# Embedding every sentence of k chunks costs about a second on 2 cores, so sentences are
# first ranked by a cheap lexical score (question words they contain, weighted by rarity
# among the candidates, plus the chunk's retrieval score); only the best PREFILTER are
# embedded, each cut to SENTENCE_EMBED_CHARS (the opening carries the meaning; the cost
# grows with length, about 4 characters per token).
PREFILTER = 12
SENTENCE_EMBED_CHARS = 300
# Source 1's candidates scored first when none of them is among the PREFILTER best.
FIRST_SOURCE_KEEP = 3
_WORD = re.compile(r"[a-z0-9_]+")
_STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or the this to what when where which "
    "who why with you your my me we our into use using".split()
)
# The running summary of the extractive backend keeps this many characters.
SUMMARY_CHARS = 2_000
# A colon does not end a sentence ("(admin: Ingestion > Staged files)").
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])|\n+")


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


def looks_like_code(sentence: str) -> bool:
    """A shell or Python line, or text dense in code punctuation (over 8% of its characters)."""
    if _CODE_START.match(sentence):
        return True
    return sum(ch in _CODE_CHARS for ch in sentence) > 0.08 * len(sentence)


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


def lexical_scores(question: str, sentences: Sequence[str], chunk_scores: Sequence[float]) -> list[float]:
    """Per sentence: the idf-weighted share of question terms it contains (idf over these
    sentences), plus its chunk's retrieval score; both in [0, 1]."""
    wanted = _terms(question)
    found = [_matches(wanted, sentence) for sentence in sentences]
    count = len(sentences)
    idf = {t: np.log(1 + count / (1 + sum(t in terms for terms in found))) for t in wanted}
    total = sum(idf.values()) or 1.0
    return [sum(idf[t] for t in terms) / total + score for terms, score in zip(found, chunk_scores)]


@dataclass(frozen=True)
class Candidate:
    number: int  # the source's number
    position: int  # the sentence's place within the source (reading order)
    sentence: str
    chunk_score: float


class Composer:
    """Picks up to MAX_SENTENCES sentences of the sources most similar to the question
    (at most MAX_PER_SOURCE per source), in two steps so that the first sentence can be
    sent before the others are scored:

    1. :meth:`first`: the best sentence of source 1 (retrieval saw whole chunks, the
       sentence scorer sees sentences alone, so the best-ranked source always speaks);
    2. :meth:`rest`: the others, in reading order.

    Only the PREFILTER candidates with the best lexical score are embedded.

    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :param sources: numbered sources (``Source.number``), chunks best first.
    """

    def __init__(self, query_vector: np.ndarray, sources: Sequence[Source], question: str):
        self.query_vector = query_vector
        self.candidates: list[Candidate] = []
        for source in sources:
            pairs = [
                (sentence, chunk.score) for chunk in source.chunks
                for sentence in split_sentences(chunk.text) if not looks_like_code(sentence)
            ]
            self.candidates += [Candidate(source.number, i, text, score) for i, (text, score) in enumerate(pairs)]
        lexical = lexical_scores(
            question, [c.sentence for c in self.candidates], [c.chunk_score for c in self.candidates]
        )
        order = sorted(range(len(self.candidates)), key=lambda i: -lexical[i])
        kept = order[:PREFILTER]
        first_number = sources[0].number if sources else None
        self._first = [i for i in kept if self.candidates[i].number == first_number] or [
            i for i in order if self.candidates[i].number == first_number
        ][:FIRST_SOURCE_KEEP]
        self._rest = [i for i in kept if i not in self._first]
        self._scores: dict[int, float] = {}
        self._similar: set[int] = set()  # candidates whose cosine reaches MIN_SENTENCE_SIMILARITY
        self.chosen: list[int] = []

    def _score(self, indexes: list[int]) -> None:
        if not indexes:
            return
        vectors = embeddings.embed_texts([self.candidates[i].sentence[:SENTENCE_EMBED_CHARS] for i in indexes])
        # Retrieval already weighed each chunk (fusion + recency): keep some of that.
        retrieval = np.array([self.candidates[i].chunk_score for i in indexes], dtype=np.float32)
        cosines = vectors @ self.query_vector
        for index, cosine, score in zip(indexes, cosines, cosines + RETRIEVAL_WEIGHT * retrieval):
            self._scores[index] = float(score)
            if cosine >= MIN_SENTENCE_SIMILARITY:
                self._similar.add(index)

    def first(self) -> tuple[int, str] | None:
        """(source number, sentence) of source 1's best sentence; None when it has none."""
        self._score(self._first)
        if not self._first:
            return None
        best = max(self._first, key=lambda i: self._scores[i])
        if best not in self._similar:
            # Source 1 speaks whenever some sentence of the sources answers the question.
            self._score(self._rest)
            if not self._similar:
                return None
        self.chosen.append(best)
        return self.candidates[best].number, self.candidates[best].sentence

    def rest(self) -> list[tuple[int, str]]:
        """The other chosen sentences as (source number, sentence), in reading order."""
        self._score(self._rest)
        per_source: dict[int, int] = {}
        for index in self.chosen:
            per_source[self.candidates[index].number] = per_source.get(self.candidates[index].number, 0) + 1
        picked = []
        for index in sorted(self._scores, key=lambda i: -self._scores[i]):
            number = self.candidates[index].number
            if len(self.chosen) + len(picked) >= MAX_SENTENCES:
                break
            if index in self.chosen or index not in self._similar or per_source.get(number, 0) >= MAX_PER_SOURCE:
                continue
            picked.append(index)
            per_source[number] = per_source.get(number, 0) + 1
        self.chosen += picked
        picked.sort(key=lambda i: (self.candidates[i].number, self.candidates[i].position))
        return [(self.candidates[i].number, self.candidates[i].sentence) for i in picked]

    async def pieces(self, cite: Callable[[int], str]) -> AsyncIterator[str]:
        """The chosen sentences as text pieces, verbatim: source 1's best sentence as soon
        as it is known, then the others; a run of sentences from one source is followed
        once by ``cite(source number)``. Yields nothing when no sentence was found.
        Scoring embeds sentences only (no database), so any worker thread will do."""
        chosen = [first] if (first := await asyncio.to_thread(self.first)) else []
        if chosen:
            yield chosen[0][1]
        for number, sentence in await asyncio.to_thread(self.rest):
            if chosen and chosen[-1][0] != number:
                yield f" {cite(chosen[-1][0])}"
            yield f" {sentence}" if chosen else sentence
            chosen.append((number, sentence))
        if chosen:
            yield f" {cite(chosen[-1][0])}"


def fold_summary(summary: str, messages: Sequence[Message]) -> str:
    """A running summary without a model: one line per message (its first sentence,
    at most 200 characters), appended, the whole cut to the last SUMMARY_CHARS."""
    lines = [summary] if summary else []
    for message in messages:
        first = split_sentences(message["content"])[:1] or [message["content"].strip()]
        lines.append(f"{message['role']}: {first[0][:200]}")
    text = "\n".join(line for line in lines if line)
    return text[-SUMMARY_CHARS:]
