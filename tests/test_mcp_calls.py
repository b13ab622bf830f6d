"""The MCP parts on their own: argument checks, the backends' tool calls, the calls
runner (stdio and streamable HTTP), the reference material, events and console lines."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from asgiref.sync import async_to_sync

from chat.backends.base import NotSupported, ToolRequest
from chat.backends.extractive import ExtractiveBackend
from chat.backends.ollama import OllamaBackend, ollama_tool
from chat.backends.openai import OpenAIBackend
from chat.console import EventPrinter
from chat.mcp.calls import run_calls
from chat.mcp.catalog import OfferedTool, ServerSpec, offered_tools
from chat.mcp.discovery import list_server_tools, refresh_tools
from chat.mcp.plan import PlannedCall, plan_calls
from chat.mcp.session import ServerFailed
from chat.models import McpServer
from chat.pipeline import ToolCall
from chat.pipeline.references import ToolSource, reference_list, with_tool_results
from domains.models import Domain
from domains.retrieval import RetrievedChunk, serialize_reference_material

from .fake_ollama import FakeOllama, Reply
from .mcp_helpers import LAB_TOKEN, SERVER_SCRIPT
from .test_backends import openai_server  # noqa: F401  (fixture)

SCHEMA = {
    "type": "object",
    "properties": {
        "channel": {"type": "string", "description": "Ion channel name"},
        "region": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "unit": {"const": "mS/cm2"},
    },
    "required": ["channel"],
    "additionalProperties": False,
}
LAB = ServerSpec(name="lab", domain="neuro", transport="stdio", command=sys.executable, args=(SERVER_SCRIPT,),
                 env={"LAB_TOKEN": LAB_TOKEN})


def tool(name="channel_density", schema=SCHEMA, server=LAB, function=None) -> OfferedTool:
    return OfferedTool(function or name, name, f"The {name} tool.", schema, server)


# --- checking the model's requests ----------------------------------------------------


def test_requests_are_checked_against_what_was_offered_and_the_schema():
    offered = [tool(), tool("lab_token", {"type": "object", "properties": {}})]
    requests = [
        ToolRequest("channel_density", {"channel": "Nav1.6", "days": 3}),
        ToolRequest("channel_density", '{"channel": "Nav1.6", "days": 3}'),  # the same call again
        ToolRequest("channel_density", {"channel": "Kv1.1", "colour": "red"}),
        ToolRequest("channel_density", {"channel": "Kv1.1", "days": 9}),
        ToolRequest("channel_density", "{not json"),
        ToolRequest("channel_density", "[1, 2]"),
        ToolRequest("lab_token", ""),
        ToolRequest("channel_density", {"channel": "Kv1.1", "region": None}),
        ToolRequest("delete_model", {}),
    ]
    planned, rejected = plan_calls(requests, offered, max_calls=2)
    assert [(p.call, p.tool.function, p.arguments) for p in planned] == [
        (1, "channel_density", {"channel": "Nav1.6", "days": 3}),
        (7, "lab_token", {}),
    ]
    assert [(r.call, r.message) for r in rejected] == [
        (2, "same call as call 1"),
        (3, "arguments of channel_density: Additional properties are not allowed ('colour' was unexpected)"),
        (4, "arguments of channel_density at days: 9 is greater than the maximum of 7"),
        (5, "arguments of channel_density are not valid JSON: '{not json'"),
        (6, "arguments of channel_density are not a JSON object: [1, 2]"),
        (8, "over the limit of 2 tool call(s) per question (KLEA_MCP_MAX_CALLS)"),
        (9, "tool 'delete_model' was not offered (offered: channel_density, lab_token)"),
    ]
    assert rejected[-1].tool is None and rejected[0].tool is offered[0]


def test_a_broken_input_schema_rejects_the_call():
    broken = tool(schema={"type": "object", "properties": {"n": {"type": "integr"}}})
    _, (rejection,) = plan_calls([ToolRequest("channel_density", {"n": 1})], [broken], max_calls=4)
    assert rejection.message.startswith("the input schema of channel_density is invalid: 'integr' is not valid")


# --- the backends ---------------------------------------------------------------------


def test_ollama_reads_a_simplified_schema():
    assert ollama_tool(tool().spec()) == {
        "type": "function",
        "function": {
            "name": "channel_density",
            "description": "The channel_density tool.",
            "parameters": {
                "type": "object",
                "properties": {
                    "channel": {"type": "string", "description": "Ion channel name"},
                    "region": {"type": ["string", "null"], "description": "(default null)"},
                    "days": {"type": "integer", "description": "(minimum 1; maximum 7)"},
                    "unit": {"enum": ["mS/cm2"]},
                },
                "required": ["channel"],
            },
        },
    }


def test_ollama_backend_chooses_tools():
    with FakeOllama() as fake:
        fake.script_tools(Reply.tools(("channel_density", {"channel": "Nav1.6"}), ("lab_token", {})))
        backend = OllamaBackend(fake.url, chat_model="qwen3:0.6b", timeout=5)

        async def choose():
            try:
                return await backend.choose_tools([{"role": "user", "content": "Hi"}], [tool().spec()])
            finally:
                await backend.aclose()

        assert async_to_sync(choose)() == [
            ToolRequest("channel_density", {"channel": "Nav1.6"}), ToolRequest("lab_token", {}),
        ]
        (body,) = fake.tool_bodies()
        assert body["tools"] == [ollama_tool(tool().spec())]
        assert (body["options"], body["stream"], body["messages"]) == (
            {"temperature": 0}, False, [{"role": "user", "content": "Hi"}])


def test_openai_compatible_backend_chooses_tools(openai_server):  # noqa: F811
    url, handler = openai_server
    calls = [
        {"id": "a", "type": "function", "function": {"name": "channel_density", "arguments": '{"channel": "Nav1.6"}'}},
        {"id": "b", "type": "function", "function": {"name": "lab_token", "arguments": "{oops"}},
        {"id": "c", "type": "function", "function": {"name": "lab_token"}},
    ]
    handler.replies = [
        (200, {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls}}]}),
        (200, {"choices": [{"message": {"role": "assistant", "content": "No tool needed."}}]}),
    ]

    async def choose():
        backend = OpenAIBackend(url, chat_model="qwen", timeout=5)
        try:
            return [await backend.choose_tools([{"role": "user", "content": "Hi"}], [tool().spec()]) for _ in "ab"]
        finally:
            await backend.aclose()

    first, second = async_to_sync(choose)()
    assert first == [
        ToolRequest("channel_density", {"channel": "Nav1.6"}), ToolRequest("lab_token", "{oops"),
        ToolRequest("lab_token", {}),
    ]
    assert second == []
    body = handler.requests[0]["body"]
    assert body == {
        "model": "qwen", "messages": [{"role": "user", "content": "Hi"}], "tools": [tool().spec()],
        "tool_choice": "auto", "temperature": 0, "stream": False,
    }


def test_the_extractive_backend_calls_no_tools():
    backend = ExtractiveBackend()
    assert backend.supports_tools is False
    with pytest.raises(NotSupported, match="^the extractive backend does not call tools$"):
        async_to_sync(backend.choose_tools)([], [tool().spec()])


# --- the calls runner -----------------------------------------------------------------


def run(calls, timeout=30, budget=60, max_chars=2500):
    events = []

    async def started(outcome):
        events.append(("start", outcome.call))

    async def ended(outcome):
        events.append(("end", outcome.call, outcome.status))

    outcomes = async_to_sync(run_calls)(
        calls, timeout=timeout, budget=budget, max_chars=max_chars, on_start=started, on_end=ended
    )
    return outcomes, events


def test_a_server_that_prints_its_secret_while_failing_is_masked(caplog):
    """Chat users get a short typed line; the log keeps the command and stderr (masked)."""
    crash = "import os, sys; sys.stderr.write('bad token ' + os.environ['LAB_TOKEN']); sys.exit(1)"
    spec = ServerSpec(name="lab", domain="neuro", transport="stdio", command=sys.executable, args=("-c", crash),
                      env={"LAB_TOKEN": LAB_TOKEN})
    (outcome,), events = run([PlannedCall(1, tool(server=spec), {"channel": "Nav1.6"})])
    assert (outcome.status, outcome.message) == (
        "error", "server 'lab' did not start (the server closed the connection during the handshake)")
    assert [r.getMessage() for r in caplog.records if r.name == "klea.mcp"] == [
        f"server 'lab' ({sys.executable}) did not start: the server closed the connection during the handshake; "
        "stderr: bad token [secret]"]
    assert events == [("start", 1), ("end", 1, "error")]


def test_an_empty_call_list_does_nothing():
    assert run([]) == ([], [])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def http_lab():
    """tests/mcp_server.py serving streamable HTTP on 127.0.0.1 (a real uvicorn server)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, SERVER_SCRIPT, "--http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("the MCP test server did not start on HTTP", pytrace=False)
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


