"""Recency blend: final = 0.9 relevance + 0.1 time (Klea's defaults)."""

from __future__ import annotations

from .types import RetrievedChunk

RELEVANCE_WEIGHT = 0.9
TIME_WEIGHT = 0.1
NO_YEAR_TIME = 0.5  # a chunk without a year sits in the middle of the time scale


def blend_recency(chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """Re-score fused chunks in place and return them sorted best first.

    relevance = min-max normalised fused score (all equal -> 1.0);
    time = (year - oldest) / (newest - oldest) over the chunks with a year
    (all equal -> 1.0; no year -> 0.5). Ties keep the fused order.
    """
    if not chunks:
        return chunks
    scores = [c.score for c in chunks]
    low, high = min(scores), max(scores)
    years = [c.year for c in chunks if c.year is not None]
    oldest, newest = (min(years), max(years)) if years else (0, 0)
    for chunk in chunks:
        relevance = 1.0 if high == low else (chunk.score - low) / (high - low)
        if chunk.year is None:
            time = NO_YEAR_TIME
        elif newest == oldest:
            time = 1.0
        else:
            time = (chunk.year - oldest) / (newest - oldest)
        chunk.score = RELEVANCE_WEIGHT * relevance + TIME_WEIGHT * time
    return sorted(chunks, key=lambda c: -c.score)
