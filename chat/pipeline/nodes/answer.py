"""answer: the cited answer from the numbered reference material, streamed, through the
answer core (:class:`chat.answers.compose.Composition`, shared with ``chat.rag``):
``<think>`` removed, citations renumbered 1..m in citation order, invalid ones dropped
and counted. When the extractive backend finds nothing in the sources that answers, and
with no sources at all (no model is asked), the answer says so.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from chat.answers.citations import AnswerCleaner
from chat.answers.compose import Composition, cleaned
from domains.retrieval import question_language

from .. import prompts
from ..graph import Step, declare
from ..state import TurnState
from .question import question_vector
from .streaming import WRITES, say, stream_attempt


def no_source_text(domains: list[str], language: str = "english") -> str:
    """The answer when no source of ``domains`` answers; for a question in another
    language (:func:`domains.retrieval.question_language`) with the likely reason
    (:func:`other_language_text`): its names and numbers routed it, its words matched nothing."""
    text = f"No source in {', '.join(domains)} answers this question."
    return text if language == "english" else f"{text} {other_language_text(language)}"


def other_language_text(language: str) -> str:
    """Why a question in another language (its name lower-case, or "other") finds little:
    the sources are matched with an English embedding model."""
    asked = "not to be in English" if language == "other" else f"to be in {language.capitalize()}"
    return (f"This question seems {asked}. Klea matches questions to its sources in English (its embedding "
            "model, all-MiniLM-L6-v2, was trained on English text), so please ask it in English.")


@declare(reads={"material", "evaluation", "routed", "summary", "history", "tool_results", "search_text", "queries"},
         writes=WRITES | {"declined", "query_vector"})
async def answer(state: TurnState) -> Step:
    sources = state.material.sources if state.material else []
    state.declined = False
    # Read before any text is sent: the text saying that no source answers names the language.
    language = await sync_to_async(question_language)(state.question)
    if not sources:
        state.declined = True
        await say(state, no_source_text(state.domain_names, language))
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
    composition = Composition(
        state.backend, state.question, state.material, messages,
        search_text=state.search_text, queries=state.queries,
        vector=lambda: question_vector(state), fallback=lambda cite: no_source_text(state.domain_names, language),
    )
    await stream_attempt(state, composition.pieces())
    state.declined = composition.declined
    state.cited = composition.cited
    state.dropped_citations = composition.dropped
    detail = f"{len(state.answer_text)} chars, cites {len(state.cited)} of {len(sources)} sources"
    if composition.dropped:
        detail += f", dropped {composition.dropped} invalid citation(s)"
    return Step("next", ("rewrite: " if rewrite else "") + detail)


@declare(reads={"summary", "history"}, writes=WRITES)
async def general_chat(state: TurnState) -> Step:
    """An answer from the model's own knowledge: for questions no domain covers, or as
    the evaluator's fallback (with a warning, set by evaluate). It cites nothing."""
    messages = prompts.general(state.question, state.summary, state.history)
    await stream_attempt(state, cleaned(state.backend.stream(messages), AnswerCleaner(())))
    state.cited, state.dropped_citations = [], 0
    return Step("next", f"{len(state.answer_text)} chars")
