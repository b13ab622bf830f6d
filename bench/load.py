"""Load test: many websocket clients asking at once, on the extractive backend.

Starts daphne (as ``make run`` does: the same websocket cap) on loopback ports against the
benchmark database (``klea_bench``, bench/common.py), where this project's ``docs/`` are
ingested as the domain ``bench-load-docs`` (first run only; later runs skip unchanged
files). One signed-in user; each client opens its own socket and chat session and asks
its questions one after another (so the conversation memory is exercised too); all
clients run at once. A warm-up question (it loads the embedding model) is not counted.

Reported: errors (error frames, a ``done`` other than complete, timeouts, dropped
sockets), p50/p95 time to the first answer token and to ``done`` as the client sees them
(from sending the query frame), and the server's resident memory (peak and at the end,
sampled every 0.2 s, daphne processes summed).

    python bench/load.py                               # 50 clients x 5 questions, one daphne
    python bench/load.py --clients 10 --questions 2
    REDIS_URL=redis://127.0.0.1:6379/0 python bench/load.py --servers 2   # two daphnes, Redis layer
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import command_line, setup_django  # noqa: E402

DOMAIN = "bench-load-docs"
USER = "bench-load"
QUESTION_TIMEOUT = 300.0  # seconds; a turn slower than this counts as an error
QUESTIONS = [
    "How do I point Klea at my own PostgreSQL?",
    "What does make test do?",
    "How do I upload documents in the admin?",
    "Which settings control the reference material size?",
    "How are filter fields declared for a domain?",
    "How does Klea answer without a model server?",
    "What is the embedded database and where is its data?",
    "How do I ingest my own documents?",
]


def prepare() -> tuple[str, str]:
    """The domain and user in the benchmark database. :returns: (DATABASE_URL, session cookie)."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from domains.models import Domain
    from ingestion.runs.ingest import ingest

    Domain.objects.get_or_create(name=DOMAIN, defaults={"description": "Klea's own documentation: running, "
                                                        "configuring, ingesting, domains, the pipeline."})
    ingest(ROOT / "docs", f"{DOMAIN}-store", DOMAIN, mirror=True)
    user, _ = User.objects.get_or_create(username=USER)
    client = Client()
    client.force_login(user)
    db = connection.settings_dict
    host = db["HOST"] or db["OPTIONS"].get("host", "")
    port = db["PORT"] or db["OPTIONS"].get("port", "5432")
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    if host.startswith("/"):
        url = f"postgres://{db['USER']}{password}@/{db['NAME']}?host={host}&port={port}"
    else:
        url = f"postgres://{db['USER']}{password}@{host}:{port}/{db['NAME']}"
    return url, client.cookies["sessionid"].value


class Servers:
    """``count`` daphne processes on free loopback ports (killed on exit); ``env`` values
    override the environment (a bench that sends many turns for one user lifts the
    per-user limits it does not measure)."""

    def __init__(self, count: int, database_url: str, log: Path, **env: str):
        import socket

        self.ports = []
        for _ in range(count):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.ports.append(sock.getsockname()[1])
        self.env = {**os.environ, "DATABASE_URL": database_url, "KLEA_LLM_BACKEND": "extractive",
                    "KLEA_RAG_GUARD_MODEL": "", "REDIS_URL": os.environ.get("REDIS_URL", ""), **env}
        self.log = log
        self.processes = []

    def __enter__(self) -> Servers:
        import subprocess
        import urllib.request

        cap = str(8 * 1024 * 1024)  # the Makefile's WS_PROTOCOL_MAX
        for port in self.ports:
            command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "--websocket-max-message-size", cap, "--websocket-max-frame-size", cap,
                       "klea_site.asgi:application"]
            self.processes.append(subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=self.log.open("ab"),
                                                   stderr=subprocess.STDOUT))
        for port in self.ports:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"daphne on port {port} did not start; see {self.log}")
                    time.sleep(0.2)
        return self

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=30)

    def rss(self) -> int:
        import psutil

        total = 0
        for process in self.processes:
            try:
                total += psutil.Process(process.pid).memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total


