"""answer: the cited answer from the numbered reference material, streamed.

Generative backends stream the model's text; the extractive backend streams the best
sentences of the sources (:class:`chat.backends.extractive.Composer`), each run of
sentences from one source cited once.
Either way the text passes through :class:`~chat.pipeline.citations.AnswerCleaner`:
``<think>`` removed, citations renumbered 1..m in citation order, invalid ones dropped
and counted. With no sources at all, no model is asked: the answer says so.
"""

from __future__ import annotations

from chat.backends import extractive

from .. import prompts
from ..citations import AnswerCleaner
from ..graph import Step
from ..state import TurnState
from .classify import query_vector
from .streaming import say, stream_attempt


def no_source_text(domains: list[str]) -> str:
    return f"No source in {', '.join(domains)} answers this question."


async def _extractive_pieces(state: TurnState, cleaner: AnswerCleaner):
    """The composed sentences as text pieces (:meth:`Composer.pieces`); when no sentence
    of the sources is similar enough to the question, the no-source text instead."""
    vector = await query_vector(state)
    spoke = False
    async for piece in extractive.Composer(vector, state.material.sources, state.question).pieces(cleaner.cite):
        spoke = True
        yield piece
    if not spoke:
        state.declined = True
        yield no_source_text(state.domain_names)


async def answer(state: TurnState) -> Step:
    sources = state.material.sources if state.material else []
    state.declined = False
    if not sources:
        state.declined = True
        await say(state, no_source_text(state.domain_names))
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
            tool_results=bool(state.tool_results),
        )
        cleaner = await stream_attempt(state, state.backend.stream(messages), valid=[s.number for s in sources])
    else:
        cleaner = AnswerCleaner([s.number for s in sources])
        await stream_attempt(state, _extractive_pieces(state, cleaner), cleaner=cleaner)
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
