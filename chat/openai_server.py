"""The OpenAI-compatible endpoint under ``/v1/`` (docs/clients.md): chat front ends (Open
WebUI, LibreChat, editor assistants) and the ``openai`` client use Klea as a model.

- ``GET /v1/models``: ``{"object": "list", "data": [model]}``, model = ``{"id", "object":
  "model", "created": 0, "owned_by": "klea"}``: ``klea`` (the question is classified among
  the user's domains) then ``klea/<domain>`` per domain the user may query;
  ``GET /v1/models/<id>`` one of them.
- ``POST /v1/chat/completions``: the last message (the user's) runs the full pipeline with
  the earlier user and assistant messages as the conversation (system, developer and tool
  messages are ignored: Klea uses its own prompts); nothing is stored. The answer keeps its
  ``[n]`` markers and ends with a "Sources" list; the references (shape: the chat's
  ``references`` event, docs/pipeline.md) travel in the extra top-level field
  ``references`` (in the last chunk when streaming), beside ``warnings`` (the chat's
  answer warnings: partial coverage, fallback, retrieval failures). ``"stream": true`` answers with
  server-sent events in the protocol's ``chat.completion.chunk`` format, ending with
  ``data: [DONE]``; a client that goes away cancels the turn. Extension: ``filters`` (the
  filter DSL, docs/retrieval.md). Other parameters (temperature, max_tokens, n, tools, ...)
  are accepted and ignored, as the protocol's servers do.

Authentication: an API token (``Authorization: Bearer``, chat/tokens.py) acting as its
user, or nobody (only with KLEA_CHAT_PUBLIC); the session cookie is not used here, so these
POSTs need no CSRF token. Errors have the protocol's shape ``{"error": {"message", "type",
"param", "code"}}``: 401 ``not_authenticated`` / ``invalid_token``, 404 ``model_not_found``
(a missing domain and one the user may not query alike), 400 ``bad_request`` /
``bad_json`` / ``too_large`` (a question over KLEA_MAX_QUESTION_CHARS, the body over
DATA_UPLOAD_MAX_MEMORY_SIZE) / ``bad_filter``, 405 ``method_not_allowed``, 429
``too_many_turns`` (the user already runs KLEA_MAX_TURNS_PER_USER turns, on any
transport) / ``rate_limited`` (the user started KLEA_TURNS_PER_MINUTE turns in the last
minute; ``Retry-After`` says when to try again, for both), 503 ``unavailable`` (Redis did not answer), 502 for a failed model server
(the pipeline's error code) and 500 ``internal``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from domains.access import may_chat, queryable_domains
from domains.text import blank

from .parsing import BadRequest, check_filters, check_question, check_text, decode_json
from .pipeline import Answer, Done, Error, References, Token, TurnRequest, run_turn
from .pipeline.references import sources_text
from .turn_lock import LockUnavailable, TurnLimit, UserTurns
from .turn_setup import turn_owner

CLASSIFY_MODEL = "klea"
DOMAIN_MODEL_PREFIX = "klea/"
PICK_HINT = f'Ask the model "{DOMAIN_MODEL_PREFIX}<domain>" to ask one directly.'
# Codes of a failed turn answered 502 (the model server's fault); other fatal codes are 500.
BACKEND_CODES = {"model_not_found", "unreachable", "timeout", "server_error", "not_supported"}
_ERROR_TYPES = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error"}


def error(status: int, code: str, message: str, param: str | None = None) -> JsonResponse:
    """The protocol's error body, ``{"error": {"message", "type", "param", "code"}}``."""
    kind = _ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return JsonResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status=status)


def _user(request):
    """The token's user; the session cookie is ignored here (see the module docstring)."""
    return request.user if getattr(request, "auth_token", False) else AnonymousUser()


def _unauthenticated() -> JsonResponse:
    response = error(401, "not_authenticated", "send a Klea API token: Authorization: Bearer <token>")
    response["WWW-Authenticate"] = "Bearer"
    return response


