"""The pipeline's one typed event stream (websocket, HTTP API, Python API, commands).

Every event serialises with :meth:`Event.as_dict` to a JSON object whose ``type`` is one
of ``stage``, ``token``, ``tool``, ``references``, ``answer``, ``error``, ``done``. A turn always
ends with exactly one ``done``; a turn that produced an answer sends ``references`` then
``answer`` just before it. Shapes are documented in docs/pipeline.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import ClassVar


@dataclass
class Event:
    type: ClassVar[str] = "event"

    def as_dict(self) -> dict:
        """JSON-ready dict: ``{"type": ..., **fields}``."""
        return {"type": self.type, **asdict(self)}


@dataclass
class Stage(Event):
    """A node started or ended.

    ``phase``: "start" | "end"; ``run``: how many times this node has started in this
    turn (1 on the first pass; evaluation loops raise it); ``detail``: one short line
    (on "end"); ``elapsed_ms``: the node's duration (on "end"; None on "start").
    """

    type: ClassVar[str] = "stage"
    node: str
    phase: str
    run: int = 1
    detail: str = ""
    elapsed_ms: float | None = None


@dataclass
class Token(Event):
    """A piece of answer text as it is generated (``<think>`` removed, citations already
    renumbered). ``attempt`` starts at 1; a new attempt (the evaluator asked for more
    sources, another query or a rewrite) replaces the text streamed so far."""

    type: ClassVar[str] = "token"
    text: str
    attempt: int = 1


@dataclass
class ToolCall(Event):
    """An MCP tool call the model asked for, and its outcome (docs/mcp.md).

    Tool calls run in the background, beside query generation and retrieval, so these
    events interleave with the stage events of those nodes; all of them come after
    ``pick_tools`` ends and before ``join_tools`` ends.

    ``call``: the request's position among the model's tool calls (1-based; pairs
    "start" with "end"); ``phase``: "start" (its server is being contacted) | "end";
    ``status``: "running" (start) | "ok" | "error" (the server did not start, or the
    tool raised or reported an error) | "timeout" (KLEA_MCP_TOOL_TIMEOUT or the turn's
    KLEA_MCP_TOOL_BUDGET ran out) | "rejected" (never run: not offered, arguments not
    matching the schema, a repeated call, over KLEA_MCP_MAX_CALLS; "end" only);
    ``tool``, ``server``, ``domain``: the tool on its server ("" server and domain when
    the name was not offered; ``tool`` is then the name the model used);
    ``arguments``: the call's arguments (the model's raw text when they were not a
    JSON object); ``message``: one line on what went wrong ("" when ok); ``chars``:
    result length before the cap; ``truncated``: the result was cut to
    KLEA_MCP_RESULT_CHARS; ``elapsed_ms``: on "end" of a call that ran.
    """

    type: ClassVar[str] = "tool"
    call: int
    phase: str
    tool: str
    server: str = ""
    domain: str = ""
    arguments: dict | str = field(default_factory=dict)
    status: str = "running"
    message: str = ""
    chars: int = 0
    truncated: bool = False
    elapsed_ms: float | None = None


@dataclass
class References(Event):
    """The cited sources in citation order, numbered 1..n as in the answer text.

    Documents (``"kind": "document"``): ``{"number", "kind", "domain", "store",
    "file_name", "document_id", "title", "authors" (list of str), "year" (int | None),
    "journal", "doi", "url", "urls" ([{"label", "url"}]), "pages" ([first, last] over
    the quoted chunks of a PDF, or when the answer quotes none known, over its cited
    chunks; None for a text source and for a document cited as a whole), "chunks"
    ([{"chunk_id", "headings",
    "heading_chain", "text", "pages" ([first, last] | None), "lines" ([first, last] |
    None, text sources), "anchor" (str)}]), "quoted" (the chunk_ids of the chunks the
    answer quotes, in answer order; [] when not known, as for a model's answer),
    "markers" (one ``{"chunk_id", "passages" (the quoted text, verbatim)}`` per marker
    [n] in the answer text, in order: the k-th [n] opens its chunk at its passage;
    ``chunk_id`` None: the marker cites the document as a whole, as an answer from its
    metadata does, and opens its first page or the top of its file; [] when not known:
    [n] opens the first quoted chunk)}``, all built from stored metadata
    (docs/pipeline.md, "Provenance").
    Tool results (``"kind": "tool"``): ``{"number", "kind", "domain", "server", "tool",
    "title", "arguments", "status" ("ok" | "error" | "timeout"), "text", "truncated"}``.
    """

    type: ClassVar[str] = "references"
    references: list[dict] = field(default_factory=list)


@dataclass
class Answer(Event):
    """The final answer of the turn.

    ``route``: "domains" | "general" | "fallback" | "refused" | "declined";
    ``citations``: the numbers cited in ``text``; ``dropped_citations``: citations of
    numbers that were not given (removed from the text); ``evaluation``: see
    docs/pipeline.md; ``warnings``: shown above the answer (best effort, fallback,
    retrieval failures); ``message_id``/``session_id``: the stored ChatMessage.
    """

    type: ClassVar[str] = "answer"
    text: str
    route: str
    domains: list[str] = field(default_factory=list)
    citations: list[int] = field(default_factory=list)
    dropped_citations: int = 0
    evaluation: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    session_id: int | None = None
    message_id: int | None = None


@dataclass
class Error(Event):
    """Something went wrong. ``fatal``: the turn ends (``done`` follows with status
    "failed" or "interrupted"); otherwise the turn goes on.

    ``code``: "model_not_found" | "unreachable" | "timeout" | "server_error" |
    "not_supported" | "guard_failed" | "retrieval_failed" | "bad_filter" |
    "interrupted" | "internal".
    """

    type: ClassVar[str] = "error"
    code: str
    message: str
    node: str = ""
    fatal: bool = False


@dataclass
class Done(Event):
    """The turn is over. ``status``: "complete" | "failed" | "interrupted";
    ``timings``: milliseconds per node (summed over passes); ``ttft_ms``: time to the
    first answer token (None when none was sent); ``total_ms``; ``cpu_ms``: process
    CPU milliseconds per node (the server's CPU while the node ran: other work of the
    process, e.g. concurrent turns, counts too; the database's CPU does not)."""

    type: ClassVar[str] = "done"
    status: str
    total_ms: float = 0.0
    ttft_ms: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    cpu_ms: dict[str, float] = field(default_factory=dict)
