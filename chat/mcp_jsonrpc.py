"""What Klea's MCP server accepts from a client, checked before the SDK reads it, on both
transports (``/mcp/`` and stdio; docs/clients.md): one JSON-RPC 2.0 message.

Anything else is answered with a JSON-RPC error in plain words, never the SDK's pydantic
validation dump, and never silence (the SDK's stdio transport drops a line it cannot
read, so the client's call would wait forever):

- not JSON, or nested too deeply: ``-32700`` ``bad_json: not valid JSON (...)``, with the
  request's id when it can be read from the start of the text, else null;
- a batch (a JSON array; the MCP protocol has none since 2025-06-18): ``-32600``
  ``bad_request: a batch ...``;
- JSON that is no JSON-RPC message (no ``"jsonrpc": "2.0"``, no ``method``, ...):
  ``-32600`` ``bad_request: not a JSON-RPC 2.0 message ...``, with its id when it has one;
- an ``id`` that is no string or integer (an object, a list, null, true, 1.5): ``-32600``
  ``bad_request: "id" must be ...`` (the SDK read such a request as a notification, which
  is never answered).
"""

from __future__ import annotations

import json
import re

from mcp import types
from pydantic import ValidationError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
BATCH = ("bad_request: a batch (a JSON array of messages) is not supported; "
         "send one JSON-RPC message per request")
BAD_ID = 'bad_request: "id" must be a string or an integer'
NOT_A_MESSAGE = ('bad_request: not a JSON-RPC 2.0 message; send one JSON object with "jsonrpc": "2.0" and a '
                 '"method" (and an "id" for a request)')
# The request's id, read from the start of a text that does not parse as a whole.
_ID = re.compile(r'^\s*\{[^{\[]*?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')
_WHERE = re.compile(r" at line (\d+) column (\d+)$")


def error(ident: int | str | None, code: int, message: str) -> dict:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _request_id(literal: str) -> int | str | None:
    """The id a JSON literal of ``_ID`` reads as; None when it is no JSON value after all
    (``"\\x"``, ``007``, more digits than Python reads as an int), which the regular
    expression, kept simple, lets through."""
    try:
        return json.loads(literal)
    except ValueError:
        return None


def message_error(raw: str | bytes) -> dict | None:
    """The JSON-RPC error answering ``raw`` (one request body or stdio line), or None
    when it is one message the SDK can read (its own errors, such as an unknown method,
    then come from the SDK as JSON-RPC errors too)."""
    try:
        message = types.JSONRPCMessage.model_validate_json(raw).root
        if isinstance(message, types.JSONRPCNotification) and "id" in (message.model_extra or {}):
            return error(None, INVALID_REQUEST, BAD_ID)  # a request whose id the SDK does not take
        return None
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            found = _ID.match(text)
            detail = str(first.get("ctx", {}).get("error") or first["msg"])
            where = _WHERE.sub(r" at line \1, column \2", detail)
            message = "not valid JSON: nested too deeply" if "recursion limit" in detail else f"not valid JSON ({where})"
            return error(_request_id(found.group(1)) if found else None, PARSE_ERROR, f"bad_json: {message}")
    value = json.loads(raw)  # valid JSON (pydantic read it), just not one message
    if isinstance(value, list):
        return error(None, INVALID_REQUEST, BATCH)
    ident = value.get("id") if isinstance(value, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, (int, str)):
        ident = None
    return error(ident, INVALID_REQUEST, NOT_A_MESSAGE)
