"""guard: a safety model (Llama Guard) reads the question; unsafe -> polite decline.

Llama Guard 3 replies ``safe`` or ``unsafe`` followed by a line of hazard categories
(``S1,S10``). The reply is parsed into a :class:`GuardVerdict`; anything else is a
failure, handled by ``KLEA_RAG_GUARD_ON_ERROR`` (``decline``, the default, or ``allow``)
with an ``error`` event naming the cause. No guard model (or the extractive backend)
skips the step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from chat.backends.base import BackendError

from ..events import Error
from ..graph import Step, declare
from ..state import TurnState

# Llama Guard 3 hazard taxonomy (MLCommons).
HAZARDS = {
    "S1": "violent crimes", "S2": "non-violent crimes", "S3": "sex-related crimes",
    "S4": "child sexual exploitation", "S5": "defamation", "S6": "specialized advice",
    "S7": "privacy", "S8": "intellectual property", "S9": "indiscriminate weapons",
    "S10": "hate", "S11": "suicide and self-harm", "S12": "sexual content",
    "S13": "elections", "S14": "code interpreter abuse",
}
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True)
class GuardVerdict:
    safe: bool
    categories: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.safe:
            return "safe"
        named = [f"{c} ({HAZARDS[c]})" if c in HAZARDS else c for c in self.categories]
        return "unsafe" + (": " + ", ".join(named) if named else "")


def parse_verdict(reply: str) -> GuardVerdict:
    """Llama Guard output -> verdict.

    :raises ValueError: the first line is neither "safe" nor "unsafe".
    """
    lines = [line.strip() for line in _THINK.sub("", reply).splitlines() if line.strip()]
    if not lines:
        raise ValueError("empty reply from the guard model")
    head = lines[0].lower()
    if head == "safe":
        return GuardVerdict(True)
    if head == "unsafe":
        categories = re.findall(r"S\d{1,2}", " ".join(lines[1:]).upper())
        return GuardVerdict(False, list(dict.fromkeys(categories)))
    raise ValueError(f"unexpected guard reply {lines[0][:60]!r}")


@declare(writes={"guard_failed"})
async def guard(state: TurnState) -> Step:
    backend = state.backend
    model = backend.guard_model
    if not model:
        return Step("safe", "skipped (no guard model)")
    try:
        verdict = parse_verdict(await backend.chat([{"role": "user", "content": state.question}], model=model))
    except BackendError as exc:
        code, cause = exc.code, exc.message
    except ValueError as exc:
        code, cause = "guard_failed", f"guard model '{model}' gave {exc}"
    else:
        return Step("safe" if verdict.safe else "unsafe", verdict.describe())
    policy = state.config.guard_on_error
    state.guard_failed = True
    await state.emit(Error(code=code, message=f"{cause} (KLEA_RAG_GUARD_ON_ERROR={policy})", node="guard"))
    return Step("unsafe" if policy == "decline" else "safe", f"failed ({code}); policy {policy}")
