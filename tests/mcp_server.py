"""A real MCP server for the tests, written with the SDK's FastMCP.

Run as a script: ``python tests/mcp_server.py`` (stdio) or
``python tests/mcp_server.py --http PORT`` (streamable HTTP on 127.0.0.1:PORT, path /mcp).

Tools (the neuroscience theme of tests/pipeline_data.py):

- ``channel_density`` (read-only): a deterministic "live" measurement;
- ``delete_model`` (destructive): must never be offered to a model;
- ``flaky_lookup`` (read-only): raises, so the call returns an error result;
- ``slow_lookup`` (read-only): sleeps, for the timeout tests;
- ``big_table`` (read-only): returns ``rows`` lines of 100 characters;
- ``lab_token`` (read-only): echoes the ``LAB_TOKEN`` environment variable (a secret);
- ``whoami`` (read-only): echoes the ``Authorization`` header of an HTTP request (a secret).

With ``MCP_CALL_LOG`` set, the server appends ``started <pid>`` when it starts and
``<tool> <arguments as JSON>`` when a tool is entered, so tests see exactly what ran.
"""

from __future__ import annotations

import argparse
import functools
import json
import os

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)

server = FastMCP("neuro-lab", log_level="WARNING")


def log(line: str) -> None:
    if os.environ.get("MCP_CALL_LOG"):
        with open(os.environ["MCP_CALL_LOG"], "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def logged(function):
    """Record the call in MCP_CALL_LOG before running the tool."""

    @functools.wraps(function)
    async def wrapper(**arguments):
        log(f"{function.__name__} {json.dumps(arguments, sort_keys=True)}")
        result = function(**arguments)
        return await result if hasattr(result, "__await__") else result

    return wrapper


@server.tool(annotations=READ_ONLY)
@logged
def channel_density(channel: str, region: str = "soma") -> str:
    """Current density of an ion channel in the lab's reference neuron (live data)."""
    density = 10 + sum(map(ord, channel + region)) % 90
    return f"{channel} density in the {region}: {density} mS/cm2 (measured today)"


@server.tool(annotations=DESTRUCTIVE)
@logged
def delete_model(model_id: str) -> str:
    """Delete a model from the lab's model database."""
    return f"deleted {model_id}"


@server.tool(annotations=READ_ONLY)
@logged
def flaky_lookup(channel: str) -> str:
    """Look up a channel in an archive that is currently broken."""
    raise RuntimeError(f"archive offline while looking up {channel}")


@server.tool(annotations=READ_ONLY)
@logged
async def slow_lookup(seconds: float) -> str:
    """Wait ``seconds`` before answering."""
    await anyio.sleep(seconds)
    return "finally"


@server.tool(annotations=READ_ONLY)
@logged
def big_table(rows: int) -> str:
    """``rows`` lines of 100 characters each."""
    return "\n".join(f"row {i:05d} ".ljust(99, "x") for i in range(rows))


@server.tool(annotations=READ_ONLY)
@logged
def lab_token() -> str:
    """The lab's access token (from the LAB_TOKEN environment variable)."""
    return f"token={os.environ.get('LAB_TOKEN', '')}"


@server.tool(annotations=READ_ONLY)
def whoami(ctx: Context) -> str:
    """Who the HTTP client says it is (its Authorization header)."""
    request = ctx.request_context.request
    return f"authorization={request.headers.get('authorization', '') if request else ''}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP on this port")
    options = parser.parse_args()
    log(f"started {os.getpid()}")
    if options.http:
        server.settings.port = options.http
        server.run(transport="streamable-http")
    else:
        server.run(transport="stdio")


if __name__ == "__main__":
    main()
