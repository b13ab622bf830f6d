"""The pipeline's parts on their own: the answer cleaner, the guard verdict, filter
schemas and the DSL, the routing table, graph validation, event shapes."""

from __future__ import annotations

import pytest

from asgiref.sync import async_to_sync

from chat.answers.citations import AnswerCleaner, strip_think
from chat.backends.structured import parse_json
from chat.pipeline import Answer, Done, Error, PipelineConfig, References, Stage, Token, TurnRequest
from chat.pipeline.evaluation import SCORE_KEYS, Options, apply_checks, decide, validate_evaluation
from chat.pipeline.filters import FieldSpec, merge_filters, query_schema, to_filter_dsl
from chat.pipeline.flow import EDGES, build_graph
from chat.pipeline.graph import END, Graph, GraphError, Node, Step, declare
from chat.pipeline.nodes.guard import GuardVerdict, parse_verdict
from chat.pipeline.nodes.replies import named_domains, subject_words
from chat.pipeline.references import labelled_urls, primary_url
from chat.pipeline.state import TurnState, UndeclaredAccess


def clean(pieces, valid=(1, 2, 3)):
    cleaner = AnswerCleaner(valid)
    out = [cleaner.feed(p) for p in pieces] + [cleaner.close()]
    return out, cleaner


def test_cleaner_renumbers_in_citation_order_and_drops_invalid_numbers():
    out, cleaner = clean(["B is true [3]. A is true [1, 9]. Both [3][1]. Source [Source 2]."])
    assert "".join(out) == "B is true [1]. A is true [2]. Both [1][2]. Source [3]."
    assert (cleaner.cited, cleaner.dropped) == ([3, 1, 2], 1)


def test_cleaner_handles_pieces_split_anywhere():
    text = "<think>\nplan [2]\n</think>\n\nUse pip [2]; see also [7] and [1;2]."
    expected = "Use pip [1]; see also and [2, 1]."
    for size in (1, 2, 3, 5, 8):
        out, cleaner = clean([text[i:i + size] for i in range(0, len(text), size)])
        assert "".join(out) == expected, size
        assert (cleaner.cited, cleaner.dropped) == ([2, 1], 1)


def test_cleaner_keeps_ordinary_brackets_and_drops_an_unclosed_think():
    out, _ = clean(["a[i] = [x for x in y] and [", "see below]"])
    assert "".join(out) == "a[i] = [x for x in y] and [see below]"
    out, cleaner = clean(["Index with `da[", "0]` or ``da[1]`` or\n```\nx[2]\n```\nas in pip[3]."])
    assert "".join(out) == "Index with `da[0]` or ``da[1]`` or\n```\nx[2]\n```\nas in pip[1]."
    assert cleaner.cited == [3]
    cleaner = AnswerCleaner([4, 5])
    assert (cleaner.cite(5), cleaner.cite(4), cleaner.cite(5), cleaner.cited) == ("[1]", "[2]", "[1]", [5, 4])
    with pytest.raises(ValueError, match="source 7 was not given"):
        cleaner.cite(7)
    out, cleaner = clean(["Answer. <think>never closed"])
    assert "".join(out) == "Answer."
    assert strip_think("<think>a</think> b <think>c") == "b"


def test_guard_verdicts():
    assert parse_verdict("safe") == GuardVerdict(True, [])
    assert parse_verdict("\n unsafe\nS1, S10\n") == GuardVerdict(False, ["S1", "S10"])
    assert parse_verdict("<think>hm</think>unsafe\ns2").describe() == "unsafe: S2 (non-violent crimes)"
    assert parse_verdict("unsafe").describe() == "unsafe"
    with pytest.raises(ValueError, match="unexpected guard reply 'maybe'"):
        parse_verdict("maybe\nS1")
    with pytest.raises(ValueError, match="empty reply from the guard model"):
        parse_verdict("  ")


FIELDS = {
    "year": FieldSpec("year", "int"),
    "score": FieldSpec("score", "float"),
    "authors": FieldSpec("authors", "string", "Author names"),
    "keywords": FieldSpec("keywords", "list"),
}


