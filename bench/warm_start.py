"""Benchmark: the first answer after a server starts (warm start, docs/benchmarks.md).

Each run starts a fresh daphne (as ``make run`` does, extractive backend) on the benchmark
database with the demo domain (the project's docs/, ingested once), waits until
``/health`` says ``"ready": true``, then asks two questions over the websocket as a
visitor who ticks no domain, and prints the time to the first answer token and to
``done`` of each, and per node the wall and the server process's CPU milliseconds (from
the ``done`` frame). ``--cold`` adds runs with KLEA_WARM_START=false (the models load on the
first question, as before warm start) for comparison.

    python bench/warm_start.py                 # 3 warm runs
    python bench/warm_start.py --runs 5 --cold 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import command_line, setup_django  # noqa: E402

QUESTIONS = ("How do I point Klea at my own PostgreSQL?", "Which file formats can I ingest?")


async def ask(url: str, text: str) -> tuple[float, float, dict]:
    """One question on a new websocket: (seconds to the first token, seconds to done,
    the ``done`` frame: wall and process CPU milliseconds per node)."""
    import websockets

    socket_url = url.replace("http://", "ws://") + "/ws/chat/"
    async with websockets.connect(socket_url, origin=url, max_size=None, open_timeout=60) as socket:
        started = time.perf_counter()
        await socket.send(json.dumps({"type": "query", "session": None, "text": text}))
        first = None
        while True:
            frame = json.loads(await asyncio.wait_for(socket.recv(), timeout=300))
            if frame["type"] == "token" and first is None:
                first = time.perf_counter() - started
            if frame["type"] == "done":
                if frame["status"] != "complete":
                    raise SystemExit(f"the turn ended {frame['status']}: {frame}")
                return first if first is not None else float("nan"), time.perf_counter() - started, frame


def run(warm: bool) -> dict:
    """One server start: seconds to ready (warm) or to the first /health answer (cold),
    then (first token, done) for each question."""
    from tests.live_daphne import LiveDaphne

    env = {"KLEA_CHAT_PUBLIC": "true", "KLEA_WARM_START": "true" if warm else "false", "KLEA_LOG_LEVEL": "WARNING"}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with LiveDaphne(Path(tmp) / "daphne.log", **env) as server:
            up = time.perf_counter() - started
            answers = [asyncio.run(ask(server.url, text)) for text in QUESTIONS]
    return {"up": up, "answers": answers}


def node_figures(done: dict) -> str:
    """``node wall/cpu`` of the nodes that took at least 1 ms, from a ``done`` frame (the
    server process's CPU: on a shared machine wall time grows with the load, CPU less)."""
    return ", ".join(f"{node} {ms:.0f}/{done['cpu_ms'].get(node, 0.0):.0f}"
                     for node, ms in done["timings"].items() if ms >= 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="server starts with warm start (default 3)")
    parser.add_argument("--cold", type=int, default=0, help="server starts without warm start (default 0)")
    options = parser.parse_args()
    setup_django()
    from io import StringIO

    from django.core.management import call_command

    call_command("demo", stdout=StringIO())  # the demo domain in the benchmark database (incremental)
    print(f"# {command_line()}")
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| start | server ready (s) | 1st question: first token / done (s) | 2nd question: first token / done (s) |")
    print("| --- | --- | --- | --- |")
    results = {True: [], False: []}
    for warm in [True] * options.runs + [False] * options.cold:
        result = run(warm)
        results[warm].append(result)
        (f1, d1, _), (f2, d2, _) = result["answers"]
        label = "warm" if warm else "cold (KLEA_WARM_START=false)"
        print(f"| {label} | {result['up']:.1f} | {f1:.2f} / {d1:.2f} | {f2:.2f} / {d2:.2f} |", flush=True)
        for number, (_, _, frame) in enumerate(result["answers"], 1):
            print(f"#   question {number}, ms wall/cpu: {node_figures(frame)}", flush=True)
    for warm, rows in results.items():
        if rows:
            first = [r["answers"][0][0] for r in rows]
            done = [r["answers"][0][1] for r in rows]
            print(f"# {'warm' if warm else 'cold'}: first question, first token median {statistics.median(first):.2f} s "
                  f"(min {min(first):.2f}), done median {statistics.median(done):.2f} s over {len(rows)} start(s)")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
