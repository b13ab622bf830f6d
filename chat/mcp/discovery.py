"""Fetch a server's tool list into the admin (``McpTool`` rows).

New tools start *not allowed*; their read-only flag starts from the server's
``readOnlyHint`` (an administrator confirms both). Known tools get the server's current
input schema and annotations; their description, allow-list entry and read-only flag
are the administrator's and are kept (an empty description is filled) — except that a
tool that declared ``readOnlyHint`` and no longer does, or that now declares
``destructiveHint``, loses its read-only flag (it is no longer offered until an
administrator looks again). Tools the server
no longer lists are kept but marked ``on_server = False`` (never offered).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from mcp import types

from .catalog import ServerSpec, server_spec
from .session import ServerFailed, open_session


@dataclass
class ToolListReport:
    """Names of the tools added, updated and no longer listed by the server."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    no_longer_read_only: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{len(self.added)} new" + (f" ({', '.join(self.added)})" if self.added else "")]
        parts.append(f"{len(self.updated)} updated")
        if self.gone:
            parts.append(f"{len(self.gone)} no longer listed ({', '.join(self.gone)})")
        if self.no_longer_read_only:
            names = ", ".join(self.no_longer_read_only)
            parts.append(f"{len(self.no_longer_read_only)} no longer read-only, not offered ({names})")
        return ", ".join(parts)


async def list_server_tools(spec: ServerSpec, timeout: float) -> list[types.Tool]:
    """Every tool the server lists (all pages), within ``timeout`` seconds in all.

    :raises ServerFailed: see :func:`chat.mcp.session.open_session`, or too slow.
    """
    tools: list[types.Tool] = []
    try:
        with anyio.fail_after(timeout):
            async with open_session(spec, None) as session:
                cursor = None
                while True:
                    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await session.list_tools(params=params)
                    tools.extend(page.tools)
                    cursor = page.nextCursor
                    if not cursor:
                        return tools
    except TimeoutError:
        raise ServerFailed(f"server {spec.name!r} did not list its tools within {timeout:g} s") from None


def refresh_tools(server, timeout: float | None = None) -> ToolListReport:
    """Update ``server``'s ``McpTool`` rows from its tool list (synchronous).

    :param server: an ``McpServer``.
    :param timeout: seconds for starting the server and its handshake; default
        KLEA_MCP_TOOL_BUDGET (as for tool calls).
    :raises ServerFailed: the server could not be reached (nothing is changed).
    """
    from chat.models import McpTool

    listed = async_to_sync(list_server_tools)(server_spec(server), timeout or settings.KLEA_MCP_TOOL_BUDGET)
    report = ToolListReport()
    with transaction.atomic():
        known = {tool.name: tool for tool in McpTool.objects.filter(server=server)}
        for tool in listed:
            annotations = tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}
            row = known.pop(tool.name, None)
            if row is None:
                McpTool.objects.create(
                    server=server,
                    name=tool.name,
                    description=tool.description or "",
                    input_schema=tool.inputSchema,
                    annotations=annotations,
                    read_only=bool(annotations.get("readOnlyHint")),
                )
                report.added.append(tool.name)
                continue
            withdrawn = (row.annotations or {}).get("readOnlyHint") and not annotations.get("readOnlyHint")
            if row.read_only and (withdrawn or annotations.get("destructiveHint")):
                row.read_only = False
                report.no_longer_read_only.append(tool.name)
            row.input_schema, row.annotations, row.on_server = tool.inputSchema, annotations, True
            row.description = row.description or tool.description or ""
            row.save(update_fields=["input_schema", "annotations", "on_server", "description", "read_only"])
            report.updated.append(tool.name)
        for row in known.values():
            if row.on_server:
                row.on_server = False
                row.save(update_fields=["on_server"])
            report.gone.append(row.name)
        server.tools_listed_at = timezone.now()
        server.save(update_fields=["tools_listed_at"])
    return report
