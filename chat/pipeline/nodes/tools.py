"""pick_tools and join_tools: MCP tool calls beside query generation and retrieval.

``pick_tools`` (after ``route``) loads the routed domains' offered tools (allowed and
read-only only, :mod:`chat.mcp.catalog`) and, when there are any and the backend can
call tools, starts one background task: the model picks calls (``choose_tools``),
they are checked against what was offered and the tools' schemas
(:mod:`chat.mcp.plan`), then run with the per-call timeout and the turn's budget
(:mod:`chat.mcp.calls`), each announced by ``tool`` events. Meanwhile
``generate_queries`` and ``retrieve`` run. ``join_tools`` (after ``retrieve``, on every
retrieval pass) waits for the task once and appends the results to the reference
material as numbered sources. Nothing here fails the turn: a failed choice is a
non-fatal ``error`` event, a failed call an ``error`` or ``timeout`` outcome, and the
answer still comes from the documents.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async

from chat.backends.base import BackendError
from chat.mcp.catalog import OfferedTool, offered_tools
from chat.mcp.plan import Rejection, plan_calls

from .. import prompts
from ..events import Error, ToolCall
from ..graph import Step, declare
from ..references import ToolSource, with_tool_results
from ..state import TurnState

if TYPE_CHECKING:  # the mcp SDK takes 0.6 s to import: loaded only when a tool is called
    from chat.mcp.calls import CallOutcome


def _start_event(outcome: CallOutcome) -> ToolCall:
    tool = outcome.tool
    return ToolCall(
        call=outcome.call, phase="start", tool=tool.tool, server=tool.server.name, domain=tool.server.domain,
        arguments=dict(outcome.arguments),
    )


def _end_event(outcome: CallOutcome) -> ToolCall:
    event = _start_event(outcome)
    event.phase, event.status, event.message = "end", outcome.status, outcome.message
    event.chars, event.truncated, event.elapsed_ms = outcome.chars, outcome.truncated, outcome.elapsed_ms
    return event


def _rejected_event(rejection: Rejection) -> ToolCall:
    tool = rejection.tool
    return ToolCall(
        call=rejection.call,
        phase="end",
        tool=tool.tool if tool else rejection.function,
        server=tool.server.name if tool else "",
        domain=tool.server.domain if tool else "",
        arguments=rejection.arguments if isinstance(rejection.arguments, str) else dict(rejection.arguments),
        status="rejected",
        message=rejection.message,
    )


def _source(outcome: CallOutcome) -> ToolSource:
    tool = outcome.tool
    return ToolSource(
        number=0, domain=tool.server.domain, server=tool.server.name, tool=tool.tool,
        arguments=dict(outcome.arguments), status=outcome.status, text=outcome.text,
        chars=outcome.chars, truncated=outcome.truncated,
    )


async def _pick_and_call(state: TurnState, messages, offered: list[OfferedTool]) -> list[ToolSource]:
    """The background task: the model's choice, the checks, the calls. It runs beside
    other nodes, so it reads only the turn's CONTEXT (backend, config, emit) of the state."""
    from chat.mcp.calls import run_calls

    try:
        requests = await state.backend.choose_tools(messages, [tool.spec() for tool in offered])
    except BackendError as exc:
        message = f"choosing tools failed: {exc.message}; answering from the documents only"
        await state.emit(Error(code=exc.code, message=message, node="pick_tools"))
        return []
    config = state.config
    planned, rejected = plan_calls(requests, offered, config.max_tool_calls)
    for rejection in rejected:
        await state.emit(_rejected_event(rejection))

    async def started(outcome: CallOutcome) -> None:
        await state.emit(_start_event(outcome))

    async def ended(outcome: CallOutcome) -> None:
        await state.emit(_end_event(outcome))

    outcomes = await run_calls(
        planned,
        timeout=config.tool_timeout,
        budget=config.tool_budget,
        max_chars=config.tool_result_chars,
        on_start=started,
        on_end=ended,
    )
    return [_source(outcome) for outcome in outcomes]


async def stop_tools(state: TurnState) -> None:
    """Cancel a tool task that is still running (a failed or cancelled turn) and wait
    until its servers are stopped. Idempotent: pick_tools' close hook."""
    task = state.tool_task
    if task is None or task.done():
        return
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()  # retrieved: the turn's own error is what gets reported


@declare(reads={"routed", "summary", "history"}, writes={"tool_task", "tool_results"}, close=stop_tools)
async def pick_tools(state: TurnState) -> Step:
    if not state.backend.supports_tools:
        state.tool_results = []
        return Step("next", f"no tools (the {state.backend.name} backend picks none)")
    offered = await sync_to_async(offered_tools)(state.routed)
    if not offered:
        state.tool_results = []
        return Step("next", "no tools offered")
    messages = prompts.pick_tools(state.question, state.routed, state.summary, state.history)
    state.tool_task = asyncio.get_running_loop().create_task(_pick_and_call(state, messages, offered))
    by_server: dict[str, list[str]] = {}
    for tool in offered:
        by_server.setdefault(tool.server.name, []).append(tool.function)
    names = "; ".join(f"{', '.join(functions)} ({server})" for server, functions in by_server.items())
    return Step("next", f"offers {names}; choosing in the background")


@declare(reads={"tool_task"}, writes={"tool_results", "material"})
async def join_tools(state: TurnState) -> Step:
    """Wait for the tool task (first pass only) and append its results to the material."""
    if state.tool_results is None:
        state.tool_results = await state.tool_task if state.tool_task else []
    results = state.tool_results
    state.material = with_tool_results(state.material, results)
    if not results:
        return Step("next", "no tool results")
    first = len(state.material.sources) - len(results) + 1
    statuses = ", ".join(f"{r.tool} {r.status}" for r in results)
    numbers = f"source {first}" if len(results) == 1 else f"sources {first}-{first + len(results) - 1}"
    return Step("next", f"{statuses}: {numbers}")

