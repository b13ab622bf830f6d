"""Running turns from synchronous tests, and a compact, exact rendering of events.

Turns run through ``async_to_sync`` so that the pipeline's ORM calls come back to the
test's thread and see the test's transaction.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync

from chat.pipeline import Answer, Done, Error, References, Stage, Token, TurnRequest, TurnResult, ask


def run(question: str, domains, **kwargs) -> TurnResult:
    """One turn; ``kwargs``: session_id, pick, filters (TurnRequest) and backend, config."""
    request_keys = {"session_id", "pick", "filters"}
    request = TurnRequest(question, domains=list(domains), **{k: v for k, v in kwargs.items() if k in request_keys})
    return async_to_sync(ask)(request, **{k: v for k, v in kwargs.items() if k not in request_keys})


def render(event) -> str:
    if isinstance(event, Stage):
        return f"> {event.node}" if event.phase == "start" else f"< {event.node}: {event.detail}"
    if isinstance(event, Token):
        return f"token {event.attempt}: {event.text}"
    if isinstance(event, Error):
        return f"error {event.code} ({event.node}{', fatal' if event.fatal else ''}): {event.message}"
    if isinstance(event, References):
        return "references: " + ", ".join(f"[{r['number']}] {r['file_name']}" for r in event.references)
    if isinstance(event, Answer):
        return f"answer {event.route}: {event.text}"
    if isinstance(event, Done):
        return f"done {event.status}"
    raise AssertionError(f"unknown event {event!r}")


def trace(result: TurnResult, tokens: bool = True) -> list[str]:
    """Events as lines; a stage start directly followed by its end becomes one line
    ``node: detail``; with ``tokens=False`` consecutive tokens are joined into one line."""
    lines: list[str] = []
    for event in result.events:
        line = render(event)
        if line.startswith("< ") and lines and lines[-1] == f"> {event.node}":
            lines[-1] = f"{event.node}: {event.detail}"
            continue
        if not tokens and line.startswith("token ") and lines and lines[-1].startswith(line.split(":")[0] + ":"):
            lines[-1] += event.text
            continue
        lines.append(line)
    return lines
