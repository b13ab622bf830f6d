"""Klea as an MCP server (docs/clients.md), built on the official ``mcp`` SDK (FastMCP).

(Klea as an MCP *client*, calling the tools of a domain's servers, is chat/mcp/.)

Three read-only tools, acting as one user with that user's domains:

- ``list_domains()`` -> ``{"domains": [{"name", "description", "examples", "filter_fields"}]}``;
- ``search(domain, query, filters?, k?)`` -> ``{"domain", "query", "results": [result],
  "warnings"}``, a result = the reference fields of the chunk's document (``file_name``,
  ``store``, ``document_id``, ``title``, ``authors``, ``year``, ``journal``, ``doi``,
  ``url``, ``urls``) and of the chunk (``chunk_id``, ``headings``, ``heading_chain``,
  ``text``, and pages when the chunk records them) plus ``rank`` (1 = best), ``score``
  (0-1, relative to the best result of this search) and ``score_label`` ("high" >= 0.67,
  "medium" >= 0.33, else "low");
- ``ask(question, domain?, filters?)`` -> ``{"answer", "route", "domains", "references",
  "warnings"}``: the full pipeline, stateless; ``answer`` keeps its ``[n]`` markers and
  ends with the "Sources" list.

Errors are tool errors (``isError``), text ``"<code>: <message>"`` and
``structuredContent`` ``{"error": {"code", "message"}}``, with the codes ``unknown_domain``
(missing and not-yours alike), ``bad_request`` (also an argument missing or of the wrong type,
checked before the tool runs), ``too_large``, ``bad_filter``,
``too_many_turns`` (the user already runs KLEA_MAX_TURNS_PER_USER turns, on any
transport), ``rate_limited`` (the user started KLEA_TURNS_PER_MINUTE turns in the last
minute; the message says when to ask again), ``unavailable``, or the pipeline's code for a failed turn. Limits are the
chat's: a query or question of at most KLEA_MAX_QUESTION_CHARS characters, the turns per
user, k at most the domain's ``k_max``, the reference budget KLEA_MAX_REFS_SIZE.

Transports: streamable HTTP at ``/mcp/`` on the site itself (:func:`with_mcp` routes it
in klea_site/asgi.py; ``Authorization: Bearer <API token>``, stateless, so any server
process answers any request; a body that is not one JSON-RPC message is HTTP 400 with a
JSON-RPC error, chat/mcp_jsonrpc.py: ``bad_json`` not JSON or nested too deeply,
``bad_request`` a batch or not a message, ``too_large`` over DATA_UPLOAD_MAX_MEMORY_SIZE),
and stdio (``manage.py mcp --user NAME``; the same check per line).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from domains.access import domain_list, may_chat, queryable_domains
from domains.retrieval import Source, retrieve
from domains.text import blank

from pydantic import ValidationError

from .mcp_jsonrpc import INVALID_REQUEST, message_error
from .mcp_jsonrpc import error as jsonrpc_error
from .parsing import BadRequest, check_filters, check_question, check_text
from .pipeline import TurnRequest, ask as ask_turn
from .pipeline.references import reference_item, sources_text
from .tokens import invalid_token_response, user_for_headers
from .turn_lock import LockUnavailable, TurnLimit, UserTurns
from .turn_setup import turn_owner

INSTRUCTIONS = (
    "Klea answers questions from curated document collections (domains) with numbered, "
    "checkable sources. Call list_domains first; search returns ranked chunks of one domain; "
    "ask runs the full question pipeline and returns an answer citing [n] sources."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
USER_SCOPE_KEY = "klea.user"
# The user of the stdio transport (manage.py mcp --user): there is no request to carry one.
stdio_user: contextvars.ContextVar = contextvars.ContextVar("klea_mcp_stdio_user", default=None)

class KleaMCP(FastMCP):
    """FastMCP whose argument errors are typed tool errors, like the tools' own: the SDK
    reports a pydantic ``ValidationError`` as untyped text ("Error executing tool ...")."""

    async def call_tool(self, name: str, arguments: dict[str, Any]):
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            try:
                tool.fn_metadata.arg_model.model_validate(tool.fn_metadata.pre_parse_json(arguments))
            except ValidationError as exc:
                return refusal(Refused("bad_request", argument_errors(exc)))
        return await super().call_tool(name, arguments)


def argument_errors(exc: ValidationError) -> str:
    """``'"k": must be an integer; "query": missing'``: each bad argument with what is wrong."""
    parts = []
    for item in exc.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f'"{where}": {_WHAT.get(item["type"], item["msg"].lower())}')
    return "; ".join(parts)


_WHAT = {"missing": "missing", "extra_forbidden": "not an argument of this tool",
         "int_parsing": "must be an integer", "int_type": "must be an integer",
         "int_from_float": "must be an integer", "string_type": "must be a string",
         "dict_type": "must be an object", "bool_type": "must be true or false"}


server = KleaMCP(
    "klea",
    instructions=INSTRUCTIONS,
    stateless_http=True,
    # The Host check is Django's ALLOWED_HOSTS (with_mcp); no cookie is ever used here.
    transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
)


def _user(ctx: Context):
    request = ctx.request_context.request
    if request is not None:
        return request.scope.get(USER_SCOPE_KEY) or AnonymousUser()
    user = stdio_user.get()
    if user is None:
        raise _fail("not_authenticated", "no user")
    return user


class Refused(Exception):
    """A typed tool error: ``code`` and ``message`` (module docstring)."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _fail(code: str, message: str) -> Refused:
    return Refused(code, message)