async def ask(socket, session, text: str) -> tuple[dict, float | None, float]:
    """One turn: (done frame, seconds to the first token or None, seconds to done)."""
    frame = {"type": "query", "session": session, "text": text, "domains": [DOMAIN]}
    started = time.perf_counter()
    await socket.send(json.dumps(frame))
    first_token = None
    errors = []
    while True:
        event = json.loads(await asyncio.wait_for(socket.recv(), QUESTION_TIMEOUT))
        if event["type"] == "session":
            session = event["session"]
        elif event["type"] == "token" and first_token is None:
            first_token = time.perf_counter() - started
        elif event["type"] == "error":
            errors.append(event)
            if event.get("refused"):  # the query was refused: no turn, no "done" follows
                return {"done": {"status": "refused"}, "errors": errors, "session": session}, None, 0.0
        elif event["type"] == "done":
            return {"done": event, "errors": errors, "session": session}, first_token, time.perf_counter() - started


async def client(url: str, cookie: str, number: int, questions: int, results: list, failures: list) -> None:
    import websockets

    try:
        async with websockets.connect(url, additional_headers={"Cookie": f"sessionid={cookie}"},
                                      origin="http://127.0.0.1", max_size=None, open_timeout=60) as socket:
            session = None
            for index in range(questions):
                text = QUESTIONS[(number + index) % len(QUESTIONS)]
                outcome, ttft, total = await ask(socket, session, text)
                session = outcome["session"]
                if outcome["errors"] or outcome["done"]["status"] != "complete" or ttft is None:
                    failures.append({"client": number, "question": text, "errors": outcome["errors"],
                                     "status": outcome["done"]["status"]})
                else:
                    results.append((ttft, total))
    except Exception as exc:  # a dropped socket or a timeout: counted, never hidden
        failures.append({"client": number, "exception": f"{type(exc).__name__}: {exc}"})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1000


async def run(servers: Servers, cookie: str, clients: int, questions: int) -> dict:
    urls = [f"ws://127.0.0.1:{port}/ws/chat/" for port in servers.ports]
    warm: list = []
    warm_failures: list = []
    for url in urls:  # every server loads its embedding model once
        await client(url, cookie, 0, 1, warm, warm_failures)
    results: list = []
    failures: list = list(warm_failures)
    peak = servers.rss()
    stop = asyncio.Event()

    async def sample():
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, servers.rss())
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    await asyncio.gather(*(client(urls[n % len(urls)], cookie, n, questions, results, failures)
                           for n in range(clients)))
    wall = time.perf_counter() - started
    stop.set()
    await sampler
    ttft = [r[0] for r in results]
    total = [r[1] for r in results]
    return {
        "turns": clients * questions, "completed": len(results), "errors": len(failures),
        "failures": failures[:5], "wall_s": round(wall, 1),
        "turns_per_s": round(len(results) / wall, 2) if wall else 0.0,
        "ttft_ms": {"p50": round(percentile(ttft, 50)), "p95": round(percentile(ttft, 95)),
                    "mean": round(statistics.mean(ttft) * 1000)} if ttft else None,
        "done_ms": {"p50": round(percentile(total, 50)), "p95": round(percentile(total, 95)),
                    "max": round(max(total) * 1000)} if total else None,
        "rss_mib": {"peak": round(peak / 2**20), "end": round(servers.rss() / 2**20)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--questions", type=int, default=5, help="questions per client, one after another")
    parser.add_argument("--servers", type=int, default=1, help="daphne processes (more than one needs REDIS_URL)")
    args = parser.parse_args()
    if args.servers > 1 and not os.environ.get("REDIS_URL"):
        raise SystemExit("--servers > 1 needs REDIS_URL (the channel layer and turn locks are shared there)")
    setup_django()
    database_url, cookie = prepare()
    log = ROOT / "var" / "bench-load-daphne.log"
    print(f"$ {command_line()}")
    # One user's clients all ask at once: the per-user limits are not what is measured.
    with Servers(args.servers, database_url, log, KLEA_MAX_TURNS_PER_USER=str(args.clients),
                 KLEA_TURNS_PER_MINUTE="0") as servers:
        figures = asyncio.run(run(servers, cookie, args.clients, args.questions))
    print(json.dumps({"clients": args.clients, "questions_per_client": args.questions, "servers": args.servers,
                      "redis": bool(os.environ.get("REDIS_URL")), **figures}, indent=2))
    if figures["errors"]:
        raise SystemExit(f"{figures['errors']} errors (daphne log: {log})")


if __name__ == "__main__":
    main()
