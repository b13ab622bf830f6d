"""The reference-material budget: how many retrieved chunks the answer is given."""

from __future__ import annotations

from .types import RetrievedChunk

# Each chunk costs len(text) + CHUNK_OVERHEAD characters of the budget (headers, metadata).
CHUNK_OVERHEAD = 200


def apply_budget(per_domain: list[list[RetrievedChunk]], max_chars: int) -> list[RetrievedChunk]:
    """Take chunks round-robin across domains while the budget lasts.

    A chunk costs ``len(text) + 200``; the first chunk that does not fit ends that
    domain's turn for good (lower-ranked chunks are not used to fill gaps).
    """
    taken: list[RetrievedChunk] = []
    used = 0
    queues = [list(chunks) for chunks in per_domain]
    open_queues = [True] * len(queues)
    while any(open_queues):
        for i, queue in enumerate(queues):
            if not open_queues[i]:
                continue
            if not queue:
                open_queues[i] = False
                continue
            cost = len(queue[0].text) + CHUNK_OVERHEAD
            if used + cost > max_chars:
                open_queues[i] = False
                continue
            taken.append(queue.pop(0))
            used += cost
    return taken
