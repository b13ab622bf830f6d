"""The websocket Origin check: the same rule Django's CSRF middleware applies to forms.

A websocket handshake is accepted only when its ``Origin`` header is the site's own
origin (scheme, host and port of the request, as ``request.get_host()`` and
``request.is_secure()`` see them, so ``ALLOWED_HOSTS``, ``USE_X_FORWARDED_HOST`` and
``SECURE_PROXY_SSL_HEADER`` apply) or one of ``CSRF_TRUSTED_ORIGINS``. Anything else,
``null`` and a missing Origin included, gets HTTP 403 before the socket opens.
Channels' ``AllowedHostsOriginValidator`` compares the host name only, so a page on
another port or scheme of the same host could use the visitor's session cookie
(``SameSite=Lax`` treats it as the same site) -- see docs/security.md.
"""

from __future__ import annotations

import io

from channels.security.websocket import WebsocketDenier
from django.core.handlers.asgi import ASGIRequest
from django.middleware.csrf import CsrfViewMiddleware

# The page's origin has an http(s) scheme; the handshake's scope says ws(s).
_HTTP_SCHEME = {"ws": "http", "wss": "https"}


def origin_allowed(scope: dict) -> bool:
    """True when the websocket ``scope``'s Origin header is the site's own origin or a
    trusted one (``CSRF_TRUSTED_ORIGINS``, wildcards as Django reads them)."""
    http_scope = {**scope, "type": "http", "method": "GET",
                  "scheme": _HTTP_SCHEME.get(scope.get("scheme", "ws"), "http")}
    request = ASGIRequest(http_scope, io.BytesIO())
    if not request.META.get("HTTP_ORIGIN"):
        return False
    # Django's own check (private, but it is the rule this must equal; Django is pinned)
    return CsrfViewMiddleware(lambda request: None)._origin_verified(request)


class SameOriginValidator:
    """ASGI middleware for websockets: ``SameOriginValidator(inner_app)``; a handshake
    whose Origin fails :func:`origin_allowed` is denied (HTTP 403)."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator only handles websockets")
        if origin_allowed(scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
