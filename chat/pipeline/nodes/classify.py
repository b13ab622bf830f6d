"""classify: which of the allowed domains the question belongs to (``query_domains``).

The backend decides (:meth:`chat.backends.base.LLMBackend.classify`): a model answers a
JSON schema whose enum is the allowed active domains plus ``undefined`` (built per turn:
only domains this user may query are ever offered); the extractive backend routes by the
evidence of each domain's sources (:mod:`chat.backends.extractive.routing`).
Rules (docs/pipeline.md): unknown names dropped; nothing valid -> ``undefined``;
``undefined`` beside a real domain removed; invalid JSON twice -> ``undefined``.
Domains picked by the user skip classification.
"""

from __future__ import annotations

from chat.backends.base import ClassifyTask

from .. import prompts
from ..graph import Step, declare
from ..state import TurnState
from .question import question_vector

UNDEFINED = "undefined"


def classification_schema(names: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {
            "query_domains": {
                "type": "array",
                "items": {"type": "string", "enum": [*names, UNDEFINED]},
                "minItems": 1,
            }
        },
        "required": ["query_domains"],
        "additionalProperties": False,
    }


def clean_domains(values: list, allowed: list[str]) -> list[str]:
    """Apply the rules above to the model's list; keeps the model's order."""
    names = [v for v in dict.fromkeys(values) if isinstance(v, str) and (v in allowed or v == UNDEFINED)]
    real = [n for n in names if n != UNDEFINED]
    return real or [UNDEFINED]


def _validate(value: object) -> list:
    items = value["query_domains"]
    if not isinstance(items, list):
        raise ValueError("query_domains is not a list")
    return items


@declare(reads={"allowed", "summary", "history", "search_text"}, writes={"query_domains", "query_vector"})
async def classify(state: TurnState) -> Step:
    names = [d.name for d in state.allowed]
    if state.request.pick is not None:
        state.query_domains = [n for n in dict.fromkeys(state.request.pick) if n in names] or [UNDEFINED]
        return Step("next", "picked: " + ", ".join(state.query_domains))
    if not names:
        state.query_domains = [UNDEFINED]
        return Step("next", "undefined (no domain available)")
    task = ClassifyTask(
        question=state.search_question,
        domains=state.allowed,
        messages=prompts.classify(state.question, state.allowed, state.summary, state.history),
        schema=classification_schema(names),
        validate=_validate,
        vector=lambda: question_vector(state),
    )
    result = await state.backend.classify(task)
    state.query_domains = clean_domains(result.domains, names)
    if result.scores is not None:
        detail = ", ".join(f"{n} {result.scores[n]:.2f}" for n in state.query_domains if n in result.scores)
        return Step("next", detail or UNDEFINED)
    return Step("next", ", ".join(state.query_domains) + result.note)


@declare(reads={"query_domains", "allowed"}, writes={"routed"})
async def route(state: TurnState) -> Step:
    """domains -> search; undefined -> general chat (KLEA_RAG_NON_DOMAIN_CHAT and a
    backend that composes text) or a refusal listing the domains."""
    if state.query_domains != [UNDEFINED]:
        by_name = {d.name: d for d in state.allowed}
        state.routed = [by_name[n] for n in state.query_domains]
        return Step("domains", "domains: " + ", ".join(state.domain_names))
    if state.config.non_domain_chat and state.backend.can_compose:
        return Step("general", "general chat")
    return Step("refuse", "refusal")
