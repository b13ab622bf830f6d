"""Fusion of ranked lists: Reciprocal Rank Fusion (default) and a convex combination.

Input everywhere: a sequence of (label, ranked list) pairs, label "<store>:<mode>" with
mode ``vector`` or ``bm25``, ranked list [(chunk_id, list score)] best first. The same
label may appear several times (one list per search query). Output: [(chunk_id, fused
score, {label: list score})] best first, ties broken by chunk id; when a label has
several lists, the chunk keeps its best score under that label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Ranked = Sequence[tuple[int, float]]
Lists = Sequence[tuple[str, Ranked]] | Mapping[str, Ranked]
Fused = list[tuple[int, float, dict[str, float]]]

# The RRF constant: 1 / (k + rank). The paper's 60 suits fusing many runs; with the two
# lists of a store (BM25 and dense) it let a chunk 5th in both outrank one that BM25 put
# first and the vectors 80th (a fact past the 254-piece embedding window, a table row, a
# name list). k = 5 keeps the head of each list in front: on the answer bench the
# answering file is in the top 5 for 128 instead of 123 of 133 questions, the evidence
# for 121 instead of 113; BEIR SciFact nDCG@10 0.716 -> 0.732 (docs/benchmarks.md,
# "Fusion weights").
RRF_K = 5
# Weight of a list by its mode (the label's ":mode" suffix; 1.0 for other labels):
# score = sum of weight / (k + rank). BM25 counts 1.5 times a dense list: on
# documentation, keyword hits on the question's own terms (setting names, versions,
# proper names) are the more reliable list, and SciFact agrees (1.0 -> 1.5: +0.004).
RRF_WEIGHTS = {"vector": 1.0, "bm25": 1.5}
FUSION_METHODS = ("rrf", "convex")
# Theoretical lower bounds of the list scores, for min-max normalisation (Bruch et al.
# 2022, "TMM"): cosine similarity >= -1, BM25 >= 0. The upper bound is the list's best.
SCORE_FLOOR = {"vector": -1.0, "bm25": 0.0}


def _pairs(ranked_lists: Lists) -> list[tuple[str, Ranked]]:
    return list(ranked_lists.items()) if isinstance(ranked_lists, Mapping) else list(ranked_lists)


def _finish(fused: dict[int, float], sources: dict[int, dict[str, float]]) -> Fused:
    order = sorted(fused, key=lambda cid: (-fused[cid], cid))
    return [(cid, fused[cid], sources[cid]) for cid in order]


def _remember(sources: dict[int, dict[str, float]], chunk_id: int, label: str, score: float) -> None:
    per_chunk = sources.setdefault(chunk_id, {})
    if label not in per_chunk or score > per_chunk[label]:
        per_chunk[label] = score


def reciprocal_rank_fusion(
    ranked_lists: Lists, k: int = RRF_K, weights: Mapping[str, float] = RRF_WEIGHTS
) -> Fused:
    """Weighted RRF (Cormack, Clarke & Buettcher, SIGIR 2009): score = sum over lists of
    weight / (k + rank).

    rank counts from 1 within each list; chunks are keyed by id, so two chunks with
    the same text stay two. With the defaults a chunk first in a dense and a BM25 list
    scores 1 / 6 + 1.5 / 6.

    :param ranked_lists: (label, [(chunk_id, list score)]) pairs or a label -> list
        mapping; empty lists allowed.
    :param k: the RRF constant (RRF_K, 5).
    :param weights: weight per mode, the part of the label after its last ":" (RRF_WEIGHTS);
        a mode not in it weighs 1.0.
    :returns: [(chunk_id, fused score, {label: list score})] best first.
    """
    fused: dict[int, float] = {}
    sources: dict[int, dict[str, float]] = {}
    for label, ranked in _pairs(ranked_lists):
        weight = weights.get(label.rpartition(":")[2], 1.0)
        for rank, (chunk_id, score) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (k + rank)
            _remember(sources, chunk_id, label, score)
    return _finish(fused, sources)


def convex_fusion(ranked_lists: Lists, alpha: float) -> Fused:
    """Convex combination of normalised scores (Bruch, Gai & Ingber 2022).

    Each list's scores are min-max normalised between the theoretical floor of its mode
    (SCORE_FLOOR) and its best score; fused = sum over lists of weight x normalised
    score, weight = ``alpha`` for vector lists and 1 - alpha for BM25 lists. A chunk
    absent from a list gets 0 from it.

    :param alpha: weight of the vector lists in [0, 1].
    :raises ValueError: alpha outside [0, 1], or a label whose mode is not vector/bm25.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"convex fusion alpha must be in [0, 1], got {alpha!r}")
    fused: dict[int, float] = {}
    sources: dict[int, dict[str, float]] = {}
    for label, ranked in _pairs(ranked_lists):
        mode = label.rpartition(":")[2]
        if mode not in SCORE_FLOOR:
            raise ValueError(f"list label {label!r} must end in ':vector' or ':bm25'")
        if not ranked:
            continue
        weight = alpha if mode == "vector" else 1.0 - alpha
        floor, top = SCORE_FLOOR[mode], max(score for _, score in ranked)
        span = top - floor
        for chunk_id, score in ranked:
            normalised = (score - floor) / span if span > 0 else 1.0
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * normalised
            _remember(sources, chunk_id, label, score)
    return _finish(fused, sources)


def fuse(ranked_lists: Lists, method: str = "rrf", alpha: float = 0.5) -> Fused:
    """Dispatch to :func:`reciprocal_rank_fusion` or :func:`convex_fusion`.

    :raises ValueError: an unknown method (allowed: FUSION_METHODS).
    """
    if method == "rrf":
        return reciprocal_rank_fusion(ranked_lists)
    if method == "convex":
        return convex_fusion(ranked_lists, alpha)
    raise ValueError(f"unknown fusion method {method!r}; allowed: {', '.join(FUSION_METHODS)}")