@pytest.mark.parametrize(
    "values, dsl",
    [
        ({"year": 2020}, {"year": 2020}),
        ({"year": "2020"}, {"year": 2020}),
        # one value converter with retrieval (domains.retrieval.filters.typed_value): a sign
        # is accepted, a doubled one dropped (it crashed), text numbers must be finite
        ({"year": "+2020"}, {"year": 2020}),
        ({"year": "--2020"}, {}),
        ({"score": "nan"}, {}),
        ({"authors": "Sin\x00ha"}, {}),
        ({"year": [2019, 2020.0, 2019]}, {"year": {"$in": [2019, 2020]}}),
        ({"year": {"gte": 2015, "lte": 2020}}, {"year": {"$gte": 2015, "$lte": 2020}}),
        ({"year": {"gte": 2015}}, {"year": {"$gte": 2015}}),
        ({"year": {"gte": 2021, "lte": 2020}}, {}),
        ({"year": "recent"}, {}),
        ({"year": True}, {}),
        ({"score": "0.5"}, {"score": 0.5}),
        ({"authors": "Sinha"}, {"authors": "Sinha"}),
        ({"authors": ["Sinha"]}, {"authors": "Sinha"}),
        ({"authors": ["Sinha", "Gleeson", ""]}, {"authors": {"$in": ["Sinha", "Gleeson"]}}),
        ({"authors": {"gte": "A"}}, {}),
        ({"keywords": ["a", "b", "a"]}, {"keywords": {"$contains": ["a", "b"]}}),
        ({"keywords": "a"}, {"keywords": {"$contains": ["a"]}}),
        ({"keywords": []}, {}),
        ({"journal": "Nature", "authors": None}, {}),
    ],
)
def test_filter_values_become_the_dsl(values, dsl):
    assert to_filter_dsl(values, FIELDS) == dsl


