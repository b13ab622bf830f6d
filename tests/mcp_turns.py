"""Turns with MCP tools: fixtures and helpers shared by the MCP pipeline tests (the fake
Ollama server choosing tool calls, the test MCP server attached to the ``neuro`` domain).

Tool events come from a background task, so they interleave with the events of
generate_queries and retrieve: the tests check the other events exactly (``tools=False``),
the tool events exactly (per call), and that all of them fall between pick_tools and
join_tools.
"""

from __future__ import annotations

import pytest

from .fake_ollama import FakeOllama, Reply, ollama_backend
from .pipeline_data import make_domains, material_files

SCORES = ("confidence", "coverage", "relevance", "groundedness", "coherence", "conciseness")
QUESTION = "What is the sodium channel density of the lab's neuron right now?"
LAB_TOOLS = "big_table, channel_density, flaky_lookup, lab_token, slow_lookup"


def scores() -> Reply:
    return Reply.json({**{key: 0.9 for key in SCORES}, "next_step": "continue", "summary": "Fine."})


@pytest.fixture
def fake(settings):
    with ollama_backend(settings, KLEA_RAG_GUARD_MODEL="", KLEA_LLM_TIMEOUT=30, KLEA_MCP_TOOL_TIMEOUT=30,
                        KLEA_MCP_TOOL_BUDGET=60, KLEA_MCP_MAX_CALLS=4, KLEA_MCP_RESULT_CHARS=2500) as server:
        yield server


@pytest.fixture
def domains(db):
    return make_domains()


@pytest.fixture
def call_log(tmp_path):
    return tmp_path / "calls.log"


def numbers(body: dict) -> dict[str, int]:
    """{source title or file name: number} in an answer request's material."""
    return {name: n for n, name in material_files(body["messages"][0]["content"]).items()}


def answer_citing(template: str, **titles) -> Reply:
    """An answer citing each ``titles`` value (a source title) as ``{key}``."""
    return Reply.using(lambda body: Reply.text(template.format(**{k: numbers(body)[t] for k, t in titles.items()})))


def answer_prompt(fake: FakeOllama) -> str:
    return [b for b in fake.bodies() if b.get("stream")][-1]["messages"][0]["content"]


def script_turn(fake, tool_reply: Reply, answer: Reply) -> None:
    fake.script(
        Reply.json({"query_domains": ["neuro"]}),
        Reply.json({"queries": ["sodium channel density"], "filters": {}}),
        answer,
        scores(),
    )
    fake.script_tools(tool_reply)


def documents(fake: FakeOllama) -> int:
    """How many retrieved documents the answer model was given (before the tools)."""
    return sum(1 for name in material_files(answer_prompt(fake)).values() if not name.endswith(")"))


def head(fake: FakeOllama, offers: str) -> list[str]:
    n = documents(fake)
    return [
        "memory: no session",
        "guard: skipped (no guard model)",
        "classify: neuro",
        "route: domains: neuro",
        f"pick_tools: offers {offers}; choosing in the background",
        "generate_queries: sodium channel density",
        f"retrieve: {n} chunks, {n} sources (k=default)",
    ]