def typed_errors(tool):
    """A tool whose :class:`Refused` becomes an error result (``isError``) with the text
    ``"<code>: <message>"`` and ``structuredContent`` ``{"error": {"code", "message"}}``."""

    @functools.wraps(tool)
    async def run(*args, **kwargs):
        try:
            return await tool(*args, **kwargs)
        except Refused as exc:
            return refusal(exc)

    return run


def refusal(exc: Refused) -> CallToolResult:
    return CallToolResult(isError=True, content=[TextContent(type="text", text=str(exc))],
                          structuredContent={"error": {"code": exc.code, "message": exc.message}})


def _check_text(name: str, text) -> str:
    if not isinstance(text, str) or blank(text):
        raise _fail("bad_request", f'"{name}" must be a non-empty string')
    try:
        return check_question(name, text)
    except BadRequest as exc:
        raise _fail(exc.code, exc.message) from None


def _check_filters(filters) -> dict | None:
    if filters is None:
        return None
    if not isinstance(filters, dict):
        raise _fail("bad_request", '"filters" must be an object (the filter DSL)')
    try:
        return check_filters(filters) or None
    except BadRequest as exc:
        raise _fail(exc.code, exc.message) from None


def _unknown(name: str) -> Refused:
    return _fail("unknown_domain", f"no domain named {name!r} is available to you")


def score_label(score: float) -> str:
    """"high" (>= 0.67), "medium" (>= 0.33) or "low": where a result stands against the
    best one of its search (scores are normalised per search, docs/retrieval.md)."""
    return "high" if score >= 0.67 else "medium" if score >= 0.33 else "low"


def _result(rank: int, chunk) -> dict:
    """One chunk as a search result: its reference fields, flattened (module docstring)."""
    metadata = {k: v for k, v in chunk.metadata.items() if not k.startswith("_")}
    item = reference_item(rank, Source(rank, chunk.domain, chunk.store, chunk.file_name, chunk.document_id,
                                       metadata, [chunk]))
    [chunk_fields] = item.pop("chunks")
    for key in ("number", "kind"):
        item.pop(key)
    return {"rank": rank, "score": round(chunk.score, 4), "score_label": score_label(chunk.score), **item,
            **chunk_fields}


def _search(user, domain: str, query: str, filters: dict | None, k: int | None) -> dict:
    row = queryable_domains(user).prefetch_related("stores", "filter_fields").filter(name=domain).first()
    if row is None:
        raise _unknown(domain)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= row.k_max):
        raise _fail("bad_request", f'"k" must be an integer from 1 to {row.k_max} (the domain\'s k_max)')
    try:
        found = retrieve(query, [row], k=k or row.default_k, filters=filters)
    except ValueError as exc:
        raise _fail("bad_filter", str(exc)) from None
    warnings = [f"filter field {name!r} is not a field of this domain: ignored" for name in found.dropped_filters]
    if found.retrieval_failed:
        warnings.append("some stores could not be searched: " + "; ".join(found.failures))
    return {"domain": domain, "query": query, "results": [_result(i, c) for i, c in enumerate(found.results, 1)],
            "warnings": warnings}


@server.tool(annotations=READ_ONLY)
@typed_errors
async def list_domains(ctx: Context) -> dict[str, Any]:
    """The domains (document collections) you may query, with their filter fields
    (name, value type, description) for search and ask."""
    user = _user(ctx)
    return {"domains": await sync_to_async(domain_list)(user)}


@server.tool(annotations=READ_ONLY)
@typed_errors
async def search(domain: str, query: str, ctx: Context, filters: dict[str, Any] | None = None,
                 k: int | None = None) -> dict[str, Any]:
    """Hybrid (keyword + semantic) search of one domain: the best chunks, best first,
    each with its file, headings, bibliographic fields, text, score and score label.

    domain: a name from list_domains. query: what to look for. filters: the filter
    language on the domain's filter fields, e.g. {"year": {"$gte": 2020}}. k: how many
    chunks (default: the domain's own, at most its k_max).
    """
    user = _user(ctx)
    query = _check_text("query", query)
    try:
        check_text("domain", domain)  # looked up in the database, which takes no NUL
    except BadRequest as exc:
        raise _fail(exc.code, exc.message) from None
    filters = _check_filters(filters)
    return await sync_to_async(_search)(user, domain, query, filters, k)


