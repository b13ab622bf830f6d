"""The question pipeline: guard -> classify -> route -> generate queries -> retrieve ->
answer -> evaluate (loop) -> respond -> memory, as an explicit async state machine
(chat/pipeline/flow.py) with one typed event stream (chat/pipeline/events.py).

Entry points (docs/pipeline.md)::

    from chat.pipeline import Turn, TurnRequest, ask, run_turn

    request = TurnRequest(question, domains=allowed_domains, session_id=None)
    async for event in run_turn(request):       # or: turn = Turn(request).start()
        print(event.as_dict())
    result = await ask(request)                 # all events; result.answer, result.references
"""

from .events import Answer, Done, Error, Event, References, Stage, Token, ToolCall
from .state import PipelineConfig, TurnRequest
from .turn import Turn, TurnFailed, TurnResult, ask, run_turn

__all__ = [
    "Answer",
    "Done",
    "Error",
    "Event",
    "PipelineConfig",
    "References",
    "Stage",
    "Token",
    "ToolCall",
    "Turn",
    "TurnFailed",
    "TurnRequest",
    "TurnResult",
    "ask",
    "run_turn",
]
