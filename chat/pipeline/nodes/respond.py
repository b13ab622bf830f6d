"""respond: the final ``references`` and ``answer`` events."""

from __future__ import annotations

from ..events import Answer, References
from ..graph import Step, declare
from ..references import reference_list
from ..state import TurnState


@declare(reads={"cited", "answer_text", "routed", "dropped_citations", "evaluation", "warnings", "assistant_message_id"})
async def respond(state: TurnState) -> Step:
    await state.emit(References(references=reference_list(state.cited)))
    await state.emit(
        Answer(
            text=state.answer_text,
            route=state.route,
            domains=state.domain_names,
            citations=list(range(1, len(state.cited) + 1)),
            dropped_citations=state.dropped_citations,
            evaluation=state.evaluation.as_dict() if state.evaluation else {},
            warnings=list(state.warnings),
            session_id=state.request.session_id,
            message_id=state.assistant_message_id,
        )
    )
    return Step("next", f"{state.route}, {len(state.cited)} references")
