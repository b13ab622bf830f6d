"""retrieve: the retrieval engine's single entry point, then the numbered reference material.

k starts at each domain's default_k; ``retrieve_more_info`` raises it (by k_inc, up to
k_max) for this turn only. A malformed filter is reported (``bad_filter``) and the search
runs without filters; a store that could not be searched is reported
(``retrieval_failed``: store, mode and error class only; the detail is in the server
log) and the other stores' hits are used. A field of the user's filters that a routed
domain does not declare is reported once (``filter_dropped``). None ends the turn.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from domains.retrieval import retrieve as retrieval_entry
from domains.retrieval import serialize_reference_material

from ..events import Error
from ..graph import Step, declare
from ..state import TurnState

FAILED_WARNING = "Some sources could not be searched; the answer may be incomplete."


@declare(reads={"query_vector", "queries", "routed", "k", "search_text"},
         writes={"filters", "dropped_filters", "retrieval", "material", "warnings"})
async def retrieve(state: TurnState) -> Step:
    # The question's embedding from classification is reused when it is the only query.
    single = state.query_vector is not None and list(state.queries) == [state.search_question]

    async def search(filters):
        vectors = [state.query_vector] if single else None
        return await sync_to_async(retrieval_entry)(
            state.queries, state.routed, k=state.k, filters=filters, query_vectors=vectors
        )

    try:
        result = await search(state.filters or None)
    except ValueError as exc:
        await state.emit(Error(code="bad_filter", message=f"{exc}; searching without filters", node="retrieve"))
        state.filters = {}
        result = await search(None)
    if result.retrieval_failed:
        await state.emit(Error(code="retrieval_failed", message="; ".join(result.failures), node="retrieve"))
        state.warn(FAILED_WARNING)
    chosen = _field_names(state.request.filters)
    for name, domains in result.dropped_filters.items():
        if name in chosen and name not in state.dropped_filters:
            state.dropped_filters.append(name)
            message = f"filter field {name!r} is not declared by domain(s) {', '.join(domains)}; ignored"
            await state.emit(Error(code="filter_dropped", message=message, node="retrieve"))
    state.retrieval = result
    state.material = serialize_reference_material(result.results)
    k = state.k if state.k is not None else "default"
    detail = f"{len(result.results)} chunks, {len(state.material.sources)} sources (k={k}"
    detail += f", filters on {', '.join(sorted(state.filters))})" if state.filters else ")"
    return Step("next", detail)


def _field_names(filters: dict | None) -> set[str]:
    """The field names of a filter DSL object, inside ``$and`` too."""
    names: set[str] = set()
    stack = [filters or {}]
    while stack:
        current = stack.pop()
        if not isinstance(current, dict):
            continue
        for key, value in current.items():
            if key == "$and" and isinstance(value, list):
                stack += value
            elif isinstance(key, str) and not key.startswith("$"):
                names.add(key)
    return names
