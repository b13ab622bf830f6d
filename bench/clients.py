"""The OpenAI-compatible endpoint against the websocket, and many streaming /v1 clients.

Starts one daphne (as bench/load.py does) on the benchmark database, where this
project's ``docs/`` are the domain ``bench-load-docs``, on the extractive backend.

1. Same questions, one at a time, alternating transports (websocket first on even
   rounds, /v1 first on odd ones): time to the first answer token and to the end, as the
   client sees them from sending the question. The websocket turn starts a new chat
   session (no history), like a /v1 turn; /v1 is read as raw server-sent events with
   httpx (time to the first non-empty ``delta.content``, and to ``data: [DONE]``).
2. ``--clients`` streaming /v1 clients at once, each its own user and API token (so the
   per-user limit KLEA_MAX_TURNS_PER_USER is not what is measured), each asking
   ``--questions`` questions one after another: errors, p50/p95 first token and total.

    python bench/clients.py                          # 3 rounds x 8 questions; 20 clients x 2 questions
    python bench/clients.py --rounds 1 --clients 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import command_line, setup_django  # noqa: E402
from bench.load import DOMAIN, QUESTION_TIMEOUT, QUESTIONS, Servers, percentile, prepare  # noqa: E402
from bench.load import ask as ws_ask  # noqa: E402

USER_PREFIX = "bench-clients-"
MODEL = f"klea/{DOMAIN}"


def make_tokens(count: int) -> list[str]:
    """One user and one fresh API token per client (earlier bench tokens are deleted)."""
    from django.contrib.auth.models import User

    from chat.models import ApiToken
    from chat.tokens import create_token

    ApiToken.objects.filter(user__username__startswith=USER_PREFIX).delete()
    tokens = []
    for number in range(count):
        user, _ = User.objects.get_or_create(username=f"{USER_PREFIX}{number}")
        tokens.append(create_token(user, "bench/clients.py")[1])
    return tokens


async def v1_ask(http, base: str, token: str, text: str) -> tuple[float | None, float, str]:
    """One streamed completion: (seconds to the first content, seconds to [DONE], error or "")."""
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": text}]}
    started = time.perf_counter()
    first = None
    async with http.stream("POST", f"{base}/v1/chat/completions", json=body,
                           headers={"Authorization": f"Bearer {token}"}) as response:
        if response.status_code != 200:
            return None, 0.0, f"HTTP {response.status_code}: {(await response.aread())[:200]!r}"
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            data = line[len("data: "):]
            if data == "[DONE]":
                return first, time.perf_counter() - started, "" if first is not None else "no content"
            chunk = json.loads(data)
            if "error" in chunk:
                return None, 0.0, f"error event: {chunk['error']}"
            if first is None and chunk["choices"][0]["delta"].get("content"):
                first = time.perf_counter() - started
    return None, 0.0, "the stream ended without [DONE]"


async def ws_turn(url: str, cookie: str, text: str) -> tuple[float | None, float, str]:
    import websockets

    async with websockets.connect(url, additional_headers={"Cookie": f"sessionid={cookie}"},
                                  origin="http://127.0.0.1", max_size=None, open_timeout=60) as socket:
        outcome, ttft, total = await ws_ask(socket, None, text)
    failed = outcome["errors"] or outcome["done"]["status"] != "complete" or ttft is None
    return ttft, total, json.dumps(outcome["errors"]) if failed else ""


def summary(pairs: list[tuple[float, float]]) -> dict:
    ttft, total = [p[0] for p in pairs], [p[1] for p in pairs]
    return {"ttft_ms": {"p50": round(percentile(ttft, 50)), "mean": round(statistics.mean(ttft) * 1000)},
            "done_ms": {"p50": round(percentile(total, 50)), "mean": round(statistics.mean(total) * 1000)}}


async def compare(port: int, cookie: str, token: str, rounds: int) -> dict:
    import httpx

    base, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws/chat/"
    measured = {"websocket": [], "v1": []}
    errors = []
    async with httpx.AsyncClient(timeout=QUESTION_TIMEOUT) as http:
        await ws_turn(ws_url, cookie, QUESTIONS[0])  # warm-up, not counted
        await v1_ask(http, base, token, QUESTIONS[0])
        for round_ in range(rounds):
            for text in QUESTIONS:
                order = ["websocket", "v1"] if round_ % 2 == 0 else ["v1", "websocket"]
                for transport in order:
                    if transport == "websocket":
                        ttft, total, error = await ws_turn(ws_url, cookie, text)
                    else:
                        ttft, total, error = await v1_ask(http, base, token, text)
                    if error:
                        errors.append({"transport": transport, "question": text, "error": error})
                    else:
                        measured[transport].append((ttft, total))
    ws, v1 = summary(measured["websocket"]), summary(measured["v1"])
    return {
        "turns_per_transport": rounds * len(QUESTIONS), "errors": errors,
        "websocket": ws, "v1": v1,
        "v1_vs_websocket_pct": {
            "ttft_p50": round(100 * (v1["ttft_ms"]["p50"] / ws["ttft_ms"]["p50"] - 1), 1),
            "done_p50": round(100 * (v1["done_ms"]["p50"] / ws["done_ms"]["p50"] - 1), 1),
        },
    }


async def concurrent(port: int, tokens: list[str], questions: int) -> dict:
    import httpx

    base = f"http://127.0.0.1:{port}"
    results, failures = [], []

    async def one_client(number: int, token: str, http) -> None:
        for index in range(questions):
            text = QUESTIONS[(number + index) % len(QUESTIONS)]
            try:
                ttft, total, error = await v1_ask(http, base, token, text)
            except Exception as exc:  # a dropped connection or a timeout: counted, never hidden
                ttft, total, error = None, 0.0, f"{type(exc).__name__}: {exc}"
            if error:
                failures.append({"client": number, "question": text, "error": error})
            else:
                results.append((ttft, total))

    limits = httpx.Limits(max_connections=len(tokens) + 5)
    async with httpx.AsyncClient(timeout=QUESTION_TIMEOUT, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(one_client(n, t, http) for n, t in enumerate(tokens)))
        wall = time.perf_counter() - started
    ttft, total = [r[0] for r in results], [r[1] for r in results]
    return {
        "clients": len(tokens), "questions_per_client": questions, "completed": len(results),
        "errors": len(failures), "failures": failures[:5], "wall_s": round(wall, 1),
        "ttft_ms": {"p50": round(percentile(ttft, 50)), "p95": round(percentile(ttft, 95))} if ttft else None,
        "done_ms": {"p50": round(percentile(total, 50)), "p95": round(percentile(total, 95))} if total else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the questions in the comparison")
    parser.add_argument("--clients", type=int, default=20, help="streaming /v1 clients at once")
    parser.add_argument("--questions", type=int, default=2, help="questions per concurrent client")
    args = parser.parse_args()
    setup_django()
    database_url, cookie = prepare()
    tokens = make_tokens(args.clients)
    log = ROOT / "var" / "bench-clients-daphne.log"
    print(f"$ {command_line()}")
    # The comparison asks 16 questions a round as one user: KLEA_TURNS_PER_MINUTE is not measured.
    with Servers(1, database_url, log, KLEA_TURNS_PER_MINUTE="0") as servers:
        port = servers.ports[0]
        figures = {"compare": asyncio.run(compare(port, cookie, tokens[0], args.rounds)),
                   "concurrent": asyncio.run(concurrent(port, tokens, args.questions))}
    print(json.dumps(figures, indent=2))
    errors = len(figures["compare"]["errors"]) + figures["concurrent"]["errors"]
    if errors:
        raise SystemExit(f"{errors} errors (daphne log: {log})")


if __name__ == "__main__":
    main()
