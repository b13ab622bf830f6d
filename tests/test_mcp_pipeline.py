"""MCP tools in the pipeline: a real MCP server (tests/mcp_server.py, stdio) and the fake
Ollama server choosing tool calls. The read-only tool is called and cited, the
destructive one never offered; errors, timeouts and huge results; exact events, exact
tools offered, exact calls made (see tests/mcp_turns.py for how tool events are checked).
"""

from __future__ import annotations

import json

import pytest

from chat.pipeline import ToolCall

from .fake_ollama import Reply
from .mcp_helpers import LAB_TOKEN, add_lab_server, calls_made
from .mcp_turns import (  # noqa: F401  (fixtures)
    LAB_TOOLS, QUESTION, answer_citing, answer_prompt, call_log, documents, domains, fake, head, script_turn,
)
from .pipeline_helpers import run, tool_lines, tools_between_pick_and_join, trace

pytestmark = pytest.mark.django_db


def test_read_only_tool_is_called_and_cited(fake, domains, call_log):
    add_lab_server(domains["neuro"], call_log, allowed=("channel_density", "delete_model"))
    script_turn(
        fake,
        Reply.tools(("channel_density", {"channel": "Nav1.6"})),
        answer_citing("Right now it is 74 mS/cm2 [{tool}]; the model goes back to Hodgkin and Huxley [{doc}].",
                      tool="channel_density (neuro-lab)", doc="hodgkin-huxley.md"),
    )
    result = run(QUESTION, [domains["neuro"], domains["arrays"]])
    n = documents(fake)
    text = "Right now it is 74 mS/cm2 [1]; the model goes back to Hodgkin and Huxley [2]."
    assert trace(result, tokens=False, tools=False) == head(fake, "channel_density (neuro-lab)") + [
        f"join_tools: channel_density ok: source {n + 1}",
        "> answer",
        f"token 1: {text}",
        f"< answer: {len(text)} chars, cites 2 of {n + 1} sources",
        "evaluate: continue",
        "remember: no session",
        "> respond",
        "references: [1] channel_density (neuro-lab), [2] hodgkin-huxley.md",
        f"answer domains: {text}",
        "< respond: domains, 2 references",
        "summarise: no session",
        "done complete",
    ]
    assert tool_lines(result) == [
        'tool 1 start channel_density {"channel": "Nav1.6"}',
        'tool 1 end channel_density {"channel": "Nav1.6"}: ok',
    ]
    assert tools_between_pick_and_join(result)
    start, end = [e.as_dict() for e in result.events if isinstance(e, ToolCall)]
    assert start == {
        "type": "tool", "call": 1, "phase": "start", "tool": "channel_density", "server": "neuro-lab",
        "domain": "neuro", "arguments": {"channel": "Nav1.6"}, "status": "running", "message": "", "chars": 0,
        "truncated": False, "elapsed_ms": None,
    }
    assert {k: v for k, v in end.items() if k != "elapsed_ms"} == {
        **{k: v for k, v in start.items() if k != "elapsed_ms"}, "phase": "end", "status": "ok", "chars": 54,
    }
    assert end["elapsed_ms"] > 0
    # Exactly one tool offered: delete_model is allowed but destructive, the others not allowed.
    (tool_request,) = fake.tool_bodies()
    assert tool_request["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "channel_density",
                "description": "Current density of an ion channel in the lab's reference neuron (live data).",
                "parameters": {
                    "type": "object",
                    "required": ["channel"],
                    "properties": {"channel": {"type": "string"}, "region": {"type": "string",
                                                                           "description": '(default "soma")'}},
                },
            },
        }
    ]
    assert tool_request["messages"] == [
        {"role": "system", "content": (
            "You pick tools that fetch live data for a question about neuro. A separate search already looks "
            "through the documentation, so call a tool only when its live data helps answer the question, with "
            "arguments taken from the question (and the conversation). Call no tool when none helps. Do not "
            "answer the question.")},
        {"role": "user", "content": f"Question: {QUESTION}"},
    ]
    assert (tool_request["model"], tool_request["options"], tool_request["stream"]) == (
        "qwen3:0.6b", {"temperature": 0}, False)
    # The result joined the material after the documents, numbered on.
    prompt = answer_prompt(fake)
    assert prompt.endswith(
        "\n\n## Tool results (live data)\n\n"
        f"### Source document {n + 1}/{n + 1}: [channel_density (neuro-lab)]\n"
        'Tool call: channel_density {"channel": "Nav1.6"} on neuro-lab (domain neuro)\n'
        "Result:\n"
        "Nav1.6 density in the soma: 74 mS/cm2 (measured today)"
    )
    assert f"### Source document 1/{n + 1}: [" in prompt
    assert "Some sources are live results of tool calls" in prompt
    assert result.references[0] == {
        "number": 1, "kind": "tool", "domain": "neuro", "server": "neuro-lab", "tool": "channel_density",
        "title": "channel_density (neuro-lab)", "arguments": {"channel": "Nav1.6"}, "status": "ok",
        "text": "Nav1.6 density in the soma: 74 mS/cm2 (measured today)", "truncated": False,
    }
    assert result.references[1]["kind"] == "document"
    assert calls_made(call_log) == ["started", 'channel_density {"channel": "Nav1.6", "region": "soma"}']
    assert list(result.done.timings) == [
        "memory", "guard", "classify", "route", "pick_tools", "generate_queries", "retrieve", "join_tools",
        "answer", "evaluate", "remember", "respond", "summarise",
    ]


