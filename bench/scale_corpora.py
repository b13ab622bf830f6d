"""The two generated corpora of the scale benchmarks (bench/latency.py, bench/hnsw_recall.py).

Both are derived from SciFact (5,183 abstracts) and yield ``(text, vector)`` pairs,
deterministic for a seed; the queries are the SciFact test claims with their real
embeddings.

- ``synthetic`` (near-duplicates): 3-6 consecutive sentences of a random abstract plus
  one sentence of another; vector = the abstract's embedding + Gaussian noise (cosine
  ~0.85 to it). At 1M each abstract recurs ~190 times, so neighbours form tight
  clusters, the hard case for HNSW.
- ``realtext``: 3-6 sentences, each from a different random abstract; vector = the
  L2-normalised mean of the sentences' own embeddings (each sentence embedded once,
  cached under var/bench-cache). The mean approximates embedding the chunk's text (the
  model is not run per chunk: 1M chunks would take hours), and chunks do not cluster
  by abstract.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from bench.common import cached_embeddings, load_qrels, load_scifact, scifact_dir

CORPORA = ("synthetic", "realtext")
NOISE = 0.6  # norm of the noise added to a unit vector: cosine ~0.85 to the abstract
QUERIES = 100
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MIN_SENTENCE_CHARS = 20  # shorter pieces are headings or split abbreviations


def _synthetic(size: int, texts: list[str], vectors: np.ndarray, seed: int) -> Iterator[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    sentences = [_SENTENCE.split(t) for t in texts]
    for _ in range(size):
        j, other = rng.integers(len(texts), size=2)
        own = sentences[j]
        n = int(rng.integers(3, 7))
        start = int(rng.integers(max(1, len(own) - n + 1)))
        extra = sentences[other][int(rng.integers(len(sentences[other])))]
        text = " ".join(own[start : start + n] + [extra])
        noise = rng.normal(size=vectors.shape[1]).astype(np.float32)
        vector = vectors[j] + NOISE * noise / np.linalg.norm(noise)
        yield text, vector / np.linalg.norm(vector)


def sentences(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """(sentences, abstract index of each) of the SciFact abstracts, short pieces dropped."""
    out, owner = [], []
    for j, text in enumerate(texts):
        for sentence in _SENTENCE.split(text):
            if len(sentence) >= MIN_SENTENCE_CHARS:
                out.append(sentence)
                owner.append(j)
    return out, np.asarray(owner)


def _realtext(size: int, texts: list[str], seed: int) -> Iterator[tuple[str, np.ndarray]]:
    pieces, owner = sentences(texts)
    embedded = cached_embeddings("scifact-sentences", pieces, scifact_dir() / "corpus.jsonl")
    rng = np.random.default_rng(seed)
    for _ in range(size):
        n = int(rng.integers(3, 7))
        picked: list[int] = []
        while len(picked) < n:  # n sentences of n different abstracts
            i = int(rng.integers(len(pieces)))
            if all(owner[i] != owner[p] for p in picked):
                picked.append(i)
        vector = embedded[picked].mean(axis=0)
        yield " ".join(pieces[i] for i in picked), vector / np.linalg.norm(vector)


def chunks(corpus: str, size: int, seed: int = 1) -> Iterator[tuple[str, np.ndarray]]:
    """``size`` (text, float32 unit vector) pairs of ``corpus`` (one of CORPORA)."""
    _, texts, _ = load_scifact()
    if corpus == "synthetic":
        vectors = cached_embeddings("scifact-corpus", texts, scifact_dir() / "corpus.jsonl")
        return _synthetic(size, texts, vectors, seed)
    if corpus == "realtext":
        return _realtext(size, texts, seed)
    raise ValueError(f"unknown corpus {corpus!r}; one of {', '.join(CORPORA)}")


def queries() -> tuple[list[str], list[np.ndarray]]:
    """The first QUERIES SciFact test claims (by id) and their embeddings."""
    _, _, all_queries = load_scifact()
    qids = sorted(all_queries)
    matrix = cached_embeddings("scifact-queries", [all_queries[q] for q in qids], scifact_dir() / "queries.jsonl")
    by_id = dict(zip(qids, matrix))
    test = sorted(load_qrels("test"))[:QUERIES]
    return [all_queries[q] for q in test], [by_id[q] for q in test]
