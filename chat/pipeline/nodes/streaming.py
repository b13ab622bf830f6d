"""Answer text out as ``token`` events: one attempt at a time, cleaned on the fly."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from contextlib import aclosing

from ..citations import AnswerCleaner
from ..events import Token
from ..state import TurnState


async def stream_attempt(
    state: TurnState,
    pieces: AsyncIterable[str] | Iterable[str],
    *,
    valid: Iterable[int] = (),
) -> AnswerCleaner:
    """Start a new attempt and send ``pieces`` as tokens (``<think>`` dropped, citations
    of ``valid`` source numbers renumbered, others removed).

    ``state.answer_text`` always holds what was sent in this attempt, so an interrupted
    turn can store its partial answer.

    :returns: the cleaner (``cited`` original numbers in citation order, ``dropped``).
    """
    state.attempt += 1
    state.answer_text = ""
    cleaner = AnswerCleaner(valid)

    async def send(text: str) -> None:
        if text:
            state.answer_text += text
            await state.emit(Token(text=text, attempt=state.attempt))

    if hasattr(pieces, "aclose"):  # a model stream: closed (HTTP included) on any exit
        async with aclosing(pieces) as stream:
            async for piece in stream:
                await send(cleaner.feed(piece))
    else:
        for piece in pieces:
            await send(cleaner.feed(piece))
    await send(cleaner.close())
    state.answer_text = state.answer_text.rstrip()
    return cleaner


async def say(state: TurnState, text: str) -> None:
    """A fixed reply (refusal, clarification) as a one-token attempt."""
    await stream_attempt(state, [text])
    state.cited = []
    state.dropped_citations = 0
