"""The question pipeline as data: nodes, their outcomes, the edges between them.

::

    memory -> guard -safe-> classify -> route -domains-> pick_tools -> generate_queries
                    -unsafe-> decline          -general-> general_chat
                                               -refuse-> refuse
    generate_queries -> retrieve -> join_tools -> answer
    answer -> evaluate -continue | best_effort-> remember
                                   -retrieve_more_info-> retrieve
                                   -modify_query-> generate_queries
                                   -rewrite_answer-> answer
                                   -fallback-> general_chat
                                   -clarify-> clarify
    decline | refuse | general_chat | clarify -> remember -> respond -> summarise -> END

pick_tools starts the MCP tool calls as a background task (the model's choice, then the
calls) and returns at once; join_tools waits for that task after retrieval, so tools
run in parallel with generate_queries and retrieve. Loops back to generate_queries or
retrieve pass through join_tools again, which re-attaches the same results (tools are
chosen and called once per turn).
"""

from __future__ import annotations

from .graph import END, Graph, Node
from .nodes.answer import answer, general_chat
from .nodes.classify import classify, route
from .nodes.evaluate import evaluate
from .nodes.guard import guard
from .nodes.memory import load_memory, remember, summarise
from .nodes.queries import generate_queries
from .nodes.replies import clarify, decline, refuse
from .nodes.respond import respond
from .nodes.retrieve import retrieve
from .nodes.tools import join_tools, pick_tools
from .state import PipelineConfig

NEXT = frozenset({"next"})
EVALUATION_OUTCOMES = frozenset(
    {"continue", "best_effort", "retrieve_more_info", "modify_query", "rewrite_answer", "fallback", "clarify"}
)

EDGES = {
    "memory": {"next": "guard"},
    "guard": {"safe": "classify", "unsafe": "decline"},
    "classify": {"next": "route"},
    "route": {"domains": "pick_tools", "general": "general_chat", "refuse": "refuse"},
    "pick_tools": {"next": "generate_queries"},
    "generate_queries": {"next": "retrieve"},
    "retrieve": {"next": "join_tools"},
    "join_tools": {"next": "answer"},
    "answer": {"next": "evaluate"},
    "evaluate": {
        "continue": "remember",
        "best_effort": "remember",
        "retrieve_more_info": "retrieve",
        "modify_query": "generate_queries",
        "rewrite_answer": "answer",
        "fallback": "general_chat",
        "clarify": "clarify",
    },
    "general_chat": {"next": "remember"},
    "decline": {"next": "remember"},
    "refuse": {"next": "remember"},
    "clarify": {"next": "remember"},
    "remember": {"next": "respond"},
    "respond": {"next": "summarise"},
    "summarise": {"next": END},
}


def build_graph(config: PipelineConfig) -> Graph:
    """The pipeline for ``config``'s budgets (validated; see :class:`~chat.pipeline.graph.Graph`).

    Run budgets per turn: pick_tools once; retrieval passes (generate_queries,
    retrieve, join_tools) = ``retrieval_budget``; answer and evaluate = retrieval
    passes + rewrites.
    """
    passes = config.retrieval_budget
    answers = passes + config.rewrite_budget
    nodes = [
        Node("memory", load_memory, NEXT),
        Node("guard", guard, frozenset({"safe", "unsafe"})),
        Node("classify", classify, NEXT),
        Node("route", route, frozenset({"domains", "general", "refuse"})),
        Node("pick_tools", pick_tools, NEXT),
        Node("generate_queries", generate_queries, NEXT, max_runs=passes),
        Node("retrieve", retrieve, NEXT, max_runs=passes),
        Node("join_tools", join_tools, NEXT, max_runs=passes),
        Node("answer", answer, NEXT, max_runs=answers),
        Node("evaluate", evaluate, EVALUATION_OUTCOMES, max_runs=answers),
        Node("general_chat", general_chat, NEXT),
        Node("decline", decline, NEXT),
        Node("refuse", refuse, NEXT),
        Node("clarify", clarify, NEXT),
        Node("remember", remember, NEXT),
        Node("respond", respond, NEXT),
        Node("summarise", summarise, NEXT),
    ]
    return Graph(nodes, EDGES, entry="memory")
