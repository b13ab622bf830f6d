"""The per-turn state every node reads and writes, and the turn's configuration."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

from django.conf import settings

from chat.answers.material import Material
from chat.backends.base import LLMBackend
from domains.models import Domain
from domains.retrieval import ReferenceMaterial, RetrievalResult, Source

from .events import Event
from .references import ToolSource

GUARD_POLICIES = ("decline", "allow")


@dataclass(frozen=True)
class PipelineConfig:
    """Settings of one turn, read from Django settings by :meth:`from_settings`.

    :raises ValueError: a guard policy other than "decline" or "allow", or a budget < 1.
    """

    non_domain_chat: bool = True
    guard_on_error: str = "decline"
    retrieval_budget: int = 5
    rewrite_budget: int = 1
    max_queries: int = 3
    history_chars: int = 10_000
    tool_timeout: float = 60.0
    tool_budget: float = 120.0
    max_tool_calls: int = 4
    tool_result_chars: int = 2_500

    def __post_init__(self):
        if self.guard_on_error not in GUARD_POLICIES:
            raise ValueError(
                f"KLEA_RAG_GUARD_ON_ERROR={self.guard_on_error!r}; allowed: {', '.join(GUARD_POLICIES)}"
            )
        if self.retrieval_budget < 1 or self.max_queries < 1:
            raise ValueError("KLEA_RAG_RETRIEVAL_BUDGET and KLEA_RAG_MAX_QUERIES must be at least 1")
        if self.tool_timeout <= 0 or self.tool_budget <= 0 or self.max_tool_calls < 1 or self.tool_result_chars < 1:
            raise ValueError(
                "KLEA_MCP_TOOL_TIMEOUT and KLEA_MCP_TOOL_BUDGET must be > 0; "
                "KLEA_MCP_MAX_CALLS and KLEA_MCP_RESULT_CHARS at least 1"
            )

    @classmethod
    def from_settings(cls, **overrides) -> PipelineConfig:
        values = dict(
            non_domain_chat=settings.KLEA_RAG_NON_DOMAIN_CHAT,
            guard_on_error=settings.KLEA_RAG_GUARD_ON_ERROR,
            retrieval_budget=settings.KLEA_RAG_RETRIEVAL_BUDGET,
            rewrite_budget=settings.KLEA_RAG_REWRITE_BUDGET,
            max_queries=settings.KLEA_RAG_MAX_QUERIES,
            history_chars=settings.KLEA_RAG_HISTORY_CHARS,
            tool_timeout=settings.KLEA_MCP_TOOL_TIMEOUT,
            tool_budget=settings.KLEA_MCP_TOOL_BUDGET,
            max_tool_calls=settings.KLEA_MCP_MAX_CALLS,
            tool_result_chars=settings.KLEA_MCP_RESULT_CHARS,
        )
        values.update(overrides)
        return cls(**values)


@dataclass
class TurnRequest:
    """What the caller asks.

    :param question: the user's text.
    :param domains: the domains this user may query (the caller enforces access; the
        pipeline never looks domains up by itself). Inactive ones are ignored.
    :param session_id: a ChatSession to read history from and store the turn in; None
        for a stateless turn.
    :param pick: domain names chosen by the user (a subset of ``domains``): no
        classification, these are routed.
    :param filters: filter DSL chosen by the user; it wins over generated filter values
        on the same field.
    :param history: for a stateless turn (no ``session_id``), the earlier messages the
        caller holds (the OpenAI-compatible endpoint's), ``[{"role": "user" |
        "assistant", "content": str}]`` oldest first; the most recent ones up to
        KLEA_RAG_HISTORY_CHARS are the conversation. Ignored with a session.
    :param pick_hint: the last sentence of the reply when no domain fits: how this
        caller asks one domain directly (the chat has boxes to tick; /v1 a model name, MCP
        an argument).
    """

    question: str
    domains: Sequence[Domain] = ()
    session_id: int | None = None
    pick: Sequence[str] | None = None
    filters: dict | None = None
    history: Sequence[dict] = ()
    pick_hint: str = "Tick a domain to ask it directly."


@dataclass
class Evaluation:
    """The evaluator's record for one answer (``as_dict`` is the event/DB shape)."""

    scores: dict[str, float] | None = None  # None: deterministic checks only
    next_step: str = ""
    summary: str = ""
    checks: dict[str, bool] = field(default_factory=dict)
    decision: str = ""

    def as_dict(self) -> dict:
        return {
            "scores": self.scores,
            "next_step": self.next_step,
            "summary": self.summary,
            "checks": self.checks,
            "decision": self.decision,
        }


# Every node may read the turn's inputs; the graph and the turn write the bookkeeping.
CONTEXT = frozenset({"request", "backend", "config", "emit"})
BOOKKEEPING = frozenset({"started", "node", "runs", "timings", "cpu_ms", "ttft_ms"})


