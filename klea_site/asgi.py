"""ASGI entry point: HTTP through Django, websockets through Channels.

Websockets pass the same-origin check (klea_site/ws_origin.py: the site's own scheme,
host and port, or ``CSRF_TRUSTED_ORIGINS``), then the session/auth middleware, then
the API token check (``Authorization: Bearer``, chat/tokens.py). The
embedding model starts loading as the server process starts, then the answer backend
warms up (the extractive one routes a question once); ``/health`` says ``"ready": true``
after that, so the first question waits for neither. Under daphne, a request body over
its path's limit is refused with 413 before it is read (klea_site/body_limits.py).
"""

import logging
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs apps loaded)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from django.conf import settings  # noqa: E402

from chat.mcp_server import with_mcp  # noqa: E402
from chat.routing import websocket_urlpatterns  # noqa: E402
from chat.tokens import BearerTokenWebsocketMiddleware  # noqa: E402
from chat.checks import W001_HINT, W001_MSG, insecure_secret_key  # noqa: E402
from chat.backends import warm_up_backend  # noqa: E402
from domains.embeddings import start_warm_up  # noqa: E402
from klea_site import body_limits  # noqa: E402
from klea_site.ws_origin import SameOriginValidator  # noqa: E402

body_limits.install()  # daphne refuses an oversized body before reading it (413)

application = ProtocolTypeRouter(
    {
        "http": with_mcp(django_asgi_app),  # /mcp/: the MCP server (docs/clients.md)
        "websocket": SameOriginValidator(
            AuthMiddlewareStack(BearerTokenWebsocketMiddleware(URLRouter(websocket_urlpatterns)))
        ),
    }
)
if insecure_secret_key():  # the system check (chat.W001) does not run under daphne
    logging.getLogger("klea").warning("%s %s", W001_MSG, W001_HINT)
if settings.KLEA_WARM_START:
    start_warm_up(then=warm_up_backend)
