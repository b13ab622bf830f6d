"""The MCP server over stdio (``manage.py mcp --user NAME``): the SDK's transport with
each line checked first (chat/mcp_jsonrpc.py), as ``/mcp/`` checks a request body.

The SDK drops a line it cannot read as one message (JSON nested deeper than pydantic's
limit, not JSON, a batch, JSON that is no JSON-RPC message) with only a log notice, so
the client's call would wait forever. Here such a line is answered with a JSON-RPC
error, e.g. ``{"jsonrpc": "2.0", "id": <the request's id when it can be read, else
null>, "error": {"code": -32700, "message": "bad_json: not valid JSON: nested too
deeply"}}``, and the server reads on.
"""

from __future__ import annotations

import json
import sys
from io import TextIOWrapper

import anyio
from mcp.server.stdio import stdio_server

from .mcp_jsonrpc import message_error
from .mcp_server import server


def parse_error(line: str) -> str | None:
    """The JSON-RPC error line answering ``line``, or None when the SDK can read it."""
    answer = message_error(line)
    return None if answer is None else json.dumps(answer)


class _Output:
    """Standard output shared by the SDK's writer and the parse errors: one line at a time."""

    def __init__(self, stream):
        self._stream = stream
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._stream.write(text)
            await self._stream.flush()

    async def flush(self) -> None:
        pass  # each write is flushed under the lock


class _CheckedInput:
    """Standard input without the lines :func:`parse_error` answers."""

    def __init__(self, stream, output: _Output):
        self._stream = stream
        self._output = output

    async def __aiter__(self):
        async for line in self._stream:
            error = parse_error(line)
            if error is None:
                yield line
            else:
                await self._output.write(error + "\n")


async def run_stdio() -> None:
    """Serve :data:`chat.mcp_server.server` on standard input and output."""
    output = _Output(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8")))
    checked = _CheckedInput(anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")), output)
    async with stdio_server(stdin=checked, stdout=output) as (read_stream, write_stream):
        await server._mcp_server.run(read_stream, write_stream, server._mcp_server.create_initialization_options())
