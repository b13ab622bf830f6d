"""Benchmark: what MCP tool calls cost a question, with the test server (tests/mcp_server.py,
FastMCP over stdio).

Measures, ``--runs`` times each, through the same code the pipeline runs
(:func:`chat.mcp.calls.run_calls`): one call (the server started, initialised, called and
stopped), three calls on the same server (one session, calls in parallel), and the
argument check of one call against its JSON schema (:func:`chat.mcp.plan.plan_calls`).
Prints min / median / max in milliseconds (the minimum is the best guide on a shared
machine: other processes only ever add time).

    python bench/mcp_tools.py
    python bench/mcp_tools.py --runs 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")

import django  # noqa: E402

django.setup()

from asgiref.sync import async_to_sync  # noqa: E402

from chat.backends.base import ToolRequest  # noqa: E402
from chat.mcp.calls import run_calls  # noqa: E402
from chat.mcp.catalog import OfferedTool, ServerSpec  # noqa: E402
from chat.mcp.discovery import list_server_tools  # noqa: E402
from chat.mcp.plan import PlannedCall, plan_calls  # noqa: E402

SERVER = ServerSpec(name="bench-lab", domain="bench", transport="stdio", command=sys.executable,
                    args=(str(ROOT / "tests" / "mcp_server.py"),))


async def _nothing(outcome) -> None:
    return None


def timed_calls(calls: list[PlannedCall]) -> float:
    started = time.perf_counter()
    outcomes = async_to_sync(run_calls)(calls, timeout=60, budget=120, max_chars=2500,
                                        on_start=_nothing, on_end=_nothing)
    elapsed = (time.perf_counter() - started) * 1000
    if any(o.status != "ok" for o in outcomes):
        raise SystemExit(f"a call failed: {[(o.tool.tool, o.status, o.message) for o in outcomes]}")
    return elapsed


def row(label: str, values: list[float]) -> str:
    return f"| {label} | {min(values):.1f} | {statistics.median(values):.1f} | {max(values):.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="repetitions of each measurement")
    options = parser.parse_args()

    listed = {t.name: t for t in async_to_sync(list_server_tools)(SERVER, 60)}
    tools = {name: OfferedTool(name, name, t.description or "", t.inputSchema, SERVER) for name, t in listed.items()}
    one = [PlannedCall(1, tools["channel_density"], {"channel": "Nav1.6"})]
    three = one + [PlannedCall(2, tools["big_table"], {"rows": 10}), PlannedCall(3, tools["lab_token"], {})]

    single = [timed_calls(one) for _ in range(options.runs)]
    triple = [timed_calls(three) for _ in range(options.runs)]
    request = [ToolRequest("channel_density", {"channel": "Nav1.6", "region": "axon"})]
    checks = []
    for _ in range(options.runs):
        started = time.perf_counter()
        for _ in range(1000):
            plan_calls(request, list(tools.values()), 4)
        checks.append((time.perf_counter() - started))  # ms per call = total s for 1000 calls

    print(f"python bench/mcp_tools.py --runs {options.runs}")
    print("| what | min ms | median ms | max ms |")
    print("|---|---|---|---|")
    print(row("1 call (start server, initialise, call, stop)", single))
    print(row("3 calls on one server (one session, in parallel)", triple))
    print(row("argument check of 1 call (JSON schema)", checks))


if __name__ == "__main__":
    main()
