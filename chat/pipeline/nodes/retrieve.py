"""retrieve: the retrieval engine's single entry point, then the numbered reference material.

k starts at each domain's default_k; ``retrieve_more_info`` raises it (by k_inc, up to
k_max) for this turn only. A malformed filter is reported (``bad_filter``) and the search
runs without filters; a store that could not be searched is reported
(``retrieval_failed``) and the other stores' hits are used. Neither ends the turn.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from domains.retrieval import retrieve as retrieval_entry
from domains.retrieval import serialize_reference_material

from ..events import Error
from ..graph import Step
from ..state import TurnState

FAILED_WARNING = "Some sources could not be searched; the answer may be incomplete."


async def retrieve(state: TurnState) -> Step:
    search = sync_to_async(retrieval_entry)
    try:
        result = await search(state.queries, state.routed, k=state.k, filters=state.filters or None)
    except ValueError as exc:
        await state.emit(Error(code="bad_filter", message=f"{exc}; searching without filters", node="retrieve"))
        state.filters = {}
        result = await search(state.queries, state.routed, k=state.k, filters=None)
    if result.retrieval_failed:
        await state.emit(Error(code="retrieval_failed", message=result.error, node="retrieve"))
        state.warn(FAILED_WARNING)
    state.retrieval = result
    state.material = serialize_reference_material(result.results)
    k = state.k if state.k is not None else "default"
    detail = f"{len(result.results)} chunks, {len(state.material.sources)} sources (k={k}"
    detail += f", filters on {', '.join(sorted(state.filters))})" if state.filters else ")"
    return Step("next", detail)
