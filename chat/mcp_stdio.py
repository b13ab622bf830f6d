"""The MCP server over stdio (``manage.py mcp --user NAME``): the SDK's transport with
client JSON checked first, as on the other entry points (chat/parsing.py).

The SDK drops a line it cannot parse (JSON nested deeper than pydantic's limit, or not
JSON) with only a log notice, so the client's call would wait forever. Here such a
line is answered with a JSON-RPC parse error, ``{"jsonrpc": "2.0", "id": <the request's
id when it can be read, else null>, "error": {"code": -32700, "message": "bad_json: not
JSON: nested too deeply"}}``, and the server reads on.
"""

from __future__ import annotations

import json
import re
import sys
from io import TextIOWrapper

import anyio
from mcp import types
from mcp.server.stdio import stdio_server
from pydantic import ValidationError

from .mcp_server import server

PARSE_ERROR = -32700
# The request's id, read from the start of a line that does not parse as a whole.
_ID = re.compile(r'^\s*\{[^{\[]*?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


def parse_error(line: str) -> str | None:
    """The JSON-RPC error line answering ``line``, or None when the SDK can read it."""
    try:
        types.JSONRPCMessage.model_validate_json(line)
        return None
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] != "json_invalid":
            return None  # JSON, not a message: the SDK answers that itself
        detail = str(first.get("ctx", {}).get("error") or first["msg"])
    found = _ID.match(line)
    message = "not JSON: nested too deeply" if "recursion limit" in detail else f"not JSON: {detail}"
    return json.dumps({"jsonrpc": "2.0", "id": json.loads(found.group(1)) if found else None,
                       "error": {"code": PARSE_ERROR, "message": f"bad_json: {message}"}})


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
