"""The question's embedding (store model), computed once per turn and shared by the
nodes that need it (classification, retrieval, a model-free answer)."""

from __future__ import annotations

import asyncio

from domains import embeddings

from ..state import TurnState


async def query_vector(state: TurnState):
    """The question's embedding, shape (384,), L2-normalised."""
    if state.query_vector is None:
        state.query_vector = await asyncio.to_thread(embeddings.embed_query, state.question)
    return state.query_vector