class UndeclaredAccess(RuntimeError):
    """A node read or wrote a TurnState field it does not declare (a bug)."""


@dataclass(frozen=True)
class Access:
    """The TurnState fields one node declares (:func:`chat.pipeline.graph.declare`);
    what it writes it may also read."""

    node: str
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()


@dataclass
class TurnState:
    """Everything one turn knows. Nodes read and write it; nothing here is shared
    between turns or sessions.

    While a node runs, the state holds it to its declaration (:class:`Access`): reading
    a field outside ``reads | writes``, or writing one outside ``writes``, raises
    :class:`UndeclaredAccess`. CONTEXT and BOOKKEEPING fields are never checked;
    properties are checked through the fields they read. docs/pipeline.md, "Nodes".
    """

    request: TurnRequest
    backend: LLMBackend
    config: PipelineConfig
    emit: Callable[[Event], Awaitable[None]]
    started: float = field(default_factory=time.perf_counter)
    # memory
    summary: str = ""
    history: list[dict] = field(default_factory=list)
    # The question as routed and searched without a model: a follow-up ("How long does
    # it last?") joined with the question(s) before it (chat/pipeline/follow_up.py).
    search_text: str = ""
    user_message_id: int | None = None
    question_task: asyncio.Future | None = None  # storing the question (shielded from cancel)
    assistant_message_id: int | None = None
    # guard
    guard_failed: bool = False
    # classify / route
    allowed: list[Domain] = field(default_factory=list)
    query_vector: object = None  # numpy (384,) for the extractive backend
    query_domains: list[str] = field(default_factory=list)
    routed: list[Domain] = field(default_factory=list)
    # search
    queries: list[str] = field(default_factory=list)
    filters: dict = field(default_factory=dict)
    previous_queries: list[str] = field(default_factory=list)
    k: int | None = None
    retrieval: RetrievalResult | None = None
    dropped_filters: list[str] = field(default_factory=list)  # reported as filter_dropped
    material: ReferenceMaterial | Material | None = None  # documents, then tool results
    # MCP tools (picked and called in the background; chat/pipeline/nodes/tools.py)
    tool_task: asyncio.Task | None = None
    tool_results: list[ToolSource] | None = None  # None until the task is joined
    # answer
    attempt: int = 0
    answer_text: str = ""
    declined: bool = False  # the answer says that no source answers the question
    cited: list[Source | ToolSource] = field(default_factory=list)
    dropped_citations: int = 0
    evaluation: Evaluation | None = None
    rewrites: int = 0
    warnings: list[str] = field(default_factory=list)
    # bookkeeping
    node: str = ""  # the node running now
    runs: Counter = field(default_factory=Counter)
    timings: dict[str, float] = field(default_factory=dict)  # wall ms per node
    cpu_ms: dict[str, float] = field(default_factory=dict)  # process CPU ms per node
    ttft_ms: float | None = None
    status: str = "complete"
    error: str = ""

    def __getattribute__(self, name: str):
        if name in _CHECKED:
            access = object.__getattribute__(self, "__dict__").get("_access")
            if access is not None and name not in access.reads and name not in access.writes:
                raise UndeclaredAccess(f"node {access.node!r} read state.{name}, which it does not declare")
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value) -> None:
        access = self.__dict__.get("_access")
        if access is not None and name in _CHECKED and name not in access.writes:
            raise UndeclaredAccess(f"node {access.node!r} wrote state.{name}, which it does not declare")
        object.__setattr__(self, name, value)

    @contextmanager
    def held_to(self, access: Access) -> Iterator[None]:
        """Check every access against ``access`` inside the block (the graph runs each node so)."""
        object.__setattr__(self, "_access", access)
        try:
            yield
        finally:
            object.__setattr__(self, "_access", None)

    @property
    def question(self) -> str:
        return self.request.question

    @property
    def search_question(self) -> str:
        """``search_text``, or the question itself before memory has run."""
        return self.search_text or self.question

    @property
    def domain_names(self) -> list[str]:
        return [d.name for d in self.routed]

    @property
    def route(self) -> str:
        """The way the turn went, from the nodes that ran: ``declined`` (guard),
        ``refused`` (no domain fits), ``general`` (general chat for a question no domain
        covers), ``fallback`` (general chat after the domains' answer failed),
        ``domains``, or "" before routing."""
        if self.runs["decline"]:
            return "declined"
        if self.runs["refuse"]:
            return "refused"
        if self.runs["general_chat"]:
            return "fallback" if self.routed else "general"
        return "domains" if self.routed else ""

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)


FIELDS = frozenset(f.name for f in fields(TurnState))
_CHECKED = FIELDS - CONTEXT - BOOKKEEPING
