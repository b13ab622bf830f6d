"""evaluate: model scores + next_step, deterministic checks, then the routing table
(:mod:`chat.pipeline.evaluation`) within this turn's budgets.

Deterministic checks: ``no_sources``, ``no_valid_citation``, ``answer_empty``. With no
sources or an empty answer the model is not asked. A backend that cannot review
(``can_review`` False, the extractive one) has the checks only (``scores`` is None).
Best-effort and fallback answers get a warning, except an answer saying that no source
answers the question.
"""

from __future__ import annotations

from chat.backends.structured import ask_json

from .. import prompts
from ..evaluation import EVALUATION_SCHEMA, Options, apply_checks, decide, validate_evaluation
from ..graph import Step, declare
from ..state import Evaluation, TurnState

PARTIAL_WARNING = "The sources only partly cover this question; the answer may be incomplete."
FALLBACK_WARNING = "The sources do not cover this question; this answer comes from the model's general knowledge."


def _k_now(state: TurnState) -> int:
    return state.k if state.k is not None else max(d.default_k for d in state.routed)


def _k_max(state: TurnState) -> int:
    return max(d.k_max for d in state.routed)


def _options(state: TurnState) -> Options:
    backend = state.backend
    return Options(
        retrieval_left=state.config.retrieval_budget - state.runs["retrieve"],
        rewrite_left=state.config.rewrite_budget - state.rewrites,
        can_modify_query=backend.can_modify_query,
        can_grow_k=_k_now(state) < _k_max(state),
        can_rewrite=backend.can_compose,
        can_fallback=backend.can_compose and state.config.non_domain_chat,
    )


@declare(reads={"material", "cited", "answer_text", "declined", "routed"},
         writes={"evaluation", "k", "rewrites", "warnings"})
async def evaluate(state: TurnState) -> Step:
    sources = state.material.sources if state.material else []
    checks = {
        "no_sources": not sources,
        "no_valid_citation": bool(sources) and not state.cited,
        "answer_empty": not state.answer_text.strip(),
    }
    record = Evaluation(checks=checks)
    note = ""
    if state.backend.can_review and not checks["no_sources"] and not checks["answer_empty"]:
        messages = prompts.evaluate(state.question, state.material.text, state.answer_text)
        result, invalid = await ask_json(state.backend, messages, EVALUATION_SCHEMA, validate_evaluation)
        if result is None:
            note = " (invalid JSON twice: checks only)"
        else:
            record.scores, record.next_step, record.summary = result
            note = " (retried once)" if invalid else ""
    numbers = apply_checks(record.scores, checks)
    record.decision = decide(numbers, record.next_step, _options(state), answer_empty=checks["answer_empty"])
    state.evaluation = record
    if record.decision == "retrieve_more_info":
        state.k = min(_k_max(state), _k_now(state) + max(d.k_inc for d in state.routed))
    elif record.decision == "rewrite_answer":
        state.rewrites += 1
    elif record.decision == "best_effort" and not state.declined:
        state.warn(PARTIAL_WARNING)
    elif record.decision == "fallback":
        state.warn(FALLBACK_WARNING)
    failed = [name for name, bad in checks.items() if bad]
    detail = record.decision + (f" [{', '.join(failed)}]" if failed else "") + note
    if record.decision == "retrieve_more_info":
        detail += f" (k={state.k})"
    return Step(record.decision, detail)
