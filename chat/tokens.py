"""Personal API tokens (docs/clients.md): creation, the Bearer check and revocation, and
the middlewares that let a token act as its user.

A token reads ``klea_`` + 43 URL-safe characters (256 random bits). Only its SHA-256
digest is stored (:class:`chat.models.ApiToken`). A request with ``Authorization:
Bearer <token>`` is that token's user for the request, with the same domain groups, and
needs no CSRF token (browsers never add the header by themselves); a token that is
unknown, revoked or whose user is inactive gets 401 ``invalid_token`` on every path,
even where an anonymous visitor would be let in. Every accepted request records
``last_used_at``.
"""

from __future__ import annotations

import hashlib
import secrets

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.http import JsonResponse
from django.utils import timezone

from .models import ApiToken

TOKEN_PREFIX = "klea_"
PREFIX_CHARS = 12  # "klea_" + 7 characters: enough to tell a user's tokens apart
INVALID = "the API token is unknown, revoked, or its user is inactive"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(user, name: str) -> tuple[ApiToken, str]:
    """A new token for ``user``. :returns: ``(row, token)``; the token is shown once
    and never stored. :raises ValueError: an empty name, or one with a NUL character
    (the database stores none)."""
    name = " ".join(str(name).split())
    if not name:
        raise ValueError("a token needs a name (what it is for)")
    if "\x00" in name:
        raise ValueError("a token name cannot contain a NUL character")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(user=user, name=name[:100], prefix=token[:PREFIX_CHARS], digest=digest(token))
    return row, token


def revoke(row: ApiToken) -> bool:
    """Revoke ``row`` (idempotent). :returns: False when it was revoked already."""
    if row.revoked_at is not None:
        return False
    row.revoked_at = timezone.now()
    row.save(update_fields=["revoked_at"])
    return True


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value; None without
    one ("" for a Bearer header with no token)."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip()


def authenticate(token: str):
    """The active user ``token`` acts as, or None (unknown, revoked, inactive user);
    records ``last_used_at`` (synchronous ORM)."""
    if not token or len(token) > 200:
        return None
    row = ApiToken.objects.select_related("user").filter(digest=digest(token), revoked_at__isnull=True).first()
    if row is None or not row.user.is_active:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row.user


def invalid_token_response() -> JsonResponse:
    """401 in the shape both the JSON API and the OpenAI protocol read:
    ``{"error": {"code": "invalid_token", "message", "type", "param"}}``."""
    response = JsonResponse(
        {"error": {"code": "invalid_token", "message": INVALID, "type": "invalid_request_error", "param": None}},
        status=401,
    )
    response["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    return response


class BearerTokenMiddleware:
    """After AuthenticationMiddleware: a Bearer token replaces the session's user (and
    exempts the request from CSRF); a bad one is answered 401 at once."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self.__acall__(request)
        token = bearer(request.headers.get("Authorization"))
        if token is None:
            return self.get_response(request)
        user = authenticate(token)
        if user is None:
            return invalid_token_response()
        self._act_as(request, user)
        return self.get_response(request)

    async def __acall__(self, request):
        token = bearer(request.headers.get("Authorization"))
        if token is None:
            return await self.get_response(request)
        user = await sync_to_async(authenticate)(token)
        if user is None:
            return invalid_token_response()
        self._act_as(request, user)
        return await self.get_response(request)

    @staticmethod
    def _act_as(request, user) -> None:
        request.user = user
        request._cached_user = request._acached_user = user  # read by request.user / await request.auser()
        request.auth_token = True
        request._dont_enforce_csrf_checks = True  # a header no browser sends on its own


class BearerTokenWebsocketMiddleware:
    """Channels middleware (inside AuthMiddlewareStack): a websocket opened with a Bearer
    header is the token's user; a bad token is refused before the handshake (403)."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers") or [])
        token = bearer(headers.get(b"authorization", b"").decode("latin-1"))
        if token is not None:
            user = await sync_to_async(authenticate)(token)
            if user is None:
                await send({"type": "websocket.close", "code": 4401})
                return None
            scope = {**scope, "user": user, "api_token": token}  # checked again per query frame
        return await self.inner(scope, receive, send)


def user_for_headers(headers: dict[bytes, bytes]):
    """For ASGI apps outside Django (the MCP endpoint): the token's user, None for a
    bad token, AnonymousUser without a Bearer header."""
    token = bearer(headers.get(b"authorization", b"").decode("latin-1"))
    if token is None:
        return AnonymousUser()
    return authenticate(token)