@pytest.mark.django_db
def test_streamable_http_server_lists_tools_and_gets_the_headers(http_lab):
    domain = Domain.objects.create(name="neuro", description="d")
    server = McpServer.objects.create(domain=domain, name="http-lab", transport="http", url=http_lab,
                                      headers={"Authorization": "Bearer s3cret-http-token"})
    assert len(refresh_tools(server).added) == 7
    server.tools.filter(name__in=["whoami", "channel_density"]).update(allowed=True)
    offered = {t.function: t for t in offered_tools([domain])}
    (whoami, density), events = run([PlannedCall(1, offered["whoami"], {}),
                                     PlannedCall(2, offered["channel_density"], {"channel": "Kv1.1"})])
    assert (whoami.status, whoami.text) == ("ok", "authorization=[secret]")
    assert (density.status, density.text) == ("ok", "Kv1.1 density in the soma: 59 mS/cm2 (measured today)")
    assert sorted(events[:2]) == [("start", 1), ("start", 2)]


def test_an_unreachable_http_server_fails_to_start_and_its_credentials_stay_out():
    port = free_port()
    spec = ServerSpec(name="gone", domain="neuro", transport="http", url=f"http://lab:pw-123456@127.0.0.1:{port}/mcp?key=tok-123456")
    with pytest.raises(ServerFailed) as info:
        async_to_sync(list_server_tools)(spec, 30)
    assert str(info.value) == (
        f"server 'gone' (http://127.0.0.1:{port}/mcp) did not start: ConnectError: All connection attempts failed"
    )
    assert info.value.public == "server 'gone' did not start (ConnectError)"


