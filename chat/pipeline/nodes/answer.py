"""answer: the cited answer from the numbered reference material, streamed.

Generative backends stream the model's text; the extractive backend streams the best
sentences of the sources (:func:`chat.backends.extractive.compose_answer`), each cited.
Either way the text passes through :class:`~chat.pipeline.citations.AnswerCleaner`:
``<think>`` removed, citations renumbered 1..m in citation order, invalid ones dropped
and counted. With no sources at all, no model is asked: the answer says so.
"""

from __future__ import annotations

import asyncio

from chat.backends import extractive

from .. import prompts
from ..graph import Step
from ..state import TurnState
from .classify import query_vector
from .streaming import stream_attempt


def no_source_text(domains: list[str]) -> str:
    return f"No source in {', '.join(domains)} answers this question."


async def _extractive_pieces(state: TurnState) -> list[str]:
    """Sentences in reading order; a run of sentences from one source is cited once."""
    vector = await query_vector(state)
    # Embedding only (no database): any worker thread will do.
    chosen = await asyncio.to_thread(extractive.compose_answer, vector, state.material.sources, state.question)
    pieces = []
    for index, (number, sentence) in enumerate(chosen):
        last_of_run = index + 1 == len(chosen) or chosen[index + 1][0] != number
        pieces.append(f"{sentence} [{number}] " if last_of_run else f"{sentence} ")
    return pieces


async def answer(state: TurnState) -> Step:
    sources = state.material.sources if state.material else []
    if not sources:
        await stream_attempt(state, [no_source_text(state.domain_names)])
        state.cited, state.dropped_citations = [], 0
        return Step("next", "no sources")
    rewrite = state.evaluation is not None and state.evaluation.decision == "rewrite_answer"
    if state.backend.generative:
        messages = prompts.answer(
            state.question,
            state.material.text,
            len(sources),
            [d.instructions for d in state.routed],
            state.summary,
            state.history,
            previous_answer=state.answer_text if rewrite else "",
            evaluator_summary=state.evaluation.summary if rewrite else "",
        )
        pieces = state.backend.stream(messages)
    else:
        pieces = await _extractive_pieces(state)
    cleaner = await stream_attempt(state, pieces, valid=[s.number for s in sources])
    by_number = {s.number: s for s in sources}
    state.cited = [by_number[n] for n in cleaner.cited]
    state.dropped_citations = cleaner.dropped
    detail = f"{len(state.answer_text)} chars, cites {len(state.cited)} of {len(sources)} sources"
    if cleaner.dropped:
        detail += f", dropped {cleaner.dropped} invalid citation(s)"
    return Step("next", ("rewrite: " if rewrite else "") + detail)


async def general_chat(state: TurnState) -> Step:
    """An answer from the model's own knowledge: for questions no domain covers, or as
    the evaluator's fallback (with a warning, set by evaluate)."""
    if state.route == "domains":
        state.route = "fallback"
    messages = prompts.general(state.question, state.summary, state.history)
    await stream_attempt(state, state.backend.stream(messages))
    state.cited, state.dropped_citations = [], 0
    return Step("next", f"{len(state.answer_text)} chars")
