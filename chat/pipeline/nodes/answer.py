"""answer: the cited answer from the numbered reference material, streamed.

The backend writes it (:meth:`chat.backends.base.LLMBackend.answer`): a model from the
answer prompt, the extractive backend by quoting the passages of the sources that state
the answer (:mod:`chat.backends.extractive`). Either way citations go through one
:class:`~chat.pipeline.citations.AnswerCleaner`: ``<think>`` removed, citations
renumbered 1..m in citation order, invalid ones dropped and counted. With no sources at
all, no backend is asked; when the backend finds nothing in them that answers, the
answer says so.
"""

from __future__ import annotations

from contextlib import aclosing

from chat.backends.base import AnswerTask

from .. import prompts
from ..citations import AnswerCleaner
from ..graph import Step
from ..state import TurnState
from .question import query_vector
from .streaming import say, stream_attempt


def no_source_text(domains: list[str]) -> str:
    return f"No source in {', '.join(domains)} answers this question."


async def _pieces(state: TurnState, task: AnswerTask):
    """The backend's answer pieces; when it finds nothing in the sources that answers
    the question, the no-source text instead."""
    spoke = False
    async with aclosing(state.backend.answer(task)) as pieces:  # a model's HTTP stream closes with it
        async for piece in pieces:
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
    cleaner = AnswerCleaner([s.number for s in sources])
    task = AnswerTask(state.question, sources, messages, vector=lambda: query_vector(state), citer=cleaner)
    await stream_attempt(state, _pieces(state, task), cleaner=cleaner)
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