# --- reference material, references, events, console ---------------------------------


def result(**fields) -> ToolSource:
    values = dict(number=0, domain="neuro", server="lab", tool="channel_density", arguments={"channel": "Nav1.6"},
                  status="ok", text="74 mS/cm2", chars=9)
    return ToolSource(**{**values, **fields})


def test_tool_results_follow_the_documents_and_renumber():
    chunk = RetrievedChunk(7, "text", [], {}, "a.md", 70, "neuro-store", "neuro", score=1.0)
    documents = serialize_reference_material([chunk])
    material = with_tool_results(documents, [result(), result(status="timeout", text="no result within 3 s")])
    assert material.sources[0] is documents.sources[0]
    assert [(s.number, s.status) for s in material.sources[1:]] == [(2, "ok"), (3, "timeout")]
    assert material.text == "\n".join([
        "## neuro", "", "### Source document 1/3: [a.md]", "", "  Chunk 1", "text", "",
        "## Tool results (live data)", "",
        "### Source document 2/3: [channel_density (lab)]",
        'Tool call: channel_density {"channel": "Nav1.6"} on lab (domain neuro)', "Result:", "74 mS/cm2", "",
        "### Source document 3/3: [channel_density (lab)]",
        'Tool call: channel_density {"channel": "Nav1.6"} on lab (domain neuro)',
        "Error (no result in time; there is no data):", "no result within 3 s",
    ])
    alone = with_tool_results(None, [result()])
    assert alone.text.startswith("## Tool results (live data)\n\n### Source document 1/1: [channel_density (lab)]")
    assert with_tool_results(documents, []).text == documents.text
    assert reference_list([material.sources[1]]) == [{
        "number": 1, "kind": "tool", "domain": "neuro", "server": "lab", "tool": "channel_density",
        "title": "channel_density (lab)", "arguments": {"channel": "Nav1.6"}, "status": "ok", "text": "74 mS/cm2",
        "truncated": False,
    }]


def test_tool_events_print_on_the_console():
    out = []
    printer = EventPrinter(out.append, out.append)
    printer(ToolCall(call=1, phase="start", tool="channel_density", server="lab", arguments={"channel": "Nav1.6"}))
    printer(ToolCall(call=1, phase="end", tool="channel_density", server="lab", arguments={"channel": "Nav1.6"},
                     status="ok", chars=9))
    printer(ToolCall(call=2, phase="end", tool="drop", arguments="{oops", status="rejected",
                     message="tool 'drop' was not offered"))
    assert out == [
        '· tool 1 channel_density {"channel": "Nav1.6"} (lab): ok, 9 chars\n',
        "· tool 2 drop {oops: rejected: tool 'drop' was not offered\n",
    ]
    assert json.loads(json.dumps(ToolCall(call=2, phase="end", tool="drop").as_dict()))["type"] == "tool"