def test_tools_not_offered_and_wrong_arguments_are_rejected_before_any_call(fake, domains, call_log):
    add_lab_server(domains["neuro"], call_log)
    script_turn(
        fake,
        Reply.tools(
            ("delete_model", {"model_id": "hh-1952"}),
            ("channel_density", {"chanel": "Nav1.6"}),
            ("channel_density", {"channel": 42}),
            ("drop_table", {}),
        ),
        answer_citing("It uses sodium conductances [{doc}].", doc="hodgkin-huxley.md"),
    )
    result = run(QUESTION, [domains["neuro"]])
    offered = f"(offered: {LAB_TOOLS})"
    assert tool_lines(result) == [
        f"tool 1 end delete_model {{\"model_id\": \"hh-1952\"}}: rejected (tool 'delete_model' was not offered {offered})",
        'tool 2 end channel_density {"chanel": "Nav1.6"}: rejected '
        "(arguments of channel_density: 'channel' is a required property)",
        'tool 3 end channel_density {"channel": 42}: rejected '
        "(arguments of channel_density at channel: 42 is not of type 'string')",
        f"tool 4 end drop_table {{}}: rejected (tool 'drop_table' was not offered {offered})",
    ]
    assert tools_between_pick_and_join(result)
    rejected = [e.as_dict() for e in result.events if isinstance(e, ToolCall)]
    assert [(e["server"], e["domain"], e["status"], e["chars"], e["elapsed_ms"]) for e in rejected] == [
        ("", "", "rejected", 0, None), ("neuro-lab", "neuro", "rejected", 0, None),
        ("neuro-lab", "neuro", "rejected", 0, None), ("", "", "rejected", 0, None),
    ]
    lines = trace(result, tokens=False, tools=False)
    assert lines[:8] == head(fake, f"{LAB_TOOLS} (neuro-lab)") + ["join_tools: no tool results"]
    # The answer still comes from the documents; the server was never even started.
    assert result.answer.text == "It uses sodium conductances [1]."
    assert [r["kind"] for r in result.references] == ["document"]
    assert "Tool results" not in answer_prompt(fake)
    assert calls_made(call_log) == []
    assert [t["function"]["name"] for t in fake.tool_bodies()[0]["tools"]] == LAB_TOOLS.split(", ")


