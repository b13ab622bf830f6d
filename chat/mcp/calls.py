"""Run checked tool calls: one session per server, calls in parallel, every wait bounded.

Bounds: each call has ``timeout`` seconds (``KLEA_MCP_TOOL_TIMEOUT``, from the moment
its request is sent); everything together, servers starting included, has ``budget``
seconds (``KLEA_MCP_TOOL_BUDGET``), so a slow-starting server (``uvx`` fetching a
package) is not cut by the per-call timeout. A result is the text of the tool's content blocks (or its
structured content as JSON), secrets masked, cut to ``max_chars`` characters
(``KLEA_MCP_RESULT_CHARS``). Nothing here raises for a failing server or tool: every
call ends with an outcome.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio
from mcp import types

from .catalog import OfferedTool, ServerSpec, mask
from .plan import PlannedCall
from .session import ServerFailed, describe, innermost, open_session

logger = logging.getLogger("klea.mcp")

# Outcome statuses: "ok", "error" (the tool or its server failed), "timeout".
MAX_MESSAGE_CHARS = 300


@dataclass
class CallOutcome:
    """What became of one call.

    ``text``: the result (or the error text), capped; ``chars``: its length before the
    cap; ``message``: one line for events when the call failed ("" when ok).
    """

    call: int
    tool: OfferedTool
    arguments: dict
    status: str = "running"
    text: str = ""
    chars: int = 0
    truncated: bool = False
    message: str = ""
    elapsed_ms: float | None = None


Callback = Callable[[CallOutcome], Awaitable[None]]


def result_text(result: types.CallToolResult) -> str:
    """The text of a tool result: text blocks as they are, other blocks named."""
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[binary resource {resource.uri}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
        else:  # image, audio
            parts.append(f"[{block.type} {getattr(block, 'mimeType', '')}]".replace(" ]", "]"))
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(parts)


def _finish(outcome: CallOutcome, status: str, text: str, max_chars: int, secrets: Sequence[str], started: float):
    text = mask(text, secrets)
    outcome.status = status
    outcome.chars = len(text)
    outcome.truncated = len(text) > max_chars
    outcome.text = text[:max_chars]
    if status != "ok":
        first = text.strip().splitlines()[0] if text.strip() else status
        outcome.message = first[:MAX_MESSAGE_CHARS]
    outcome.elapsed_ms = round((time.perf_counter() - started) * 1000, 1)


async def run_calls(
    calls: Sequence[PlannedCall],
    *,
    timeout: float,
    budget: float,
    max_chars: int,
    on_start: Callback,
    on_end: Callback,
) -> list[CallOutcome]:
    """Run ``calls``; ``on_start`` before a server is contacted for a call, ``on_end``
    when the call has its outcome.

    :returns: one outcome per call, in ``calls`` order; status "ok", "error" (server did
        not start, tool raised or reported an error, protocol failure) or "timeout" (the
        call's ``timeout`` or the turn's ``budget`` ran out).
    """
    outcomes = [CallOutcome(c.call, c.tool, c.arguments) for c in calls]
    groups: dict[str, list[CallOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.tool.server.name, []).append(outcome)
    started = time.perf_counter()
    ended: set[int] = set()

    async def end(outcome: CallOutcome) -> None:
        ended.add(outcome.call)
        await on_end(outcome)

    async def one(session, outcome: CallOutcome, secrets: list[str]) -> None:
        begun = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                result = await session.call_tool(outcome.tool.tool, outcome.arguments)
        except TimeoutError:
            _finish(outcome, "timeout", f"no result within {timeout:g} s (KLEA_MCP_TOOL_TIMEOUT)", max_chars, (), begun)
        except Exception as exc:  # a protocol error or a dead server: this call's outcome
            logger.warning("MCP call %s on %s failed: %s", outcome.tool.tool, outcome.tool.server.name,
                           mask(describe(exc), secrets))
            _finish(outcome, "error", f"the call failed ({type(innermost(exc)).__name__})", max_chars, secrets,
                    begun)
        else:
            status = "error" if result.isError else "ok"
            _finish(outcome, status, result_text(result), max_chars, secrets, begun)
        await end(outcome)

    async def serve(spec: ServerSpec, group: list[CallOutcome]) -> None:
        secrets = spec.secrets()
        for outcome in group:
            await on_start(outcome)
        try:
            async with open_session(spec, None) as session:  # bounded by the budget
                async with anyio.create_task_group() as calls_group:
                    for outcome in group:
                        calls_group.start_soon(one, session, outcome, secrets)
        except ServerFailed as exc:  # users get the short line, the log the details
            logger.warning("%s", exc)
            for outcome in group:
                if outcome.call not in ended:
                    _finish(outcome, "error", exc.public, max_chars, (), started)
                    await end(outcome)
        except Exception as exc:  # the session broke while closing or mid-call
            logger.warning("MCP server %s failed: %s", spec.name, mask(describe(exc), secrets))
            for outcome in group:
                if outcome.call not in ended:
                    message = f"server {spec.name!r} failed ({type(innermost(exc)).__name__})"
                    _finish(outcome, "error", message, max_chars, secrets, started)
                    await end(outcome)

    with anyio.move_on_after(budget):
        async with anyio.create_task_group() as servers:
            for group in groups.values():
                servers.start_soon(serve, group[0].tool.server, group)
    for outcome in outcomes:  # cut short by the budget
        if outcome.call not in ended:
            text = f"the tool budget of {budget:g} s for this question ran out (KLEA_MCP_TOOL_BUDGET)"
            _finish(outcome, "timeout", text, max_chars, (), started)
            await end(outcome)
    return outcomes
