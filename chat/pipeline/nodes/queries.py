"""generate_queries: up to KLEA_RAG_MAX_QUERIES search queries plus typed filter values.

The schema is built per turn from the routed domains' declared fields
(:mod:`chat.pipeline.filters`). An empty or invalid result falls back to the user's own
question (never a skipped search). On a retry the previous queries and the evaluator's
summary are shown. A backend that writes no queries (``can_modify_query`` False, the
extractive one) searches with the question itself, a follow-up together with the
question before it (chat/pipeline/follow_up.py), a generic question with the routed
domains' descriptions (``LLMBackend.search_queries``), KLEA_RAG_MAX_QUERIES at most. Filters the user chose win over
generated ones.
"""

from __future__ import annotations

import json

from chat.backends.structured import ask_json

from .. import prompts
from ..filters import declared_fields, merge_filters, query_schema, to_filter_dsl
from ..graph import Step, declare
from ..state import TurnState


def _validator(fields, max_queries):
    def validate(value: object) -> tuple[list[str], dict]:
        if not isinstance(value, dict) or not isinstance(value.get("queries"), list):
            raise ValueError("queries is not a list")
        queries = [" ".join(q.split()) for q in value["queries"] if isinstance(q, str)]
        queries = list(dict.fromkeys(q for q in queries if q))[:max_queries]
        filters = value.get("filters") or {}
        if not isinstance(filters, dict):
            raise ValueError("filters is not an object")
        return queries, to_filter_dsl(filters, fields)

    return validate


@declare(reads={"routed", "summary", "history", "evaluation", "search_text"}, writes={"queries", "previous_queries", "filters"})
async def generate_queries(state: TurnState) -> Step:
    if state.queries:
        state.previous_queries = list(state.queries)
    generated: dict = {}
    queries: list[str] = []
    note = ""
    if state.backend.can_modify_query:
        fields = declared_fields(state.routed)
        messages = prompts.queries(
            state.question,
            fields,
            state.config.max_queries,
            state.summary,
            state.history,
            previous=state.previous_queries,
            evaluator_summary=state.evaluation.summary if state.evaluation else "",
        )
        schema = query_schema(fields, state.config.max_queries)
        result, invalid = await ask_json(state.backend, messages, schema, _validator(fields, state.config.max_queries))
        if result is None:
            note = " (invalid JSON twice)"
        else:
            queries, generated = result
            note = " (retried once)" if invalid else ""
    if not queries:
        # as many as a model may write (KLEA_RAG_MAX_QUERIES): a generic question routed to 30 described
        # domains would search 31 queries in each of them
        queries = state.backend.search_queries(state.search_question, state.routed)[:state.config.max_queries]
        note = (" (the question)" if queries[0] == state.question else " (the follow-up with the question before it)") + note
        if len(queries) > 1:
            note += " and the domain descriptions"
    state.queries = queries
    state.filters = merge_filters(generated, state.request.filters)
    detail = "; ".join(queries) + note
    if state.filters:
        detail += " | filters " + json.dumps(state.filters, sort_keys=True)
    return Step("next", detail)
