"""An explicit async state machine: nodes are async functions over one TurnState, edges
are data, checked when the graph is built.

A node returns a :class:`Step` whose ``outcome`` names the edge to follow; the graph
maps ``(node, outcome)`` to the next node or :data:`END`. Every node run is wrapped in
``stage`` start/end events. Loops are bounded: each node has ``max_runs`` per turn
(like Haystack's ``max_runs_per_component``); exceeding it raises
:class:`PipelineBudgetError` instead of looping forever.

Each node function declares the TurnState fields it reads and writes (:func:`declare`);
the graph checks the names when it is built and holds the state to them while the node
runs (:class:`~chat.pipeline.state.UndeclaredAccess` otherwise). A node that starts
work outliving it (a background task, a stored question) declares a ``close`` hook,
which :meth:`Graph.close` runs when the turn ends, however it ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .events import Stage
from .state import BOOKKEEPING, CONTEXT, FIELDS, Access, TurnState

logger = logging.getLogger("klea.pipeline")

END = "end"


@dataclass(frozen=True)
class Step:
    """A node's result: the edge to follow and a one-line detail for the stage event."""

    outcome: str
    detail: str = ""


NodeFunction = Callable[[TurnState], Awaitable[Step]]
Hook = Callable[[TurnState], Awaitable[None]]


def declare(*, reads: Iterable[str] = (), writes: Iterable[str] = (), close: Hook | None = None):
    """Decorate a node function with the TurnState fields it reads and writes (besides
    CONTEXT and BOOKKEEPING, which every node may read) and its clean-up hook.

    Usage::

        @declare(reads={"routed"}, writes={"attempt", "answer_text"})
        async def clarify(state: TurnState) -> Step: ...
    """

    def mark(function: NodeFunction) -> NodeFunction:
        function.reads = frozenset(reads)
        function.writes = frozenset(writes)
        function.close = close
        return function

    return mark


@dataclass(frozen=True)
class Node:
    """``outcomes``: every outcome the function may return; ``max_runs``: per turn.
    ``access`` and ``close`` come from the function's :func:`declare` (none: it may
    read and write nothing but CONTEXT and BOOKKEEPING)."""

    name: str
    run: NodeFunction
    outcomes: frozenset[str]
    max_runs: int = 1
    access: Access = field(init=False)
    close: Hook | None = field(init=False)

    def __post_init__(self):
        reads, writes = getattr(self.run, "reads", frozenset()), getattr(self.run, "writes", frozenset())
        object.__setattr__(self, "access", Access(self.name, reads, writes))
        object.__setattr__(self, "close", getattr(self.run, "close", None))


class GraphError(ValueError):
    """A graph that cannot run (bad edge, missing outcome, unreachable node, unbounded loop)."""


class PipelineBudgetError(RuntimeError):
    """A node was entered more often than its ``max_runs`` (a routing bug)."""


