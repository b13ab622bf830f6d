"""Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# k = 60 as in the paper: damps the weight of the very first ranks so that agreement
# between lists matters more than a single list's top position.
RRF_K = 60


def reciprocal_rank_fusion(
    ranked_lists: Mapping[str, Sequence[tuple[int, float]]], k: int = RRF_K
) -> list[tuple[int, float, dict[str, float]]]:
    """Fuse ranked lists keyed by a label such as ``"docs:vector"``.

    score(chunk) = sum over lists of 1 / (k + rank), rank counted from 1.

    :param ranked_lists: label -> [(chunk_id, list score)] best first; empty lists allowed.
    :returns: [(chunk_id, fused score, {label: list score})] best first; ties broken by
        chunk id so the order is deterministic.
    """
    fused: dict[int, float] = {}
    sources: dict[int, dict[str, float]] = {}
    for label, ranked in ranked_lists.items():
        for rank, (chunk_id, score) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (k + rank)
            sources.setdefault(chunk_id, {})[label] = score
    order = sorted(fused, key=lambda cid: (-fused[cid], cid))
    return [(cid, fused[cid], sources[cid]) for cid in order]