def _model(model_id: str) -> dict:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "klea"}


def _model_ids(user) -> list[str]:
    names = queryable_domains(user).values_list("name", flat=True)
    return [CLASSIFY_MODEL] + [DOMAIN_MODEL_PREFIX + name for name in names]


@csrf_exempt
async def models(request, model_id: str | None = None):
    """``GET /v1/models`` and ``GET /v1/models/<id>``."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    user = _user(request)
    if not may_chat(user):
        return _unauthenticated()
    ids = await sync_to_async(_model_ids)(user)
    if model_id is None:
        return JsonResponse({"object": "list", "data": [_model(i) for i in ids]})
    if model_id not in ids:
        return _no_model(model_id)
    return JsonResponse(_model(model_id))


def _method_not_allowed(allowed: str) -> JsonResponse:
    response = error(405, "method_not_allowed", f"use {allowed}")
    response["Allow"] = allowed
    return response


def _no_model(model_id: str) -> JsonResponse:
    return error(404, "model_not_found", f"The model {model_id!r} does not exist or you do not have access to it.",
                 "model")


@csrf_exempt
async def not_found(request, path: str = ""):
    """Any other ``/v1/...`` path."""
    return error(404, "not_found", f"no endpoint {request.path}")


def _text(content, index: int) -> str:
    """A message's text: a string, or the ``text`` parts of a list of content parts
    (images and other parts are ignored)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return check_text(f"messages[{index}].content", content)
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return check_text(f"messages[{index}].content", "\n".join(texts))
    raise BadRequest("bad_request", f"messages[{index}].content must be a string or a list of content parts")


