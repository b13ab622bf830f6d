"""The question's embedding (the store model's), computed once per turn: classification
and the extractive answer read it, retrieval reuses it for a single query. A follow-up
is embedded together with the question(s) before it (``TurnState.search_question``)."""

from __future__ import annotations

import asyncio

from domains import embeddings

from ..state import TurnState


async def question_vector(state: TurnState):
    """numpy (384,), L2-normalised; cached in ``state.query_vector``."""
    if state.query_vector is None:
        state.query_vector = await asyncio.to_thread(embeddings.embed_query, state.search_question)
    return state.query_vector
