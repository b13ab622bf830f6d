"""One connection to an MCP server through the official ``mcp`` SDK.

stdio servers are started with ``stdio_client`` (the process gets only the SDK's safe
environment, HOME, LOGNAME, PATH, SHELL, TERM and USER, plus the server's ``env``);
its stderr goes to a temporary file so that a server that fails to start can be
described by its last lines. HTTP servers are reached with ``streamable_http_client``
over an httpx client carrying the server's ``headers``. Either way a ``ClientSession``
is opened and initialised (the ``initialize`` handshake), within ``timeout`` seconds
when one is given.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.shared.exceptions import McpError
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ..redact import public_url
from .catalog import ServerSpec, mask

STDERR_TAIL_CHARS = 300
# HTTP transport: connecting takes milliseconds on a working server; responses arrive as
# server-sent events on a stream that stays open, so reads are bounded by the calls' own
# timeouts, not here.
HTTP_TIMEOUT = httpx.Timeout(30.0, connect=10.0, read=None)


class ServerFailed(Exception):
    """The server could not be started or did not complete the MCP handshake.

    ``str(exc)``: the details for administrators and the log (command or URL without
    user info, the cause, the end of the server's stderr; secrets masked); ``public``:
    one short line for chat users (server name and the kind of failure only).
    """

    def __init__(self, message: str, public: str = ""):
        super().__init__(message)
        self.public = public or message


def innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """One line for an exception, unwrapping the exception groups of anyio task groups."""
    exc = innermost(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _stderr_tail(errlog) -> str:
    errlog.flush()
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    return " | ".join(lines)[-STDERR_TAIL_CHARS:]


async def _start(stack: AsyncExitStack, spec: ServerSpec, timeout: float | None, errlog) -> ClientSession:
    if spec.transport == "stdio":
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env))
        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    else:
        client = create_mcp_http_client(headers=dict(spec.headers) or None, timeout=HTTP_TIMEOUT)
        await stack.enter_async_context(client)
        read, write, _ = await stack.enter_async_context(streamable_http_client(spec.url, http_client=client))
    session = await stack.enter_async_context(ClientSession(read, write))
    with anyio.fail_after(timeout) if timeout else nullcontext():
        await session.initialize()
    return session


def _connection_closed(exc: BaseException) -> bool:
    """A server that exits mid-handshake surfaces as the SDK's "Connection closed" or,
    when the exit wins the race with our write, as anyio's closed/broken stream."""
    exc = innermost(exc)
    if isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)):
        return True
    return isinstance(exc, McpError) and "connection closed" in str(exc).lower()


def _failure(spec: ServerSpec, exc: Exception, timeout: float | None, errlog) -> ServerFailed:
    where = spec.command if spec.transport == "stdio" else public_url(spec.url)
    if isinstance(exc, TimeoutError) and timeout:
        cause = kind = f"no answer within {timeout:g} s"
    elif spec.transport == "stdio" and _connection_closed(exc):
        cause = kind = "the server closed the connection during the handshake"
    else:
        cause, kind = describe(exc), type(innermost(exc)).__name__
    tail = _stderr_tail(errlog) if spec.transport == "stdio" else ""
    message = f"server {spec.name!r} ({where}) did not start: {cause}" + (f"; stderr: {tail}" if tail else "")
    return ServerFailed(mask(message, spec.secrets()), f"server {spec.name!r} did not start ({kind})")


@asynccontextmanager
async def open_session(spec: ServerSpec, timeout: float | None) -> AsyncIterator[ClientSession]:
    """An initialised session with ``spec``'s server, closed (process stopped) on exit.

    :param timeout: seconds for starting and the handshake; None = no bound of its own
        (the caller's cancel scope bounds it, as the tool budget does for calls).
    :raises ServerFailed: the command cannot be run, the server exits or answers
        nonsense, the URL cannot be reached, or the handshake takes longer than
        ``timeout`` (the message says which, with the end of the server's stderr;
        secrets masked). It is raised after the transport is closed, so it never
        arrives wrapped in the transport's exception group.
    """
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        failure: ServerFailed | None = None
        started = False
        try:
            async with AsyncExitStack() as stack:
                try:
                    session = await _start(stack, spec, timeout, errlog)
                except Exception as exc:
                    failure = _failure(spec, exc, timeout, errlog)
                if failure is None:
                    started = True
                    yield session
        except Exception as exc:
            if started:
                raise  # the caller's own error, or the server failing mid-call
            # A transport task that failed while starting (a refused HTTP connection)
            # surfaces here, as the transport's exception group.
            failure = failure or _failure(spec, exc, timeout, errlog)
        if failure is not None:
            raise failure