def _ask_request(user, question: str, domain: str | None, filters: dict | None) -> TurnRequest:
    allowed = list(queryable_domains(user))
    if domain is not None and domain not in {d.name for d in allowed}:
        raise _unknown(domain)
    return TurnRequest(question, domains=allowed, pick=[domain] if domain else None, filters=filters,
                       pick_hint='Pass "domain" to ask one directly.')


@server.tool(annotations=READ_ONLY)
@typed_errors
async def ask(question: str, ctx: Context, domain: str | None = None,
              filters: dict[str, Any] | None = None) -> dict[str, Any]:
    """Answer a question from the documents, citing sources as [n]; the answer ends with
    its Sources list and the references come with it (file, headings, text, title,
    authors, year, DOI, links).

    question: the question. domain: answer from this domain (default: Klea picks among
    yours). filters: the filter language on the domain's filter fields.
    """
    user = _user(ctx)
    question = _check_text("question", question)
    filters = _check_filters(filters)
    request = await sync_to_async(_ask_request)(user, question, domain, filters)
    slot = UserTurns(turn_owner(user, None))
    try:
        await slot.acquire()
    except LockUnavailable as exc:
        raise _fail("unavailable", str(exc)) from None
    except TurnLimit as exc:
        raise _fail(exc.code, str(exc)) from None
    try:
        result = await ask_turn(request)
    finally:
        await slot.release()
    fatal = next((e for e in result.errors if e.fatal), None)
    answer = result.answer
    if fatal is not None or answer is None:
        raise _fail(fatal.code if fatal else "internal", fatal.message if fatal else "the turn ended without an answer")
    return {"answer": answer.text + sources_text(result.references), "route": answer.route,
            "domains": answer.domains, "references": result.references, "warnings": answer.warnings}


class _McpEndpoint:
    """The streamable HTTP transport as an ASGI app: checks the Host (ALLOWED_HOSTS) and
    the Bearer token, puts the user in the scope, and hands the request to the SDK's
    session manager, started on the first request (daphne has no ASGI lifespan)."""

    def __init__(self):
        self._ready: asyncio.Event | None = None

    async def _start(self) -> None:
        if self._ready is None:
            self._ready = asyncio.Event()
            asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()

    async def _run(self) -> None:
        server.streamable_http_app()  # creates the session manager
        async with server.session_manager.run():
            self._ready.set()
            await asyncio.Event().wait()  # for the life of the process

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        domain, _ = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            return await _send_json(send, 400, {"error": {"code": "bad_host", "message": f"host {host!r} not allowed"}})
        user = await sync_to_async(user_for_headers)(headers)
        if user is None:
            response = invalid_token_response()
            return await _send_json(send, 401, json.loads(response.content), response["WWW-Authenticate"])
        if not may_chat(user):
            return await _send_json(send, 401, {"error": {
                "code": "not_authenticated", "message": "send a Klea API token: Authorization: Bearer <token>"}},
                "Bearer")
        if scope.get("method") == "POST":
            try:
                receive = await _checked_body(receive)
            except _Refused as exc:
                return await _send_json(send, 400, exc.answer)
        await self._start()
        await server.session_manager.handle_request({**scope, USER_SCOPE_KEY: user}, receive, send)


class _Refused(Exception):
    """A request body answered with the JSON-RPC error ``answer`` (HTTP 400)."""

    def __init__(self, answer: dict):
        super().__init__(answer["error"]["message"])
        self.answer = answer


async def _checked_body(receive):
    """Read the whole request body and check that it is one JSON-RPC message
    (chat/mcp_jsonrpc.py): the SDK's own ``json.loads`` lets a RecursionError through (a
    500), and it answers a batch or a malformed message with pydantic's error text.

    :returns: a ``receive`` that replays the body to the SDK.
    :raises _Refused: ``too_large`` (over DATA_UPLOAD_MAX_MEMORY_SIZE), ``bad_json``,
        ``bad_request``, as JSON-RPC errors.
    """
    limit, parts, size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return _replay(message, receive)  # the client went away: the SDK sees that
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if limit is not None and size > limit:
            raise _Refused(jsonrpc_error(None, INVALID_REQUEST, f"too_large: the request body is larger than {limit} bytes"))
        if not message.get("more_body"):
            break
    body = b"".join(parts)
    answer = message_error(body)
    if answer is not None:
        raise _Refused(answer)
    return _replay({"type": "http.request", "body": body, "more_body": False}, receive)


def _replay(first: dict, receive):
    pending = [first]

    async def replay():
        return pending.pop() if pending else await receive()

    return replay


async def _send_json(send, status: int, body: dict, authenticate: str = "") -> None:
    headers = [(b"content-type", b"application/json")]
    if authenticate:
        headers.append((b"www-authenticate", authenticate.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


mcp_endpoint = _McpEndpoint()


def with_mcp(http_app):
    """``http_app`` with ``/mcp`` and ``/mcp/...`` answered by the MCP server."""

    async def route(scope, receive, send):
        path = scope.get("path", "")
        if path == "/mcp" or path.startswith("/mcp/"):
            return await mcp_endpoint(scope, receive, send)
        return await http_app(scope, receive, send)

    return route
