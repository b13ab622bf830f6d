"""The test MCP server (tests/mcp_server.py) attached to a domain, as an administrator
would: a server row plus tool rows from the server's real tool list."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

from asgiref.sync import async_to_sync

from chat.mcp.catalog import ServerSpec
from chat.mcp.discovery import list_server_tools
from chat.models import McpServer, McpTool

SERVER_SCRIPT = str(Path(__file__).with_name("mcp_server.py"))
LAB_TOKEN = "s3cret-lab-token-42"
# The tools of tests/mcp_server.py an administrator allowed (delete_model too, by mistake:
# it is destructive, so it must still never be offered).
ALLOWED = ("channel_density", "delete_model", "flaky_lookup", "slow_lookup", "big_table", "lab_token")


@lru_cache(maxsize=1)
def lab_listing() -> tuple:
    """The server's tool list, fetched once per test session (a real stdio start)."""
    spec = ServerSpec(name="lab", domain="", transport="stdio", command=sys.executable, args=(SERVER_SCRIPT,))
    return tuple(async_to_sync(list_server_tools)(spec, 60))


def add_lab_server(domain, call_log: Path | None = None, *, name="neuro-lab", allowed=ALLOWED, **fields) -> McpServer:
    """The test server on ``domain`` with its tools; read-only flags as the server hints."""
    env = {"LAB_TOKEN": LAB_TOKEN}
    if call_log is not None:
        env["MCP_CALL_LOG"] = str(call_log)
    values = {"transport": "stdio", "command": sys.executable, "args": [SERVER_SCRIPT], "env": env, **fields}
    server = McpServer.objects.create(domain=domain, name=name, **values)
    for tool in lab_listing():
        annotations = tool.annotations.model_dump(exclude_none=True)
        McpTool.objects.create(
            server=server,
            name=tool.name,
            description=tool.description,
            input_schema=tool.inputSchema,
            annotations=annotations,
            read_only=bool(annotations.get("readOnlyHint")),
            allowed=tool.name in allowed,
        )
    return server


def calls_made(call_log: Path) -> list[str]:
    """What the server ran: ``started <pid>`` and ``<tool> <arguments>`` lines."""
    if not call_log.exists():
        return []
    return [line.split(" ", 1)[0] if line.startswith("started ") else line for line in call_log.read_text().splitlines()]
