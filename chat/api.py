"""The JSON HTTP API (docs/api.md): questions, domains, sessions and their messages.

Every endpoint needs a signed-in user (or KLEA_CHAT_PUBLIC): otherwise 401
``{"error": {"code": "not_authenticated", "message"}}``, checked before CSRF. Requests are
session-authenticated and CSRF-protected like any Django form: send the ``csrftoken`` cookie's value in an
``X-CSRFToken`` header with POST, PATCH and DELETE (a failed check is a JSON 403,
code ``csrf_failed``). Bodies are JSON objects; errors are ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

from functools import wraps

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.csrf import csrf_failure as django_csrf_failure

from domains.access import domain_list, may_chat, queryable_domains

from . import sessions
from .models import ChatSession
from .parsing import BadRequest, decode_json, parse_title
from .pipeline import TurnRequest, ask
from .turn_lock import LockUnavailable, TurnLimit, TurnLock
from .turn_setup import HTTP_STATUS, prepare_turn


def error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: JSON for the API, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return error(403, "csrf_failed", f"CSRF check failed ({reason}); send the csrftoken cookie in X-CSRFToken")
    return django_csrf_failure(request, reason=reason)


def api(*methods: str):
    """Allow ``methods``; answer 405 for other methods, then 401 when the user may not
    chat, then the CSRF check (Django's middleware, run after authentication), then
    400 ``too_large`` for a body over DATA_UPLOAD_MAX_MEMORY_SIZE."""

    def decorate(view):
        protected = csrf_protect(view)

        @csrf_exempt  # checked below, once the user is known to be signed in
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in methods:
                response = error(405, "method_not_allowed", f"use {' or '.join(methods)}")
                response["Allow"] = ", ".join(methods)
                return response
            if not may_chat(request.user):
                return error(401, "not_authenticated", "sign in (/accounts/login/) to use the API")
            try:
                return protected(request, *args, **kwargs)
            except RequestDataTooBig:
                limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                return error(400, "too_large", f"the request body is larger than {limit} bytes")

        return wrapper

    return decorate


@csrf_exempt
def not_found(request, path: str = ""):
    """Any other ``/api/...`` path: JSON 404."""
    return error(404, "not_found", f"no API endpoint {request.path}")


def _body(request) -> dict:
    body = decode_json(request.body or b"{}")
    if not isinstance(body, dict):
        raise BadRequest("bad_request", "the body must be a JSON object")
    return body


def _anon(request) -> list[int]:
    return sessions.anon_ids(request.session)


@api("POST")
def query(request):
    """``POST /api/query`` ``{"text", "session"?, "domains"?, "filters"?}``: one full turn.

    :returns: 200 ``{"session", "status", "answer", "route", "domains", "citations",
        "references", "warnings", "errors", "message_id"}`` (``answer`` null when the turn
        failed); 400 bad_json / bad_request / too_large / unknown_domain; 404 not_found;
        409 busy; 429 too_many_turns (KLEA_MAX_TURNS_PER_USER) / rate_limited
        (KLEA_TURNS_PER_MINUTE), with ``Retry-After``; 503 unavailable (Redis, which holds
        the session locks, did not answer).
    """
    try:
        prepared = prepare_turn(request.user, request.session, _body(request))
    except BadRequest as exc:
        return error(HTTP_STATUS.get(exc.code, 400), exc.code, exc.message)
    turn = prepared.request
    try:
        result = async_to_sync(_locked_ask)(turn, prepared.owner)
    except TurnLimit as exc:
        response = error(429, exc.code, str(exc))
        response["Retry-After"] = str(exc.retry_after)
        return response
    except LockUnavailable as exc:
        return error(503, "unavailable", str(exc))
    if result is None:
        return error(409, "busy", "this session is answering another question")
    answer = result.answer
    return JsonResponse({
        "session": turn.session_id,
        "status": result.done.status,
        "answer": answer.text if answer else None,
        "route": answer.route if answer else None,
        "domains": answer.domains if answer else [],
        "citations": answer.citations if answer else [],
        "references": result.references,
        "warnings": answer.warnings if answer else [],
        "errors": [{"code": e.code, "message": e.message, "node": e.node, "fatal": e.fatal} for e in result.errors],
        "message_id": answer.message_id if answer else None,
    })


async def _locked_ask(request: TurnRequest, owner: str):
    lock = TurnLock(request.session_id, owner)
    if not await lock.acquire():
        return None
    try:
        return await ask(request)
    finally:
        await lock.release()


@api("GET")
def domains(request):
    """``GET /api/domains``: ``{"domains": [{"name", "description", "filter_fields":
    [{"name", "value_type", "description"}]}]}``, only those the user may query."""
    return JsonResponse({"domains": domain_list(request.user)})


@api("GET", "POST")
def session_list(request):
    """``GET /api/sessions``: ``{"sessions": [session]}`` newest first;
    ``POST /api/sessions`` ``{"title"?}``: 201 with the new session
    (session = ``{"id", "title", "created_at", "updated_at"}``)."""
    if request.method == "GET":
        rows = sessions.owned(request.user, _anon(request)).order_by("-updated_at", "-id")
        return JsonResponse({"sessions": [sessions.session_payload(s) for s in rows]})
    try:
        title = _title(_body(request), required=False)
    except BadRequest as exc:
        return error(400, exc.code, exc.message)
    session = sessions.create(request.user, title)
    if not request.user.is_authenticated:
        sessions.remember_anon(request.session, session.pk)
    return JsonResponse(sessions.session_payload(session), status=201)


def _title(body: dict, required: bool) -> str:
    return parse_title(body, required, sessions.TITLE_MAX)


@api("GET", "PATCH", "DELETE")
def session_detail(request, session_id: int):
    """``GET``: the session; ``PATCH`` ``{"title"}``: rename it; ``DELETE``: 204.
    404 not_found for a session that is missing or not the user's."""
    try:
        session = sessions.get_owned(request.user, _anon(request), session_id)
    except ChatSession.DoesNotExist:
        return error(404, "not_found", f"no session {session_id}")
    if request.method == "DELETE":
        session.delete()
        return HttpResponse(status=204)
    if request.method == "PATCH":
        try:
            session.title = _title(_body(request), required=True)
        except BadRequest as exc:
            return error(400, exc.code, exc.message)
        session.save(update_fields=["title", "updated_at"])
    return JsonResponse(sessions.session_payload(session))


@api("GET")
def session_messages(request, session_id: int):
    """``GET /api/sessions/<id>/messages``: ``{"session", "messages": [message]}`` oldest
    first (message shape: :func:`chat.sessions.message_payload`; answers and references
    of domains the user may no longer query are hidden); 404 not_found."""
    try:
        session = sessions.get_owned(request.user, _anon(request), session_id)
    except ChatSession.DoesNotExist:
        return error(404, "not_found", f"no session {session_id}")
    messages = session.messages.order_by("id")
    allowed = set(queryable_domains(request.user).values_list("name", flat=True))
    return JsonResponse({"session": sessions.session_payload(session),
                         "messages": [sessions.message_payload(m, allowed) for m in messages]})
