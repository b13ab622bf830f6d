"""Model-free answers: the sentences of the sources closest to the question, cited.

Sentences are first ranked by a cheap lexical score, then the best are embedded and
ranked by cosine similarity to the question (plus some of their chunk's retrieval score).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from domains import embeddings

from .text import looks_like_code, matches, split_sentences, terms

# Weight of the retrieval score (0..1) against sentence-question cosine in answers.
RETRIEVAL_WEIGHT = 0.15
MAX_SENTENCES = 3
MAX_PER_SOURCE = 2
# When no sentence of the sources reaches this cosine similarity to the question, the
# sources do not answer it and the turn says so; beyond source 1's best sentence, only
# sentences reaching it are added. Measured (best sentence per question): questions the
# documentation corpora answer score >= 0.38 (this project's terse docs/ 0.38-0.75,
# NeuroML/xarray >= 0.47); the same questions forced into the other domain score
# 0.17-0.65, below 0.35 for 15 of 27. Set low: declining an answerable question is worse.
MIN_SENTENCE_SIMILARITY = 0.35
# Embedding every sentence of k chunks costs about a second on 2 cores, so sentences are
# first ranked by a cheap lexical score (question words they contain, weighted by rarity
# among the candidates, plus the chunk's retrieval score); only the best PREFILTER are
# embedded, each cut to SENTENCE_EMBED_CHARS (the opening carries the meaning; the cost
# grows with length, about 4 characters per token).
PREFILTER = 12
SENTENCE_EMBED_CHARS = 300
# Source 1's candidates scored first when none of them is among the PREFILTER best.
FIRST_SOURCE_KEEP = 3


def lexical_scores(question: str, sentences: Sequence[str], chunk_scores: Sequence[float]) -> list[float]:
    """Per sentence: the idf-weighted share of question terms it contains (idf over these
    sentences), plus its chunk's retrieval score; both in [0, 1]."""
    wanted = terms(question)
    found = [matches(wanted, sentence) for sentence in sentences]
    count = len(sentences)
    idf = {t: np.log(1 + count / (1 + sum(t in hit for hit in found))) for t in wanted}
    total = sum(idf.values()) or 1.0
    return [sum(idf[t] for t in hit) / total + score for hit, score in zip(found, chunk_scores)]


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
