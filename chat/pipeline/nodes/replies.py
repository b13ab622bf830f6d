"""Fixed replies: decline (guard), refuse (no domain fits), clarify (evaluation gave up)."""

from __future__ import annotations

from ..graph import Step, declare
from ..state import TurnState
from .streaming import WRITES as SAID
from .streaming import say

DECLINE_TEXT = "I'm sorry, but I can't help with that request."
GUARD_FAILED_TEXT = "I can't check this question for safety right now, so I won't answer it. Please try again later."


def refusal_text(domains: list[str], hint: str) -> str:
    """The reply when no domain fits; ``hint`` says how to ask one anyway (a chosen
    domain is asked without classification; TurnRequest.pick_hint)."""
    if not domains:
        return "This question does not match any of the available domains (none available)."
    return f"This question does not match any of the available domains ({', '.join(domains)}). {hint}"


def clarify_text(domains: list[str]) -> str:
    return (
        f"I could not find an answer to this in {', '.join(domains)}. "
        "Could you rephrase the question or add details?"
    )


@declare(reads={"guard_failed"}, writes=SAID)
async def decline(state: TurnState) -> Step:
    await say(state, GUARD_FAILED_TEXT if state.guard_failed else DECLINE_TEXT)
    return Step("next", "guard failed" if state.guard_failed else "unsafe")


@declare(reads={"allowed"}, writes=SAID)
async def refuse(state: TurnState) -> Step:
    names = [d.name for d in state.allowed]
    await say(state, refusal_text(names, state.request.pick_hint))
    return Step("next", "lists " + (", ".join(names) or "no domain"))


@declare(reads={"routed"}, writes=SAID)
async def clarify(state: TurnState) -> Step:
    await say(state, clarify_text(state.domain_names))
    return Step("next", "asks for details")
