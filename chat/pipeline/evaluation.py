"""The evaluator's routing table (docs/pipeline.md, "Evaluation") plus deterministic checks.

Scores are in [0, 1]: confidence and coverage judge the reference material, the other
four judge the answer. The decision, first match wins:

1. every score >= 0.5 -> ``continue``
2. coverage < 0.3, retrieval budget left, queries can change -> ``modify_query``
3. coverage >= 0.5, confidence < 0.5, retrieval budget left, k < k_max -> ``retrieve_more_info``
4. an answer score < 0.5, rewrite budget left -> ``rewrite_answer``
5. the model's own next_step, when it is a retrieval move the budgets allow
6. budgets spent: coverage or confidence < 0.3, or an empty answer ->
   ``fallback`` (general knowledge, when allowed) else ``clarify``; otherwise ``best_effort``.
"""

from __future__ import annotations

from dataclasses import dataclass

SCORE_KEYS = ("confidence", "coverage", "relevance", "groundedness", "coherence", "conciseness")
ANSWER_KEYS = ("relevance", "groundedness", "coherence", "conciseness")
NEXT_STEPS = ("continue", "retrieve_more_info", "modify_query", "rewrite_answer", "undefined")
DECISIONS = (
    "continue", "retrieve_more_info", "modify_query", "rewrite_answer", "best_effort", "fallback", "clarify",
)
# Thresholds of the routing table (the original Klea's values).
GOOD = 0.5
POOR = 0.3

EVALUATION_SCHEMA = {
    "type": "object",
    "properties": {
        **{key: {"type": "number", "minimum": 0, "maximum": 1} for key in SCORE_KEYS},
        "next_step": {"type": "string", "enum": list(NEXT_STEPS)},
        "summary": {"type": "string"},
    },
    "required": [*SCORE_KEYS, "next_step", "summary"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Options:
    """What the loop may still do this turn."""

    retrieval_left: int = 0
    rewrite_left: int = 0
    can_modify_query: bool = False  # the backend writes search queries (the extractive one searches with the question)
    can_grow_k: bool = False
    can_rewrite: bool = False
    can_fallback: bool = False


def validate_evaluation(value: object) -> tuple[dict[str, float], str, str]:
    """A parsed evaluator reply -> (scores clamped to [0, 1], next_step, summary).

    :raises ValueError: a missing or non-numeric score.
    """
    if not isinstance(value, dict):
        raise ValueError("evaluation is not an object")
    scores = {}
    for key in SCORE_KEYS:
        number = value[key]
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ValueError(f"score {key} is not a number")
        scores[key] = min(1.0, max(0.0, float(number)))
    next_step = value.get("next_step") if value.get("next_step") in NEXT_STEPS else "undefined"
    return scores, next_step, str(value.get("summary") or "")


def apply_checks(scores: dict[str, float] | None, checks: dict[str, bool]) -> dict[str, float]:
    """Scores for deciding: the model's (or 1.0 each when there are none), lowered by
    the deterministic checks: no sources -> coverage and confidence 0; empty answer ->
    every answer score 0; no valid citation -> groundedness 0."""
    numbers = dict(scores) if scores else {key: 1.0 for key in SCORE_KEYS}
    if checks.get("no_sources"):
        numbers.update(coverage=0.0, confidence=0.0)
    if checks.get("answer_empty"):
        numbers.update({key: 0.0 for key in ANSWER_KEYS})
    if checks.get("no_valid_citation"):
        numbers["groundedness"] = 0.0
    return numbers


def decide(scores: dict[str, float], next_step: str, options: Options, *, answer_empty: bool = False) -> str:
    """The routing table above. :returns: one of DECISIONS."""
    coverage, confidence = scores["coverage"], scores["confidence"]
    retrieval = options.retrieval_left > 0
    if all(scores[key] >= GOOD for key in SCORE_KEYS):
        return "continue"
    if coverage < POOR and retrieval and options.can_modify_query:
        return "modify_query"
    if coverage >= GOOD and confidence < GOOD and retrieval and options.can_grow_k:
        return "retrieve_more_info"
    if min(scores[key] for key in ANSWER_KEYS) < GOOD and options.rewrite_left > 0 and options.can_rewrite:
        return "rewrite_answer"
    if next_step == "retrieve_more_info" and retrieval and options.can_grow_k:
        return "retrieve_more_info"
    if next_step == "modify_query" and retrieval and options.can_modify_query:
        return "modify_query"
    if coverage < POOR or confidence < POOR or answer_empty:
        return "fallback" if options.can_fallback else "clarify"
    return "best_effort"
