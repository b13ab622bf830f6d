"""Klea as an MCP server, driven by the ``mcp`` SDK's own client: over streamable HTTP at
/mcp/ on a live daphne (Bearer tokens, per-user domains, revocation) and over stdio
(``manage.py mcp --user``). Tools: list_domains, search, ask; read-only; typed errors."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from contextlib import asynccontextmanager

import httpx
import pytest
from django.conf import settings
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from chat import tokens
from chat.mcp_jsonrpc import BAD_ID, BATCH, NOT_A_MESSAGE
from chat.mcp_jsonrpc import error as rpc_error

from .chat_world import SECRET_TEXT, in_thread, world  # noqa: F401
from .live_daphne import LiveDaphne, database_url

pytestmark = pytest.mark.django_db
ZORBLAX = "How long does the Zorblax protein take to fold?"
TIMEOUT = 60


@asynccontextmanager
async def http_session(server: LiveDaphne, token: str):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"},
                                    timeout=httpx.Timeout(TIMEOUT, read=TIMEOUT))
    async with client, streamable_http_client(f"{server.url}/mcp/", http_client=client) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def ws_names(result) -> list[str]:
    return [d["name"] for d in result.structuredContent["domains"] if d["name"].startswith("ws")]


def error_text(result) -> str:
    assert result.isError
    return result.content[0].text


async def check_tools(session: ClientSession, member: bool) -> None:
    """The same checks over either transport; ``member``: the user is in the lab group."""
    listed = await session.list_tools()
    assert sorted(t.name for t in listed.tools) == ["ask", "list_domains", "search"]
    assert all(t.annotations.readOnlyHint and not t.annotations.destructiveHint for t in listed.tools)
    search_schema = next(t for t in listed.tools if t.name == "search").inputSchema
    assert sorted(search_schema["required"]) == ["domain", "query"]

    domains = await session.call_tool("list_domains", {})
    assert ws_names(domains) == (["wsarrays", "wsneuro", "wssecret"] if member else ["wsarrays", "wsneuro"])
    neuro = next(d for d in domains.structuredContent["domains"] if d["name"] == "wsneuro")
    assert [f["name"] for f in neuro["filter_fields"]] == ["authors", "year"]

    if member:
        found = (await session.call_tool("search", {"domain": "wssecret", "query": "Zorblax folding", "k": 2}))
        [hit] = found.structuredContent["results"]
        assert (hit["rank"], hit["score_label"], hit["file_name"], hit["title"], hit["headings"], hit["text"]) == (
            1, "high", "zorblax.md", "Zorblax folding notes", ["Notes", "Folding"], SECRET_TEXT)
        assert found.structuredContent["warnings"] == []
        answer = (await session.call_tool("ask", {"question": ZORBLAX, "domain": "wssecret"})).structuredContent
        assert answer["answer"].endswith("\n\nSources:\n- [1] Zorblax folding notes (zorblax.md — Notes > Folding)")
        assert (answer["route"], answer["domains"], answer["references"][0]["file_name"]) == (
            "domains", ["wssecret"], "zorblax.md")
    else:
        # a domain the user may not query is a missing one: no search, no chunks, no answer from it
        for tool, arguments in [("search", {"domain": "wssecret", "query": "Zorblax"}),
                                ("search", {"domain": "nowhere", "query": "Zorblax"}),
                                ("ask", {"question": ZORBLAX, "domain": "wssecret"})]:
            name = arguments["domain"]
            assert error_text(await session.call_tool(tool, arguments)) == (
                f"unknown_domain: no domain named {name!r} is available to you")
        answer = (await session.call_tool("ask", {"question": ZORBLAX})).structuredContent
        assert "wssecret" not in answer["domains"] and SECRET_TEXT not in answer["answer"]
    # no domain fits: the hint names what MCP callers pass (they have nothing to tick)
    off = (await session.call_tool("ask", {"question": "What is the capital of Australia?"})).structuredContent
    assert off["route"] == "refused"
    assert off["answer"].startswith("This question does not match any of the available domains (")
    assert off["answer"].endswith('). Pass "domain" to ask one directly.')

    # typed errors
    found = await session.call_tool("search", {"domain": "wsneuro", "query": "spiking", "k": 99})
    assert error_text(found) == "bad_request: \"k\" must be an integer from 1 to 10 (the domain's k_max)"
    assert found.structuredContent == {"error": {
        "code": "bad_request", "message": "\"k\" must be an integer from 1 to 10 (the domain's k_max)"}}
    assert error_text(await session.call_tool("search", {"domain": "wsneuro", "query": "  "})) == (
        'bad_request: "query" must be a non-empty string')
    assert error_text(await session.call_tool("ask", {"question": "\u200b\u200b"})) == (
        'bad_request: "question" must be a non-empty string')
    assert error_text(await session.call_tool("search", {"domain": "ws\x00neuro", "query": "spiking"})) == (
        'bad_request: "domain" contains a NUL character or a lone surrogate')  # was a database error
    # arguments the tool's schema refuses: the same typed error, checked before the tool runs
    found = await session.call_tool("search", {"domain": "wsneuro", "query": 5, "k": "many"})
    assert found.structuredContent == {"error": {
        "code": "bad_request", "message": '"query": must be a string; "k": must be an integer'}}
    assert error_text(found) == 'bad_request: "query": must be a string; "k": must be an integer'
    assert error_text(await session.call_tool("ask", {"filters": [1]})) == (
        'bad_request: "question": missing; "filters": must be an object')
    deep = {"year": 2020}
    for _ in range(25):
        deep = {"$and": [deep]}
    assert error_text(await session.call_tool("search", {"domain": "wsneuro", "query": "q", "filters": deep})) == (
        'bad_request: "filters" nests more than 20 levels')
    assert error_text(await session.call_tool("ask", {"question": "x" * 5_000})) == (
        'too_large: "question" has 5000 characters; the limit is 4000 (KLEA_MAX_QUESTION_CHARS)')
    found = await session.call_tool("search", {"domain": "wsneuro", "query": "spiking",
                                               "filters": {"year": {"$nope": 1}}})
    assert error_text(found).startswith("bad_filter: ")
    found = await session.call_tool("search", {"domain": "wsneuro", "query": "cheap spiking neuron model",
                                               "filters": {"year": {"$gte": 2000}}})
    assert [(h["file_name"], h["year"]) for h in found.structuredContent["results"]] == [("izhikevich.md", 2003)]


@pytest.mark.asyncio
async def test_over_streamable_http_with_tokens(world, tmp_path):
    row, bob = in_thread(tokens.create_token, world.bob, "agent")
    _, alice = in_thread(tokens.create_token, world.alice, "agent")
    log = tmp_path / "daphne.log"
    with LiveDaphne(log) as server:
        async with http_session(server, alice) as session:
            await check_tools(session, member=True)
        async with http_session(server, bob) as session:
            await check_tools(session, member=False)
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{server.url}/mcp/", json={})
            assert (response.status_code, response.json()["error"]["code"]) == (401, "not_authenticated")
            in_thread(tokens.revoke, row)
            response = await client.post(f"{server.url}/mcp/", json={}, headers={"Authorization": f"Bearer {bob}"})
            assert (response.status_code, response.json()["error"]["code"]) == (401, "invalid_token")
            response = await client.post(f"{server.url}/mcp/", json={}, headers={"Host": "evil.example"})
            assert response.status_code == 400
            # JSON nested too deeply for the parser, a body over the limit, not JSON, a batch,
            # JSON that is no message: 400 with a JSON-RPC error in plain words, not a 500
            # and not pydantic's validation text
            headers = {"Authorization": f"Bearer {alice}", "Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream"}
            call = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", '
                    '"arguments": {"domain": "wsneuro", "query": "q", "filters": {"year": %s}}}}')
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            ping = {"jsonrpc": "2.0", "id": 4, "method": "ping"}
            for body, answer in [
                (call % ("[" * 30_000 + "]" * 30_000), rpc_error(1, -32700, "bad_json: not valid JSON: nested too deeply")),
                (call % ("0" * limit), rpc_error(None, -32600, f"too_large: the request body is larger than {limit} bytes")),
                ("{nope", rpc_error(None, -32700, "bad_json: not valid JSON (key must be a string at line 1, column 2)")),
                ("", rpc_error(None, -32700, "bad_json: not valid JSON (EOF while parsing a value at line 1, column 0)")),
                ('{"id": 007, ', rpc_error(None, -32700, "bad_json: not valid JSON (invalid number at line 1, column 9)")),
                (json.dumps([ping, {**ping, "id": 5}]), rpc_error(None, -32600, BATCH)),
                (json.dumps({"id": 6, "method": "ping"}), rpc_error(6, -32600, NOT_A_MESSAGE)),
                (json.dumps({"jsonrpc": "2.0", "id": 7}), rpc_error(7, -32600, NOT_A_MESSAGE)),
                ('"ping"', rpc_error(None, -32600, NOT_A_MESSAGE)),
                # an id the SDK does not take made the request a notification: 202, no answer
                (json.dumps({**ping, "id": {"a": 1}}), rpc_error(None, -32600, BAD_ID)),
                (json.dumps({**ping, "id": None}), rpc_error(None, -32600, BAD_ID)),
                (json.dumps({**ping, "id": 1.5}), rpc_error(None, -32600, BAD_ID)),
            ]:
                response = await client.post(f"{server.url}/mcp/", headers=headers, content=body)
                assert (response.status_code, response.json()) == (400, answer), body[:60]
            # one message is still answered by the SDK
            response = await client.post(f"{server.url}/mcp/", headers=headers, content=json.dumps(ping))
            assert (response.status_code, response.text.count('"id":4')) == (200, 1)
    assert "Traceback" not in log.read_text()


def stdio_env() -> dict:
    return {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": "", "KLEA_LLM_BACKEND": "extractive",
            "KLEA_RAG_GUARD_MODEL": "", "KLEA_EMBEDDING_CACHE_DIR": str(settings.KLEA_EMBEDDING_CACHE_DIR)}


@pytest.mark.asyncio
async def test_over_stdio_as_a_chosen_user(world):
    env = stdio_env()
    for user, member in (("ws-alice", True), ("ws-bob", False)):
        params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp", "--user", user],
                                       env=env, cwd=str(settings.BASE_DIR))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await check_tools(session, member=member)


def test_over_stdio_json_nested_too_deeply_gets_a_parse_error_and_the_server_reads_on(world):
    """The SDK dropped such a line with a log notice only: the client's call waited forever."""
    process = subprocess.Popen([sys.executable, "manage.py", "mcp", "--user", "ws-alice"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, env=stdio_env(), cwd=str(settings.BASE_DIR))

    def call(line: str) -> dict:
        process.stdin.write(line.encode() + b"\n")
        process.stdin.flush()
        assert select.select([process.stdout], [], [], TIMEOUT)[0], "no answer"
        return json.loads(process.stdout.readline())

    try:
        hello = call(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}))
        assert hello["result"]["serverInfo"]["name"] == "klea"
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        deep = "[" * 5_000 + "]" * 5_000
        assert call('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", '
                    f'"arguments": {{"domain": "wsneuro", "query": "q", "filters": {{"year": {deep}}}}}}}}}') == {
            "jsonrpc": "2.0", "id": 2, "error": {"code": -32700, "message": "bad_json: not valid JSON: nested too deeply"}}
        assert call("{nope") == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "bad_json: not valid JSON (key must be a string at line 1, column 2)"}}
        # an id that only looks like JSON (a bad escape, a leading zero, 5,000 digits) is null:
        # reading it stopped the server
        for line, where in (('{"id": "\\x", ', "invalid escape at line 1, column 10"),
                            ('{"id": 007, ', "invalid number at line 1, column 9"),
                            ('{"id": %s,' % ("1" * 5000), "number out of range at line 1, column 4309")):
            assert call(line) == rpc_error(None, -32700, f"bad_json: not valid JSON ({where})"), line[:20]
        assert call('[{"jsonrpc": "2.0", "id": 8, "method": "ping"}]') == rpc_error(None, -32600, BATCH)
        assert call('{"id": 9, "method": "ping"}') == rpc_error(9, -32600, NOT_A_MESSAGE)
        assert call('{"jsonrpc": "2.0", "id": true, "method": "ping"}') == rpc_error(None, -32600, BAD_ID)
        listed = call(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                  "params": {"name": "list_domains", "arguments": {}}}))
        assert ws_names(types.CallToolResult.model_validate(listed["result"])) == ["wsarrays", "wsneuro", "wssecret"]
    finally:
        process.stdin.close()
        process.wait(timeout=TIMEOUT)