def test_query_schema_and_user_filters():
    schema = query_schema(FIELDS, 3)
    assert schema["required"] == ["queries", "filters"]
    assert schema["properties"]["filters"]["properties"]["authors"]["description"] == "Author names"
    assert schema["properties"]["filters"]["properties"]["score"]["anyOf"][0] == {"type": "number"}
    assert query_schema({}, 2) == {
        "type": "object",
        "properties": {"queries": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
        "required": ["queries"],
        "additionalProperties": False,
    }
    assert merge_filters({"year": 2020, "authors": "A"}, {"year": {"$gte": 2010}}) == {
        "year": {"$gte": 2010}, "authors": "A",
    }


def options(**kw):
    base = dict(retrieval_left=4, rewrite_left=1, can_modify_query=True, can_grow_k=True, can_rewrite=True,
                can_fallback=True)
    base.update(kw)
    return Options(**base)


def numbers(**kw):
    return {key: kw.get(key, 0.9) for key in SCORE_KEYS}


@pytest.mark.parametrize(
    "scores, next_step, opts, decision",
    [
        (numbers(), "modify_query", options(), "continue"),
        (numbers(coverage=0.2), "continue", options(), "modify_query"),
        (numbers(coverage=0.2), "continue", options(retrieval_left=0), "fallback"),
        (numbers(coverage=0.2), "continue", options(retrieval_left=0, can_fallback=False), "clarify"),
        (numbers(coverage=0.6, confidence=0.4), "continue", options(), "retrieve_more_info"),
        (numbers(coverage=0.6, confidence=0.4), "continue", options(can_grow_k=False), "best_effort"),
        (numbers(coverage=0.6, confidence=0.2), "continue", options(can_grow_k=False), "fallback"),
        (numbers(coherence=0.4), "continue", options(), "rewrite_answer"),
        (numbers(coherence=0.4), "continue", options(rewrite_left=0), "best_effort"),
        (numbers(coverage=0.4, confidence=0.4), "retrieve_more_info", options(), "retrieve_more_info"),
        (numbers(coverage=0.4, confidence=0.4), "modify_query", options(), "modify_query"),
        (numbers(coverage=0.4, confidence=0.4), "modify_query", options(can_modify_query=False), "best_effort"),
    ],
)
def test_routing_table(scores, next_step, opts, decision):
    assert decide(scores, next_step, opts) == decision


def test_deterministic_checks_and_evaluator_replies():
    assert apply_checks(None, {"no_sources": True})["coverage"] == 0.0
    assert apply_checks(None, {"no_valid_citation": True}) == {**numbers(), **{k: 1.0 for k in SCORE_KEYS},
                                                               "groundedness": 0.0}
    assert decide(apply_checks(None, {"answer_empty": True}), "", options(can_rewrite=False),
                  answer_empty=True) == "fallback"
    reply = {**numbers(coverage=1.7, confidence=-1), "next_step": "dance", "summary": 5}
    scores, step, summary = validate_evaluation(reply)
    assert (scores["coverage"], scores["confidence"], step, summary) == (1.0, 0.0, "undefined", "5")
    with pytest.raises(ValueError, match="score relevance is not a number"):
        validate_evaluation({**numbers(), "relevance": "high"})
    assert parse_json('```json\n{"a": 1}\n```') == {"a": 1}


async def _noop(state):
    return Step("next")


def test_graph_is_checked_when_built():
    nodes = [Node("a", _noop, frozenset({"next"})), Node("b", _noop, frozenset({"next", "again"}), max_runs=2)]
    Graph(nodes, {"a": {"next": "b"}, "b": {"next": END, "again": "b"}}, entry="a")
    with pytest.raises(GraphError, match=r"edge a.next -> unknown node 'c'"):
        Graph(nodes, {"a": {"next": "c"}, "b": {"next": END, "again": "b"}}, entry="a")
    with pytest.raises(GraphError, match=r"node 'b' has no edge for outcome\(s\) again"):
        Graph(nodes, {"a": {"next": "b"}, "b": {"next": END}}, entry="a")
    with pytest.raises(GraphError, match=r"edge a.other: node 'a' has no outcome 'other'; it declares next"):
        Graph(nodes, {"a": {"next": "b", "other": END}, "b": {"next": END, "again": "b"}}, entry="a")
    with pytest.raises(GraphError, match=r"node\(s\) a cannot be reached from 'b'"):
        Graph(nodes, {"a": {"next": "b"}, "b": {"next": END, "again": "b"}}, entry="b")
    with pytest.raises(GraphError, match="entry node 'x' is not a node"):
        Graph(nodes, {}, entry="x")
    with pytest.raises(GraphError, match="no edge leads to END"):
        Graph(nodes, {"a": {"next": "b"}, "b": {"next": "a", "again": "b"}}, entry="a")


def test_the_pipeline_graph_and_its_budgets():
    graph = build_graph(PipelineConfig(retrieval_budget=5, rewrite_budget=1))
    assert set(graph.nodes) == set(EDGES)
    assert (graph.nodes["retrieve"].max_runs, graph.nodes["answer"].max_runs, graph.nodes["guard"].max_runs) == (5, 6, 1)
    with pytest.raises(ValueError, match=r"KLEA_RAG_GUARD_ON_ERROR='maybe'; allowed: decline, allow"):
        PipelineConfig(guard_on_error="maybe")



def test_every_node_declares_the_state_it_writes():
    """Who writes what (chat/pipeline/nodes/*.py, @declare): no field has writers in more
    than two modules, and ``route`` is derived from the nodes that ran, written by none."""
    graph = build_graph(PipelineConfig())
    said = ["answer", "general_chat", "decline", "refuse", "clarify"]
    assert graph.writers() == {
        "answer_text": said, "attempt": said, "cited": said, "dropped_citations": said,
        "assistant_message_id": ["remember"], "declined": ["answer"], "dropped_filters": ["retrieve"],
        "evaluation": ["evaluate"], "filters": ["generate_queries", "retrieve"], "guard_failed": ["guard"],
        "history": ["memory"], "k": ["evaluate"], "search_text": ["memory"], "material": ["retrieve", "join_tools"],
        "previous_queries": ["generate_queries"], "queries": ["generate_queries"], "query_domains": ["classify"],
        "query_vector": ["classify", "answer"], "question_task": ["memory", "remember"],
        "retrieval": ["retrieve"], "rewrites": ["evaluate"], "routed": ["route"], "summary": ["memory"],
        "tool_results": ["pick_tools", "join_tools"], "tool_task": ["pick_tools"],
        "user_message_id": ["remember"], "warnings": ["retrieve", "evaluate"],
    }
    for written, names in graph.writers().items():
        modules = {graph.nodes[name].run.__module__ for name in names}
        assert len(modules) <= 2, (written, modules)
    assert [n.name for n in graph.nodes.values() if n.close] == ["memory", "pick_tools"]


def _fresh():
    async def node(state):
        return Step("next")

    return node


def _state(events: list) -> TurnState:
    async def emit(event):
        events.append(event)

    return TurnState(TurnRequest("q"), None, PipelineConfig(), emit)


def test_nodes_are_held_to_their_declarations_and_close_hooks_run_last_first():
    @declare(reads={"summary"}, writes={"history"})
    async def honest(state):
        state.history = [{"role": "user", "content": state.summary}]
        return Step("next")

    @declare(writes={"history"})
    async def peeks(state):
        assert state.summary
        return Step("next")

    @declare(reads={"history"})
    async def scribbles(state):
        state.summary = "x"
        return Step("next")

    closed = []

    async def close_a(state):
        closed.append("a")

    async def close_b(state):
        closed.append("b")
        raise RuntimeError("logged, and the other hooks still run")

    honest.close, peeks.close = close_a, close_b
    @async_to_sync
    async def run(graph, state):
        await graph.run(state)

    events: list = []
    state = _state(events)
    state.summary = "hello"  # outside a node nothing is checked
    graph = Graph([Node("a", honest, frozenset({"next"})), Node("b", peeks, frozenset({"next"}))],
                  {"a": {"next": "b"}, "b": {"next": END}}, entry="a")
    with pytest.raises(UndeclaredAccess, match=r"node 'b' read state.summary, which it does not declare"):
        run(graph, state)
    assert state.history == [{"role": "user", "content": "hello"}]
    async_to_sync(graph.close)(state)
    assert closed == ["b", "a"]
    graph = Graph([Node("c", scribbles, frozenset({"next"}))], {"c": {"next": END}}, entry="c")
    with pytest.raises(UndeclaredAccess, match=r"node 'c' wrote state.summary, which it does not declare"):
        run(graph, _state([]))
    with pytest.raises(GraphError, match=r"node 'd' declares unknown state field\(s\) answer, route"):
        Graph([Node("d", declare(reads={"route"}, writes={"answer"})(_fresh()), frozenset({"next"}))],
              {"d": {"next": END}}, entry="d")
    with pytest.raises(GraphError, match=r"node 'e' declares writes to runs, which only the turn writes"):
        Graph([Node("e", declare(writes={"runs"})(_fresh()), frozenset({"next"}))], {"e": {"next": END}}, entry="e")

def test_event_shapes():
    assert Stage("classify", "end", 2, "neuro", 3.5).as_dict() == {
        "type": "stage", "node": "classify", "phase": "end", "run": 2, "detail": "neuro", "elapsed_ms": 3.5,
    }
    assert Token("Hi", 1).as_dict() == {"type": "token", "text": "Hi", "attempt": 1}
    assert References([]).as_dict() == {"type": "references", "references": []}
    assert Error("timeout", "slow", "answer", True).as_dict() == {
        "type": "error", "code": "timeout", "message": "slow", "node": "answer", "fatal": True,
    }
    assert Done("complete", 10.0, 5.0, {"guard": 1.0}, {"guard": 0.5}).as_dict() == {
        "type": "done", "status": "complete", "total_ms": 10.0, "ttft_ms": 5.0, "timings": {"guard": 1.0},
        "cpu_ms": {"guard": 0.5},
    }
    assert set(Answer("t", "domains").as_dict()) == {
        "type", "text", "route", "domains", "citations", "dropped_citations", "evaluation", "warnings",
        "session_id", "message_id",
    }


def test_reference_urls():
    metadata = {"url_doi": "https://doi.org/1", "url_1": "https://a", "url_orcid": "https://o", "url": "", "doi": "1"}
    assert labelled_urls(metadata) == [
        {"label": "", "url": "https://a"}, {"label": "doi", "url": "https://doi.org/1"},
        {"label": "orcid", "url": "https://o"},
    ]
    assert primary_url(metadata) == "https://doi.org/1"
    assert primary_url({"doi": "10.1/x"}) == "https://doi.org/10.1/x"


@pytest.mark.parametrize(("name", "description", "words"), [
    ("klea-docs", "The documentation of this Klea RAG server: installing and running it, the HTTP and Python APIs.",
     {"klea-docs", "klea", "docs", "rag"}),  # names before the colon; not "The", nor Python after it
    ("neuroml", "NeuroML: a standard XML-based language (pyNeuroML, LEMS) for computational models.", {"neuroml"}),
    ("xarray", "xarray: a Python library for labelled N-dimensional arrays.", {"xarray"}),
    ("cooking", "based.cooking: home-cooking recipes for breads and soups.", {"cooking", "based.cooking"}),
    ("my-library", "My reading: recipes, xarray pages and two papers.", {"my-library", "library"}),
    ("papers", "Documents of the store papers.", {"papers"}),
    ("lab_notes", "Zorblax lab notes. Folding times of the ZX-9 protein.", {"lab_notes", "lab", "notes"}),
])
def test_a_domains_subject_words_are_its_name_and_the_names_of_its_descriptions_subject(name, description, words):
    assert subject_words(name, description) == words


def test_a_question_names_the_domains_whose_subject_words_it_uses():
    class Row:
        def __init__(self, name, description):
            self.name, self.description = name, description

    rows = [Row("klea-docs", "The documentation of this Klea RAG server: configuration."),
            Row("cooking", "based.cooking: recipes."), Row("my-library", "My reading: a few papers.")]
    assert named_domains("Does Klea need a GPU?", rows) == ["klea-docs"]
    assert named_domains("Does klea's server run on Windows?", rows) == ["klea-docs"]  # any case, possessive
    assert named_domains("Is based.cooking free? And Klea?", rows) == ["klea-docs", "cooking"]  # in their order
    assert named_domains("Where is my data stored?", rows) == []  # "my" names nothing
    assert named_domains("What is this based on?", rows) == []  # "based" alone is not "based.cooking"
    assert named_domains("What is the capital of France?", rows) == []
