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
    cleaner: AnswerCleaner | None = None,
) -> AnswerCleaner:
    """Start a new attempt and send ``pieces`` as tokens (``<think>`` dropped, citations
    of ``valid`` source numbers renumbered, others removed).

    With a ``cleaner`` given, ``pieces`` are final text (quoted sources keep their own
    brackets) whose citations were made with ``cleaner.cite``.

    ``state.answer_text`` always holds what was sent in this attempt, so an interrupted
    turn can store its partial answer.

    :returns: the cleaner (``cited`` original numbers in citation order, ``dropped``).
    """
    state.attempt += 1
    state.answer_text = ""
    literal = cleaner is not None
    cleaner = cleaner or AnswerCleaner(valid)
    clean = (lambda text: text) if literal else cleaner.feed

    async def send(text: str) -> None:
        if text:
            state.answer_text += text
            await state.emit(Token(text=text, attempt=state.attempt))

    if hasattr(pieces, "aclose"):  # a model stream: closed (HTTP included) on any exit
        async with aclosing(pieces) as stream:
            async for piece in stream:
                await send(clean(piece))
    else:
        for piece in pieces:
            await send(clean(piece))
    if not literal:
        await send(cleaner.close())
    state.answer_text = state.answer_text.rstrip()
    return cleaner


async def say(state: TurnState, text: str) -> None:
    """A fixed reply (refusal, clarification, no sources) as a one-token attempt, verbatim."""
    await stream_attempt(state, [text], cleaner=AnswerCleaner(()))
    state.cited = []
    state.dropped_citations = 0
