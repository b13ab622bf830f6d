"""The chat websocket's Origin check on a real daphne with a real websocket client: only
the site's own origin (scheme, host and port) or a ``DJANGO_CSRF_TRUSTED_ORIGINS`` entry
may open a socket with the visitor's cookie; behind a TLS proxy that says so
(``DJANGO_TRUST_PROXY_TLS_HEADER``), the site's origin is the https one."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from .chat_world import session_cookie, world  # noqa: F401
from .live_daphne import LiveDaphne

pytestmark = pytest.mark.django_db
TIMEOUT = 60
IDLE = {"type": "error", "code": "idle", "message": "no turn is running", "node": "", "fatal": False,
        "refused": "cancel"}


async def handshake(server: LiveDaphne, cookie: str, origin: str | None, **headers: str):
    """The socket's first answer to a cancel frame (accepted), or the handshake's HTTP status."""
    url = server.url.replace("http://", "ws://") + "/ws/chat/"
    try:
        async with websockets.connect(url, origin=origin, open_timeout=TIMEOUT,
                                      additional_headers={"Cookie": f"sessionid={cookie}", **headers}) as socket:
            await socket.send(json.dumps({"type": "cancel"}))
            return json.loads(await asyncio.wait_for(socket.recv(), TIMEOUT))
    except websockets.InvalidStatus as exc:
        return exc.response.status_code


@pytest.mark.asyncio
async def test_only_the_sites_own_or_a_trusted_origin_opens_the_socket(world, tmp_path):
    cookie = session_cookie(world.bob)
    env = {"KLEA_WARM_START": "false", "DJANGO_TRUST_PROXY_TLS_HEADER": "true",
           "DJANGO_CSRF_TRUSTED_ORIGINS": "https://klea.example.org,https://*.lab.example"}
    with LiveDaphne(tmp_path / "daphne.log", **env) as server:
        port = server.port
        site = f"http://127.0.0.1:{port}"
        results = {origin: await handshake(server, cookie, origin) for origin in [
            site,
            "http://127.0.0.1:9999",  # another port of the same host
            f"https://127.0.0.1:{port}",  # another scheme
            "http://127.0.0.1",  # the default port
            f"http://localhost:{port}",  # another name of the same machine
            "http://evil.example",
            f"http://127.0.0.1.evil.example:{port}",
            "null",
            None,  # no Origin header
            "https://klea.example.org",  # trusted
            "http://klea.example.org",  # trusted only over https
            "https://jupyter.lab.example",  # trusted by wildcard
            "https://lab.example.evil.example",
        ]}
        # behind the TLS proxy: the site's origin is https, its http origin is another scheme
        behind_proxy = {origin: await handshake(server, cookie, origin, **{"X-Forwarded-Proto": "https"})
                        for origin in [f"https://127.0.0.1:{port}", site]}
    assert results == {
        site: IDLE,
        "http://127.0.0.1:9999": 403,
        f"https://127.0.0.1:{port}": 403,
        "http://127.0.0.1": 403,
        f"http://localhost:{port}": 403,
        "http://evil.example": 403,
        f"http://127.0.0.1.evil.example:{port}": 403,
        "null": 403,
        None: 403,
        "https://klea.example.org": IDLE,
        "http://klea.example.org": 403,
        "https://jupyter.lab.example": IDLE,
        "https://lab.example.evil.example": 403,
    }
    assert behind_proxy == {f"https://127.0.0.1:{port}": IDLE, site: 403}
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()