def test_errors_timeouts_huge_output_and_secrets(fake, domains, call_log, settings):
    settings.KLEA_MCP_TOOL_TIMEOUT = 3
    add_lab_server(domains["neuro"], call_log)
    script_turn(
        fake,
        Reply.tools(
            ("flaky_lookup", {"channel": "Nav1.6"}),
            ("slow_lookup", {"seconds": 60}),
            ("big_table", {"rows": 100}),
            ("lab_token", {}),
        ),
        answer_citing("The table [{table}] and the documents [{doc}] agree.",
                      table="big_table (neuro-lab)", doc="hodgkin-huxley.md"),
    )
    result = run(QUESTION, [domains["neuro"]])
    n = documents(fake)
    assert tool_lines(result) == [
        'tool 1 start flaky_lookup {"channel": "Nav1.6"}',
        'tool 1 end flaky_lookup {"channel": "Nav1.6"}: error '
        "(Error executing tool flaky_lookup: archive offline while looking up Nav1.6)",
        'tool 2 start slow_lookup {"seconds": 60}',
        'tool 2 end slow_lookup {"seconds": 60}: timeout (no result within 3 s (KLEA_MCP_TOOL_TIMEOUT))',
        'tool 3 start big_table {"rows": 100}',
        'tool 3 end big_table {"rows": 100}: ok',
        "tool 4 start lab_token {}",
        "tool 4 end lab_token {}: ok",
    ]
    assert tools_between_pick_and_join(result)
    ends = {e.tool: e for e in result.events if isinstance(e, ToolCall) and e.phase == "end"}
    assert (ends["big_table"].chars, ends["big_table"].truncated) == (9999, True)
    assert (ends["lab_token"].chars, ends["lab_token"].truncated) == (len("token=[secret]"), False)
    first = n + 1
    assert trace(result, tokens=False, tools=False)[7] == (
        f"join_tools: flaky_lookup error, slow_lookup timeout, big_table ok, lab_token ok: "
        f"sources {first}-{first + 3}"
    )
    prompt = answer_prompt(fake)
    tools_part = prompt[prompt.index("## Tool results (live data)"):]
    table = "\n".join(f"row {i:05d} ".ljust(99, "x") for i in range(100))[:2500]
    total = n + 4
    assert tools_part == "\n".join([
        "## Tool results (live data)",
        "",
        f"### Source document {first}/{total}: [flaky_lookup (neuro-lab)]",
        'Tool call: flaky_lookup {"channel": "Nav1.6"} on neuro-lab (domain neuro)',
        "Error (the call failed; there is no data):",
        "Error executing tool flaky_lookup: archive offline while looking up Nav1.6",
        "",
        f"### Source document {first + 1}/{total}: [slow_lookup (neuro-lab)]",
        'Tool call: slow_lookup {"seconds": 60} on neuro-lab (domain neuro)',
        "Error (no result in time; there is no data):",
        "no result within 3 s (KLEA_MCP_TOOL_TIMEOUT)",
        "",
        f"### Source document {first + 2}/{total}: [big_table (neuro-lab)]",
        'Tool call: big_table {"rows": 100} on neuro-lab (domain neuro)',
        "Result (the first 2500 of 9999 characters):",
        table,
        "",
        f"### Source document {first + 3}/{total}: [lab_token (neuro-lab)]",
        "Tool call: lab_token {} on neuro-lab (domain neuro)",
        "Result:",
        "token=[secret]",
    ])
    assert result.answer.text == "The table [1] and the documents [2] agree."
    assert result.references[0]["text"] == table and result.references[0]["truncated"] is True
    # The secret reached the server (it answered with it) but nothing else.
    everything = json.dumps([e.as_dict() for e in result.events]) + json.dumps(fake.bodies())
    assert LAB_TOKEN not in everything
    assert sorted(calls_made(call_log)) == sorted([
        "started", 'flaky_lookup {"channel": "Nav1.6"}', 'slow_lookup {"seconds": 60.0}', 'big_table {"rows": 100}',
        "lab_token {}",
    ])
    assert result.done.status == "complete"


def test_the_extractive_backend_picks_no_tools(settings, domains, call_log):
    settings.KLEA_LLM_BACKEND = "extractive"
    add_lab_server(domains["neuro"], call_log)
    result = run("How do the Hodgkin-Huxley conductances work?", [domains["neuro"]], pick=["neuro"])
    lines = trace(result, tokens=False)
    assert lines[4] == "pick_tools: no tools (the extractive backend picks none)"
    assert lines[7] == "join_tools: no tool results"
    assert calls_made(call_log) == []
    assert result.done.status == "complete"