def parse_completion(body) -> dict:
    """Check a chat-completions body.

    :returns: ``{"model", "question", "history", "stream", "filters"}``.
    :raises BadRequest: ``bad_request`` naming the field (``param``: the field).
    """
    if not isinstance(body, dict):
        raise BadRequest("bad_request", "the body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("bad_request", '"model" must be a model id from /v1/models')
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("bad_request", '"messages" must be a non-empty list')
    turns = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequest("bad_request", f'messages[{index}] must be an object with a "role"')
        turns.append({"role": message["role"], "content": _text(message.get("content"), index)})
    last = turns[-1]
    if last["role"] != "user" or blank(last["content"]):
        raise BadRequest("bad_request", "the last message must be the user's, with text")
    question = check_question(f"messages[{len(turns) - 1}].content", last["content"])
    stream = body.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise BadRequest("bad_request", '"stream" must be true or false')
    filters = body.get("filters")
    if filters is not None and not isinstance(filters, dict):
        raise BadRequest("bad_request", '"filters" must be an object (the filter DSL)')
    if filters:
        check_filters(filters)
    return {"model": model, "question": question, "history": turns[:-1], "stream": bool(stream),
            "filters": filters or None}


def _turn_request(user, parsed: dict) -> TurnRequest | None:
    """The turn for ``parsed`` as ``user`` may ask it; None for a model the user may not use."""
    allowed = list(queryable_domains(user))
    model = parsed["model"]
    if model == CLASSIFY_MODEL:
        pick = None
    elif model.startswith(DOMAIN_MODEL_PREFIX) and model[len(DOMAIN_MODEL_PREFIX):] in {d.name for d in allowed}:
        pick = [model[len(DOMAIN_MODEL_PREFIX):]]
    else:
        return None
    return TurnRequest(parsed["question"], domains=allowed, pick=pick, filters=parsed["filters"],
                       history=parsed["history"], pick_hint=PICK_HINT)


@csrf_exempt
async def chat_completions(request):
    """``POST /v1/chat/completions`` (module docstring)."""
    if request.method != "POST":
        return _method_not_allowed("POST")
    user = _user(request)
    if not may_chat(user):
        return _unauthenticated()
    try:
        parsed = parse_completion(decode_json(request.body or b"{}"))
    except RequestDataTooBig:
        return error(400, "too_large", f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
    except BadRequest as exc:
        return error(400, exc.code, exc.message)
    turn = await sync_to_async(_turn_request)(user, parsed)
    if turn is None:
        return _no_model(parsed["model"])
    slot = UserTurns(turn_owner(user, None))
    try:
        await slot.acquire()
    except LockUnavailable as exc:
        return error(503, "unavailable", str(exc))
    except TurnLimit as exc:
        response = error(429, exc.code, str(exc))
        response["Retry-After"] = str(exc.retry_after)
        return response
    completion = Completion(parsed["model"])
    if parsed["stream"]:
        response = StreamingHttpResponse(completion.stream(turn, slot), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # proxies must not hold the tokens back
        return response
    try:
        return await completion.complete(turn)
    finally:
        await slot.release()


class Completion:
    """One chat completion: the pipeline's events in the protocol's shapes."""

    def __init__(self, model: str):
        self.model = model
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def _object(self, kind: str, choice: dict, **extra) -> dict:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model, "choices": [choice],
                "system_fingerprint": None, **extra}

    async def complete(self, request: TurnRequest) -> JsonResponse:
        answer, references, fatal = None, [], None
        async for event in run_turn(request):
            if isinstance(event, References):
                references = event.references
            elif isinstance(event, Answer):
                answer = event
            elif isinstance(event, Error) and event.fatal:
                fatal = event
        if fatal is not None or answer is None:
            return _failed(fatal)
        message = {"role": "assistant", "content": answer.text + sources_text(references), "refusal": None}
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
        return JsonResponse(self._object("chat.completion", choice, references=references, warnings=answer.warnings))

    def _chunk(self, delta: dict, finish_reason: str | None = None, **extra) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return _sse(self._object("chat.completion.chunk", choice, **extra))

    async def stream(self, request: TurnRequest, slot: UserTurns) -> AsyncIterator[bytes]:
        """The server-sent events. Tokens go out as they come; a later attempt (the
        evaluator asked for a rewrite) follows a "Revised answer" line, since sent text
        cannot be taken back; then the "Sources" list and the final chunk with
        ``finish_reason`` "stop", ``references`` and ``warnings``; then ``data: [DONE]``. A failed turn
        sends one ``data: {"error": ...}`` instead. Closing early (the client went away)
        cancels the turn."""
        try:
            yield self._chunk({"role": "assistant", "content": ""})
            attempt, sent, references, warnings = 0, "", [], []
            async for event in run_turn(request):
                if isinstance(event, Token):
                    text = event.text
                    if event.attempt != attempt:
                        if sent:
                            text = "\n\n---\n\nRevised answer:\n\n" + text
                        attempt, sent = event.attempt, ""
                    sent += event.text
                    yield self._chunk({"content": text})
                elif isinstance(event, References):
                    references = event.references
                elif isinstance(event, Answer):
                    warnings = event.warnings
                    rest = event.text[len(sent):] if event.text.startswith(sent) else ""
                    if not sent and event.text:
                        rest = event.text
                    if rest or references:
                        yield self._chunk({"content": rest + sources_text(references)})
                elif isinstance(event, Error) and event.fatal:
                    yield _sse({"error": _failed_body(event)})
                elif isinstance(event, Done):
                    if event.status == "complete":
                        yield self._chunk({}, "stop", references=references, warnings=warnings)
            yield b"data: [DONE]\n\n"
        finally:
            await slot.release()


def _sse(data: dict) -> bytes:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _failed_body(fatal: Error | None) -> dict:
    if fatal is None:
        return {"message": "the turn ended without an answer", "type": "server_error", "param": None,
                "code": "internal"}
    return {"message": fatal.message, "type": "server_error", "param": None, "code": fatal.code}


def _failed(fatal: Error | None) -> JsonResponse:
    status = 502 if fatal is not None and fatal.code in BACKEND_CODES else 500
    return JsonResponse({"error": _failed_body(fatal)}, status=status)
