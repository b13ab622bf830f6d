"""Running turns from synchronous tests over domains built from a few files, and a
compact, exact rendering of events.

Turns run through ``async_to_sync`` so that the pipeline's ORM calls come back to the
test's thread and see the test's transaction.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync

import json
from pathlib import Path

from chat.pipeline import Answer, Done, Error, References, Stage, Token, ToolCall, TurnRequest, TurnResult, ask
from chat.rag import Knowledge
from domains.models import Domain


def domain_of(folder: Path, name: str, description: str, files: dict[str, str]) -> Domain:
    """The domain ``name`` and its store of that name, ingested from ``files`` ({file
    name: text}) written to ``folder / name``. :returns: the Domain."""
    (folder / name).mkdir()
    for file_name, text in files.items():
        (folder / name / file_name).write_text(text, encoding="utf-8")
    Knowledge(store=name, create=True, description=description).add(folder / name)
    return Domain.objects.get(name=name)


def count_model_runs(monkeypatch) -> list[list[int]]:
    """The token ids of every sequence the int8 embedding model runs from now on (ONNX
    Runtime's own ``InferenceSession.run``, wrapped on the loaded session)."""
    from domains import embeddings

    session = embeddings.get_onnx_embedder().session
    runs, model_run = [], session.run

    def counting(outputs, feed, *args, **kwargs):
        runs.append(feed["input_ids"][0].tolist())
        return model_run(outputs, feed, *args, **kwargs)

    monkeypatch.setattr(session, "run", counting)
    return runs


def token_ids(text: str) -> list[int]:
    """``text`` as the embedding model sees it (with [CLS]/[SEP])."""
    from domains import embeddings

    return embeddings.get_onnx_embedder().tokenizer.encode(text).ids


def run(question: str, domains, **kwargs) -> TurnResult:
    """One turn; ``kwargs``: session_id, pick, filters, history (TurnRequest) and backend, config."""
    request_keys = {"session_id", "pick", "filters", "history"}
    request = TurnRequest(question, domains=list(domains), **{k: v for k, v in kwargs.items() if k in request_keys})
    return async_to_sync(ask)(request, **{k: v for k, v in kwargs.items() if k not in request_keys})


def render(event) -> str:
    if isinstance(event, Stage):
        return f"> {event.node}" if event.phase == "start" else f"< {event.node}: {event.detail}"
    if isinstance(event, Token):
        return f"token {event.attempt}: {event.text}"
    if isinstance(event, ToolCall):
        arguments = event.arguments if isinstance(event.arguments, str) else json.dumps(event.arguments)
        line = f"tool {event.call} {event.phase} {event.tool} {arguments}"
        if event.phase == "end":
            line += f": {event.status}" + (f" ({event.message})" if event.message else "")
        return line
    if isinstance(event, Error):
        return f"error {event.code} ({event.node}{', fatal' if event.fatal else ''}): {event.message}"
    if isinstance(event, References):
        return "references: " + ", ".join(
            f"[{r['number']}] {r['title'] if r['kind'] == 'tool' else r['file_name']}" for r in event.references
        )
    if isinstance(event, Answer):
        return f"answer {event.route}: {event.text}"
    if isinstance(event, Done):
        return f"done {event.status}"
    raise AssertionError(f"unknown event {event!r}")


def trace(result: TurnResult, tokens: bool = True, tools: bool = True) -> list[str]:
    """Events as lines; a stage start directly followed by its end becomes one line
    ``node: detail``; with ``tokens=False`` consecutive tokens are joined into one line;
    with ``tools=False`` tool events (which interleave with other nodes' events: they come
    from a background task) are left out."""
    lines: list[str] = []
    for event in result.events:
        if not tools and isinstance(event, ToolCall):
            continue
        line = render(event)
        if line.startswith("< ") and lines and lines[-1] == f"> {event.node}":
            lines[-1] = f"{event.node}: {event.detail}"
            continue
        if not tokens and line.startswith("token ") and lines and lines[-1].startswith(line.split(":")[0] + ":"):
            lines[-1] += event.text
            continue
        lines.append(line)
    return lines


def tool_lines(result: TurnResult) -> list[str]:
    """The tool events alone, as lines, grouped by call number (calls run in parallel, so
    only the order within one call is fixed; the stable sort keeps it as it was sent)."""
    events = sorted((e for e in result.events if isinstance(e, ToolCall)), key=lambda e: e.call)
    return [render(e) for e in events]


def tools_between_pick_and_join(result: TurnResult) -> bool:
    """Every tool event comes after pick_tools ended and before join_tools ended."""
    kinds = []
    for event in result.events:
        if isinstance(event, Stage) and event.node in ("pick_tools", "join_tools") and event.phase == "end":
            kinds.append(event.node)
        elif isinstance(event, ToolCall):
            kinds.append("tool")
    first_join = kinds.index("join_tools")
    return kinds[0] == "pick_tools" and "tool" not in kinds[first_join:]