class Graph:
    """Nodes plus edges, validated at construction.

    Usage::

        graph = Graph(nodes, {"guard": {"safe": "classify", "unsafe": "decline"}, ...}, entry="guard")
        await graph.run(state)

    :param edges: ``{node: {outcome: next node or END}}``.
    :raises GraphError: an edge from or to an unknown node, an outcome without an edge,
        an edge for an outcome the node does not declare, a node unreachable from
        ``entry``, no path to END, or a declared state field that TurnState does not
        have (or that only the graph and the turn write).
    """

    def __init__(self, nodes: Iterable[Node], edges: Mapping[str, Mapping[str, str]], entry: str):
        self.nodes = {node.name: node for node in nodes}
        self.edges = {name: dict(targets) for name, targets in edges.items()}
        self.entry = entry
        self._validate()

    def _validate(self) -> None:
        if self.entry not in self.nodes:
            raise GraphError(f"entry node {self.entry!r} is not a node; nodes: {', '.join(self.nodes)}")
        for name, targets in self.edges.items():
            if name not in self.nodes:
                raise GraphError(f"edges from unknown node {name!r}; nodes: {', '.join(self.nodes)}")
            for outcome, target in targets.items():
                if outcome not in self.nodes[name].outcomes:
                    raise GraphError(
                        f"edge {name}.{outcome}: node {name!r} has no outcome {outcome!r}; "
                        f"it declares {', '.join(sorted(self.nodes[name].outcomes))}"
                    )
                if target != END and target not in self.nodes:
                    raise GraphError(f"edge {name}.{outcome} -> unknown node {target!r}")
        for name, node in self.nodes.items():
            missing = sorted(node.outcomes - set(self.edges.get(name, {})))
            if missing:
                raise GraphError(f"node {name!r} has no edge for outcome(s) {', '.join(missing)}")
            if node.max_runs < 1:
                raise GraphError(f"node {name!r} has max_runs {node.max_runs}; it must be at least 1")
            unknown = sorted((node.access.reads | node.access.writes) - FIELDS)
            if unknown:
                raise GraphError(f"node {name!r} declares unknown state field(s) {', '.join(unknown)}")
            reserved = sorted(node.access.writes & (CONTEXT | BOOKKEEPING))
            if reserved:
                raise GraphError(f"node {name!r} declares writes to {', '.join(reserved)}, which only the turn writes")
        reachable = self._reachable(self.entry)
        unreachable = sorted(set(self.nodes) - reachable)
        if unreachable:
            raise GraphError(f"node(s) {', '.join(unreachable)} cannot be reached from {self.entry!r}")
        if END not in {t for targets in self.edges.values() for t in targets.values()}:
            raise GraphError("no edge leads to END")

    def _reachable(self, start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name in seen or name == END:
                continue
            seen.add(name)
            todo.extend(self.edges.get(name, {}).values())
        return seen

    def next(self, name: str, outcome: str) -> str:
        """The node after ``name`` for ``outcome``.

        :raises GraphError: an outcome the node did not declare.
        """
        try:
            return self.edges[name][outcome]
        except KeyError:
            raise GraphError(f"node {name!r} returned undeclared outcome {outcome!r}") from None

    async def run(self, state: TurnState) -> None:
        """Run from ``entry`` to END, emitting stage events and recording timings: wall
        milliseconds per node in ``state.timings``, process CPU milliseconds in
        ``state.cpu_ms`` (all threads of the process, so concurrent turns of a server
        count in each other's figures; exact for one turn at a time).

        :raises PipelineBudgetError: a node entered more than ``max_runs`` times.
        """
        name = self.entry
        while name != END:
            node = self.nodes[name]
            state.node = name
            state.runs[name] += 1
            run = state.runs[name]
            if run > node.max_runs:
                raise PipelineBudgetError(f"node {name!r} entered {run} times; its budget is {node.max_runs}")
            await state.emit(Stage(node=name, phase="start", run=run))
            started, cpu_started = time.perf_counter(), time.process_time()
            with state.held_to(node.access):
                step = await node.run(state)
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            state.timings[name] = round(state.timings.get(name, 0.0) + elapsed, 1)
            cpu = (time.process_time() - cpu_started) * 1000
            state.cpu_ms[name] = round(state.cpu_ms.get(name, 0.0) + cpu, 1)
            await state.emit(Stage(node=name, phase="end", run=run, detail=step.detail, elapsed_ms=elapsed))
            name = self.next(name, step.outcome)

    def writers(self) -> dict[str, list[str]]:
        """``{field: [nodes that declare writing it]}``, in node order."""
        table: dict[str, list[str]] = {}
        for name, node in self.nodes.items():
            for written in sorted(node.access.writes):
                table.setdefault(written, []).append(name)
        return table

    async def close(self, state: TurnState) -> None:
        """Run the nodes' ``close`` hooks, last node first (each is idempotent and runs
        whether or not its node ran); a failing hook is logged, the others still run."""
        for node in reversed(list(self.nodes.values())):
            if node.close is None:
                continue
            try:
                await node.close(state)
            except Exception:  # clean-up must not hide the turn's outcome
                logger.exception("closing node %s failed", node.name)
