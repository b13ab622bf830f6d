"""A burst of websocket opens with junk API tokens, and one real user opening beside them.

Starts one daphne (no model warm-up) from ``--root`` (this checkout by default; point it
at an older checkout to measure before a change) against the benchmark database
(bench/common.py), with one user and one API token. Then opens ``--sockets`` sockets at
once to ``/ws/chat/``, each with ``Authorization: Bearer klea_<43 junk characters>``,
and 0.5 s later the user's socket (a valid token), which sends a cancel frame. Printed:
how the junk opens ended, the seconds until the last one ended, and whether the user got
in and after how many seconds (daphne refuses a handshake its app has not answered in 5 s).

    python bench/handshake_burst.py --sockets 300
    python bench/handshake_burst.py --sockets 300 --root /path/to/older/checkout
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import daphne, setup_django  # noqa: E402

USER = "bench-handshake"
JUNK = "klea_" + "x" * 43


def prepare() -> tuple[str, str]:
    """DATABASE_URL of the benchmark database and a valid token of USER."""
    from django.contrib.auth.models import User
    from django.db import connection

    from chat.tokens import create_token
    from domains.embedded_postgres import database_url

    user, _ = User.objects.get_or_create(username=USER)
    return database_url(connection.settings_dict), create_token(user, "bench-handshake")[1]


async def open_with(url: str, origin: str, token: str, delay: float = 0.0) -> tuple[str, float]:
    import websockets

    await asyncio.sleep(delay)
    started = time.monotonic()
    try:
        async with websockets.connect(url, origin=origin, additional_headers={"Authorization": f"Bearer {token}"},
                                      open_timeout=60) as sock:
            await sock.send(json.dumps({"type": "cancel"}))
            reply = json.loads(await asyncio.wait_for(sock.recv(), 60))
            outcome = f"open ({reply.get('code')})"
    except Exception as exc:  # noqa: BLE001  (every way a handshake can fail is an outcome here)
        status = getattr(getattr(exc, "response", None), "status_code", None)
        outcome = f"refused {status}" if status else type(exc).__name__
    return outcome, time.monotonic() - started


async def burst(port: int, sockets: int, token: str) -> dict:
    url, origin = f"ws://127.0.0.1:{port}/ws/chat/", f"http://127.0.0.1:{port}"
    started = time.monotonic()
    junk = [asyncio.ensure_future(open_with(url, origin, JUNK)) for _ in range(sockets)]
    user_outcome, user_seconds = await open_with(url, origin, token, delay=0.5)
    junk_results = await asyncio.gather(*junk)
    return {"junk_sockets": sockets, "junk_outcomes": dict(Counter(outcome for outcome, _ in junk_results)),
            "junk_done_s": round(time.monotonic() - started, 1),
            "user": user_outcome, "user_s": round(user_seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=300)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout daphne serves")
    args = parser.parse_args()
    setup_django()
    database_url, token = prepare()
    env = {**os.environ, "DATABASE_URL": database_url, "KLEA_WARM_START": "false", "REDIS_URL": "",
           "PYTHONPATH": str(args.root.resolve())}
    log = Path("/tmp") / f"handshake-burst-{os.getpid()}.log"
    with daphne(args.root.resolve(), env, log) as (port, _):
        print(f"$ python bench/handshake_burst.py --sockets {args.sockets} --root {args.root}")
        print(json.dumps(asyncio.run(burst(port, args.sockets, token))))


if __name__ == "__main__":
    main()
