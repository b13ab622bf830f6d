"""An explicit async state machine: nodes are async functions over one TurnState, edges
are data, checked when the graph is built.

A node returns a :class:`Step` whose ``outcome`` names the edge to follow; the graph
maps ``(node, outcome)`` to the next node or :data:`END`. Every node run is wrapped in
``stage`` start/end events. Loops are bounded: each node has ``max_runs`` per turn
(like Haystack's ``max_runs_per_component``); exceeding it raises
:class:`PipelineBudgetError` instead of looping forever.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from .events import Stage
from .state import TurnState

END = "end"


@dataclass(frozen=True)
class Step:
    """A node's result: the edge to follow and a one-line detail for the stage event."""

    outcome: str
    detail: str = ""


NodeFunction = Callable[[TurnState], Awaitable[Step]]


@dataclass(frozen=True)
class Node:
    """``outcomes``: every outcome the function may return; ``max_runs``: per turn."""

    name: str
    run: NodeFunction
    outcomes: frozenset[str]
    max_runs: int = 1


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
        ``entry``, or no path to END.
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
        """Run from ``entry`` to END, emitting stage events and recording timings.

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
            started = time.perf_counter()
            step = await node.run(state)
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            state.timings[name] = round(state.timings.get(name, 0.0) + elapsed, 1)
            await state.emit(Stage(node=name, phase="end", run=run, detail=step.detail, elapsed_ms=elapsed))
            name = self.next(name, step.outcome)
