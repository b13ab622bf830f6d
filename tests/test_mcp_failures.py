"""MCP tools that cannot help: servers that do not start, the tool budget running out, a
model without tool support, no call at all, no tools offered, a cancelled turn. The
answer always still comes from the documents (or the turn ends as cancelled)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from asgiref.sync import async_to_sync

from chat.pipeline import Stage, ToolCall, Turn, TurnRequest, TurnResult

from .fake_ollama import Reply
from .mcp_helpers import add_lab_server, calls_made
from .mcp_turns import (  # noqa: F401  (fixtures)
    QUESTION, answer_citing, answer_prompt, call_log, documents, domains, fake, head, script_turn,
)
from .pipeline_helpers import run, tool_lines, trace

pytestmark = pytest.mark.django_db


def test_servers_that_fail_to_start(fake, domains):
    crash = "import sys; sys.stderr.write('no licence for the lab database\\n'); sys.exit(3)"
    add_lab_server(domains["neuro"], name="broken-lab", args=["-c", crash], allowed=("channel_density",))
    add_lab_server(domains["neuro"], name="missing-lab", command="/nonexistent/lab-mcp", allowed=("channel_density",))
    script_turn(
        fake,
        Reply.tools(("broken-lab__channel_density", {"channel": "Nav1.6"}),
                    ("missing-lab__channel_density", {"channel": "Nav1.6"})),
        answer_citing("It uses sodium conductances [{doc}].", doc="hodgkin-huxley.md"),
    )
    result = run(QUESTION, [domains["neuro"]])
    # chat users (events, the answer model) get short typed lines: no command path, no stderr
    broken = "server 'broken-lab' did not start (the server closed the connection during the handshake)"
    missing = "server 'missing-lab' did not start (FileNotFoundError)"
    assert tool_lines(result) == [
        'tool 1 start channel_density {"channel": "Nav1.6"}',
        f'tool 1 end channel_density {{"channel": "Nav1.6"}}: error ({broken})',
        'tool 2 start channel_density {"channel": "Nav1.6"}',
        f'tool 2 end channel_density {{"channel": "Nav1.6"}}: error ({missing})',
    ]
    assert [e.server for e in result.events if isinstance(e, ToolCall) and e.phase == "end"] in (
        ["broken-lab", "missing-lab"], ["missing-lab", "broken-lab"])
    offers = "broken-lab__channel_density (broken-lab); missing-lab__channel_density (missing-lab)"
    n = documents(fake)
    assert trace(result, tokens=False, tools=False)[:8] == head(fake, offers) + [
        f"join_tools: channel_density error, channel_density error: sources {n + 1}-{n + 2}"
    ]
    assert f"Error (the call failed; there is no data):\n{broken}\n" in answer_prompt(fake)
    assert result.answer.text == "It uses sodium conductances [1]."
    assert result.done.status == "complete"


def test_the_tool_budget_cuts_calls_short(fake, domains, call_log, settings):
    settings.KLEA_MCP_TOOL_BUDGET = 3
    add_lab_server(domains["neuro"], call_log)
    script_turn(fake, Reply.tools(("slow_lookup", {"seconds": 60})),
                answer_citing("It uses sodium conductances [{doc}].", doc="hodgkin-huxley.md"))
    result = run(QUESTION, [domains["neuro"]])
    assert tool_lines(result) == [
        'tool 1 start slow_lookup {"seconds": 60}',
        'tool 1 end slow_lookup {"seconds": 60}: timeout '
        "(the tool budget of 3 s for this question ran out (KLEA_MCP_TOOL_BUDGET))",
    ]
    assert result.answer.text == "It uses sodium conductances [1]."


def test_a_model_that_cannot_call_tools_is_a_non_fatal_error(fake, domains, call_log):
    add_lab_server(domains["neuro"], call_log)
    script_turn(fake, Reply.http_error(400, "registry.ollama.ai/library/qwen3:0.6b does not support tools"),
                answer_citing("It uses sodium conductances [{doc}].", doc="hodgkin-huxley.md"))
    result = run(QUESTION, [domains["neuro"]])
    (error,) = result.errors
    assert error.as_dict() == {
        "type": "error", "code": "server_error", "node": "pick_tools", "fatal": False,
        "message": "choosing tools failed: Ollama server error for model 'qwen3:0.6b': "
                   "registry.ollama.ai/library/qwen3:0.6b does not support tools; answering from the documents only",
    }
    assert tool_lines(result) == []
    assert result.answer.text == "It uses sodium conductances [1]."
    assert calls_made(call_log) == []


def test_the_model_may_call_no_tool(fake, domains, call_log):
    add_lab_server(domains["neuro"], call_log)
    script_turn(fake, Reply.tools(), answer_citing("It uses sodium conductances [{doc}].", doc="hodgkin-huxley.md"))
    result = run(QUESTION, [domains["neuro"]])
    assert trace(result, tokens=False)[7] == "join_tools: no tool results"
    assert (tool_lines(result), result.errors, calls_made(call_log)) == ([], [], [])


def test_domains_without_servers_and_inactive_servers_offer_nothing(fake, domains, call_log):
    server = add_lab_server(domains["neuro"], call_log)
    server.active = False
    server.save()
    add_lab_server(domains["arrays"], call_log, name="arrays-lab")  # not routed
    script_turn(fake, Reply(), answer_citing("It uses sodium conductances [{doc}].", doc="hodgkin-huxley.md"))
    fake.tool_replies.clear()
    result = run(QUESTION, [domains["neuro"], domains["arrays"]])
    assert trace(result, tokens=False)[4] == "pick_tools: no tools offered"
    assert trace(result, tokens=False)[7] == "join_tools: no tool results"
    assert fake.tool_bodies() == []


def test_cancelling_the_turn_stops_the_server(fake, domains, call_log):
    add_lab_server(domains["neuro"], call_log)
    fake.script(Reply.json({"query_domains": ["neuro"]}), Reply.json({"queries": ["sodium channel density"]}))
    fake.script_tools(Reply.tools(("slow_lookup", {"seconds": 60})))

    async def scenario() -> TurnResult:
        turn = Turn(TurnRequest(QUESTION, domains=[domains["neuro"]])).start()
        result = TurnResult()
        async for event in turn:
            result.events.append(event)
            if isinstance(event, Stage) and event.node == "join_tools" and event.phase == "start":
                for _ in range(600):  # until the server runs the tool (at most 30 s)
                    if "slow_lookup" in call_log.read_text() if call_log.exists() else "":
                        break
                    await asyncio.sleep(0.05)
                turn.cancel()
        return result

    result = async_to_sync(scenario)()
    assert trace(result, tools=False)[-4:] == [
        f"retrieve: {trace(result, tools=False)[-4].split(': ', 1)[1]}",
        "> join_tools",
        "error interrupted (join_tools, fatal): the turn was cancelled",
        "done interrupted",
    ]
    assert tool_lines(result) == ['tool 1 start slow_lookup {"seconds": 60}']
    pid = int(call_log.read_text().splitlines()[0].split()[1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
