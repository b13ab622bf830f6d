"""The tools a turn may offer: allowed, read-only tools of the routed domains' active
servers, as plain values (no ORM objects leave this module).

Function names: the tool's own name, with characters outside ``[A-Za-z0-9_-]`` turned
into ``_`` (OpenAI-compatible servers reject others) and cut to 64 characters; when two
offered tools would share a name, both are called ``<server>__<tool>`` instead.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from domains.models import Domain

# Secrets shorter than this are not masked in tool output (masking "1" or "true"
# everywhere would destroy the text; real tokens and passwords are longer).
MIN_SECRET_CHARS = 8
MASK = "[secret]"
FUNCTION_NAME_CHARS = 64
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")
EMPTY_OBJECT_SCHEMA = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one MCP server. ``env`` and ``headers`` may hold secrets: they are
    left out of ``repr`` and must never reach logs or events."""

    name: str
    domain: str
    transport: str  # "stdio" | "http"
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def secrets(self) -> list[str]:
        """Values to mask in anything the server sends back (longest first)."""
        values = [*self.env.values(), *self.headers.values()]
        return sorted({v for v in values if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)


@dataclass(frozen=True)
class OfferedTool:
    """One tool as offered to the model.

    ``function``: the name the model calls it by; ``tool``: its name on the server;
    ``input_schema``: the server's JSON schema of the arguments (an empty schema means
    "no arguments").
    """

    function: str
    tool: str
    description: str
    input_schema: dict
    server: ServerSpec

    def spec(self) -> dict:
        """The OpenAI-style function spec the backends send (Ollama uses the same shape)."""
        return {
            "type": "function",
            "function": {"name": self.function, "description": self.description, "parameters": self.input_schema},
        }


def mask(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret replaced by ``[secret]``."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def _function_name(name: str) -> str:
    return _NOT_NAME.sub("_", name)[:FUNCTION_NAME_CHARS] or "tool"


def server_spec(server) -> ServerSpec:
    """A :class:`ServerSpec` from an ``McpServer`` row."""
    return ServerSpec(
        name=server.name,
        domain=server.domain.name,
        transport=server.transport,
        command=server.command,
        args=tuple(server.args or ()),
        env=dict(server.env or {}),
        url=server.url,
        headers=dict(server.headers or {}),
    )


def offered_tools(domains: Sequence[Domain]) -> list[OfferedTool]:
    """The tools offered for a turn routed to ``domains`` (synchronous: ORM).

    Only tools that are allowed, read-only and still listed by their server, of active
    servers of these domains. Ordered by domain (as given), server name, tool name.
    """
    from chat.models import McpTool

    order = {d.pk: i for i, d in enumerate(domains)}
    rows = list(
        McpTool.objects.filter(
            server__domain__in=list(order),
            server__active=True,
            allowed=True,
            read_only=True,
            on_server=True,
        ).select_related("server", "server__domain")
    )
    rows.sort(key=lambda t: (order[t.server.domain_id], t.server.name, t.name))
    specs = {}
    tools = []
    plain = Counter(_function_name(t.name) for t in rows)
    for row in rows:
        if row.server_id not in specs:
            specs[row.server_id] = server_spec(row.server)
        function = _function_name(row.name)
        if plain[function] > 1:
            function = _function_name(f"{row.server.name}__{row.name}")
        tools.append(
            OfferedTool(
                function=function,
                tool=row.name,
                description=row.description,
                input_schema=row.input_schema or dict(EMPTY_OBJECT_SCHEMA),
                server=specs[row.server_id],
            )
        )
    return tools
