"""Answer text out as ``token`` events, one attempt at a time."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from contextlib import aclosing

from ..events import Token
from ..state import TurnState

# The state fields an answering node writes through these helpers.
WRITES = frozenset({"attempt", "answer_text", "cited", "dropped_citations"})


async def stream_attempt(state: TurnState, pieces: AsyncIterable[str] | Iterable[str]) -> None:
    """Start a new attempt and send ``pieces`` (final text: cleaned by the answer core,
    :mod:`chat.answers`) as tokens.

    ``state.answer_text`` always holds what was sent in this attempt, so an interrupted
    turn can store its partial answer.
    """
    state.attempt += 1
    state.answer_text = ""

    async def send(text: str) -> None:
        if text:
            state.answer_text += text
            await state.emit(Token(text=text, attempt=state.attempt))

    if hasattr(pieces, "aclose"):  # a model stream: closed (HTTP included) on any exit
        async with aclosing(pieces) as stream:
            async for piece in stream:
                await send(piece)
    else:
        for piece in pieces:
            await send(piece)
    state.answer_text = state.answer_text.rstrip()


async def say(state: TurnState, text: str) -> None:
    """A fixed reply (refusal, clarification, no sources) as a one-token attempt, verbatim."""
    await stream_attempt(state, [text])
    state.cited = []
    state.dropped_citations = 0
