"""The pipeline on the Ollama backend, driven by the fake Ollama server: every node and
route, with the exact event sequences."""

from __future__ import annotations

import json

import pytest

from .fake_ollama import FakeOllama, Reply, ollama_backend
from .pipeline_data import make_domains, material_files
from .pipeline_helpers import run, trace

pytestmark = pytest.mark.django_db

SCORES = ("confidence", "coverage", "relevance", "groundedness", "coherence", "conciseness")
PARTIAL = "The sources only partly cover this question; the answer may be incomplete."
FALLBACK = "The sources do not cover this question; this answer comes from the model's general knowledge."


def scores(next_step="continue", summary="Fine.", **values) -> Reply:
    payload = {key: values.get(key, 0.9) for key in SCORES}
    return Reply.json({**payload, "next_step": next_step, "summary": summary})


def domains_reply(*names) -> Reply:
    return Reply.json({"query_domains": list(names)})


def queries_reply(*queries, filters=None) -> Reply:
    return Reply.json({"queries": list(queries), "filters": filters or {}})


SAFE = Reply.text("safe")
HH = "What does the Hodgkin-Huxley model describe?"


@pytest.fixture
def fake(settings):
    with ollama_backend(settings, KLEA_RAG_GUARD_MODEL="llama-guard3:1b", KLEA_RAG_NON_DOMAIN_CHAT=True,
                        KLEA_RAG_GUARD_ON_ERROR="decline", KLEA_LLM_TIMEOUT=30) as server:
        yield server


@pytest.fixture
def domains(db):
    return make_domains()


def number_of(body: dict, file_name: str) -> int:
    """The source number ``file_name`` has in an answer request's reference material."""
    return {name: n for n, name in material_files(body["messages"][0]["content"]).items()}[file_name]


def citing(file_name: str, template: str, pieces: int = 0) -> Reply:
    """An answer that cites ``file_name`` as ``{n}`` in ``template``, split into pieces
    of ``pieces`` characters when given."""

    def compute(body):
        text = template.format(n=number_of(body, file_name))
        if not pieces:
            return Reply.text(text)
        return Reply.text("", pieces=[text[i:i + pieces] for i in range(0, len(text), pieces)])

    return Reply.using(compute)


def answer_prompt(fake: FakeOllama) -> str:
    """The system prompt of the (last) streamed answer request."""
    streamed = [b for b in fake.bodies() if b.get("stream")]
    return streamed[-1]["messages"][0]["content"]


def retrieve_line(fake: FakeOllama, k="default", filters="") -> str:
    files = material_files(answer_prompt(fake))
    return f"retrieve: {len(files)} chunks, {len(files)} sources (k={k}{filters})"


def test_one_domain_answer_with_exact_events(fake, domains):
    fake.script(
        SAFE,
        domains_reply("neuro"),
        queries_reply("Hodgkin-Huxley model action potentials"),
        Reply.using(lambda body: Reply.text("", pieces=[
            "<think>", "neurons?</think>\n\n", "It describes how action potentials are ",
            "initiated [", f"{number_of(body, 'hodgkin-huxley.md')}] and propagated [7]."])),
        scores(),
    )
    result = run(HH, [domains["neuro"], domains["arrays"]])
    files = material_files(answer_prompt(fake))
    text = "It describes how action potentials are initiated [1] and propagated."
    assert trace(result) == [
        "memory: no session",
        "guard: safe",
        "classify: neuro",
        "route: domains: neuro",
        "pick_tools: no tools offered",
        "generate_queries: Hodgkin-Huxley model action potentials",
        retrieve_line(fake),
        "join_tools: no tool results",
        "> answer",
        "token 1: It describes how action potentials are",
        "token 1:  initiated",
        "token 1:  [1] and propagated.",
        f"< answer: {len(text)} chars, cites 1 of {len(files)} sources, dropped 1 invalid citation(s)",
        "evaluate: continue",
        "remember: no session",
        "> respond",
        "references: [1] hodgkin-huxley.md",
        f"answer domains: {text}",
        "< respond: domains, 1 references",
        "summarise: no session",
        "done complete",
    ]
    answer = result.answer.as_dict()
    assert answer == {
        "type": "answer",
        "text": text,
        "route": "domains",
        "domains": ["neuro"],
        "citations": [1],
        "dropped_citations": 1,
        "evaluation": {
            "scores": {key: 0.9 for key in SCORES},
            "next_step": "continue",
            "summary": "Fine.",
            "checks": {"no_sources": False, "no_valid_citation": False, "answer_empty": False},
            "decision": "continue",
        },
        "warnings": [],
        "session_id": None,
        "message_id": None,
    }
    reference = result.references[0]
    assert {k: v for k, v in reference.items() if k not in ("document_id", "chunks")} == {
        "number": 1,
        "kind": "document",
        "domain": "neuro",
        "store": "neuro-store",
        "file_name": "hodgkin-huxley.md",
        "title": "A quantitative description of membrane current",
        "authors": ["Alan Hodgkin", "Andrew Huxley"],
        "year": 1952,
        "journal": "",
        "doi": "10.1113/jphysiol.1952.sp004764",
        "url": "https://doi.org/10.1113/jphysiol.1952.sp004764",
        "urls": [
            {"label": "doi", "url": "https://doi.org/10.1113/jphysiol.1952.sp004764"},
            {"label": "orcid", "url": "https://orcid.org/0000-0000-0000-0001"},
        ],
        "pages": None,  # a Markdown source: no pages
        "quoted": [],  # a model's answer: which chunk it quotes is not known
        "markers": [],  # ... nor which chunk each of its markers quotes
    }
    assert [(c["headings"], c["heading_chain"]) for c in reference["chunks"]] == [(["Model"], "Model")]
    assert reference["chunks"][0]["text"].startswith("The Hodgkin-Huxley model describes")
    # The requests: guard model first, then the chat model; the classifier's enum is the
    # allowed domains only; structured calls carry a schema, the answer streams.
    bodies = fake.bodies()
    assert fake.paths() == ["/api/chat"] * 5
    assert [b["model"] for b in bodies] == ["llama-guard3:1b"] + ["qwen3:0.6b"] * 4
    assert bodies[0]["messages"] == [{"role": "user", "content": HH}]
    enum = bodies[1]["format"]["properties"]["query_domains"]["items"]["enum"]
    assert enum == ["arrays", "neuro", "undefined"]
    assert [bool(b.get("format")) for b in bodies] == [False, True, True, False, True]
    assert [b.get("stream", False) for b in bodies] == [False, False, False, True, False]
    assert "_authors_variants" not in answer_prompt(fake)
    done = result.done.as_dict()
    assert set(done) == {"type", "status", "total_ms", "ttft_ms", "timings", "cpu_ms"}
    assert list(done["cpu_ms"]) == list(done["timings"])
    assert list(done["timings"]) == [
        "memory", "guard", "classify", "route", "pick_tools", "generate_queries", "retrieve", "join_tools",
        "answer", "evaluate", "remember", "respond", "summarise",
    ]
    assert 0 < done["ttft_ms"] <= done["total_ms"]


def test_unsafe_question_is_declined_and_nothing_is_retrieved(fake, domains):
    fake.script(Reply.text("unsafe\nS1,S10"))
    result = run("How do I hurt someone?", [domains["neuro"]])
    assert trace(result) == [
        "memory: no session",
        "guard: unsafe: S1 (violent crimes), S10 (hate)",
        "> decline",
        "token 1: I'm sorry, but I can't help with that request.",
        "< decline: unsafe",
        "remember: no session",
        "> respond",
        "references: ",
        "answer declined: I'm sorry, but I can't help with that request.",
        "< respond: declined, 0 references",
        "summarise: no session",
        "done complete",
    ]
    assert len(fake.requests) == 1


@pytest.mark.parametrize("policy", ["decline", "allow"])
def test_guard_model_missing_follows_the_failure_policy(fake, domains, settings, policy):
    settings.KLEA_RAG_GUARD_ON_ERROR = policy
    fake.script(Reply.not_found("llama-guard3:1b"))
    if policy == "allow":
        fake.script(domains_reply("undefined"), Reply.text("", pieces=["Hello ", "there."]))
    result = run("Hello?", [domains["neuro"]])
    error = (
        f"error model_not_found (guard): model 'llama-guard3:1b' is not on the Ollama server at {fake.url}; "
        f"run `ollama pull llama-guard3:1b` (KLEA_RAG_GUARD_ON_ERROR={policy})"
    )
    lines = trace(result, tokens=False)
    assert lines[:3] == ["memory: no session", "> guard", error]
    if policy == "decline":
        assert lines[3:6] == [
            "< guard: failed (model_not_found); policy decline",
            "> decline",
            "token 1: I can't check this question for safety right now, so I won't answer it. Please try again later.",
        ]
        assert result.answer.route == "declined"
    else:
        assert lines[3:9] == [
            "< guard: failed (model_not_found); policy allow",
            "classify: undefined",
            "route: general chat",
            "> general_chat",
            "token 1: Hello there.",
            "< general_chat: 12 chars",
        ]
        assert result.answer.route == "general"
    assert result.done.status == "complete"


def test_unparseable_guard_reply_declines(fake, domains):
    fake.script(Reply.text("I think this is fine"))
    result = run("Hello?", [domains["neuro"]])
    assert trace(result, tokens=False)[2:4] == [
        "error guard_failed (guard): guard model 'llama-guard3:1b' gave unexpected guard reply "
        "'I think this is fine' (KLEA_RAG_GUARD_ON_ERROR=decline)",
        "< guard: failed (guard_failed); policy decline",
    ]
    assert result.answer.route == "declined"


def test_undefined_question_gets_general_chat(fake, domains, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""
    fake.script(domains_reply("undefined", "neuro-typo"), Reply.text("", pieces=["Canberra ", "is the capital."]))
    result = run("What is the capital of Australia?", [domains["neuro"], domains["arrays"]])
    assert trace(result, tokens=False) == [
        "memory: no session",
        "guard: skipped (no guard model)",
        "classify: undefined",
        "route: general chat",
        "> general_chat",
        "token 1: Canberra is the capital.",
        "< general_chat: 24 chars",
        "remember: no session",
        "> respond",
        "references: ",
        "answer general: Canberra is the capital.",
        "< respond: general, 0 references",
        "summarise: no session",
        "done complete",
    ]
    assert fake.bodies()[1]["messages"][-1] == {"role": "user", "content": "What is the capital of Australia?"}


def test_undefined_without_general_chat_lists_only_allowed_domains(fake, domains, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""
    settings.KLEA_RAG_NON_DOMAIN_CHAT = False
    fake.script(domains_reply("undefined"))
    result = run("What is the capital of Australia?", [domains["neuro"], domains["empty"]])
    text = ("This question does not match any of the available domains (empty, neuro). "
            "Tick a domain to ask it directly.")
    assert trace(result, tokens=False)[2:7] == [
        "classify: undefined",
        "route: refusal",
        "> refuse",
        f"token 1: {text}",
        "< refuse: lists empty, neuro",
    ]
    assert (result.answer.route, result.answer.text) == ("refused", text)
    enum = fake.bodies()[0]["format"]["properties"]["query_domains"]["items"]["enum"]
    assert enum == ["empty", "neuro", "undefined"]
    assert "arrays" not in fake.bodies()[0]["messages"][0]["content"]


@pytest.mark.parametrize(("question", "allowed", "named"), [
    # the only domain there is: whatever was asked, it was asked of that one
    ("What is the capital of Australia?", ["neuro"], "neuro"),
    # a name of the description's subject ("... arrays in Python: ...")
    ("Does it need Python 3.12?", ["neuro", "arrays", "empty"], "arrays"),
    # the domain's name
    ("Which neuro models run on a GPU?", ["neuro", "arrays"], "neuro"),
])
def test_a_refused_question_about_a_domain_says_no_source_there_answers(fake, domains, settings, question,
                                                                          allowed, named):
    settings.KLEA_RAG_GUARD_MODEL = ""
    settings.KLEA_RAG_NON_DOMAIN_CHAT = False
    fake.script(domains_reply("undefined"))
    result = run(question, [domains[name] for name in allowed])
    text = f"No source in {named} answers this question."
    assert trace(result, tokens=False)[2:7] == [
        "classify: undefined",
        "route: refusal",
        "> refuse",
        f"token 1: {text}",
        f"< refuse: no source in {named}",
    ]
    assert (result.answer.route, result.answer.text, result.references) == ("refused", text, [])


def test_two_domains_are_searched_and_cited(fake, domains, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""
    fake.script(
        domains_reply("neuro", "arrays", "undefined"),
        queries_reply("spiking neuron model", "monthly means time series"),
        Reply.using(lambda body: Reply.text(
            f"Izhikevich neurons spike [{number_of(body, 'izhikevich.md')}]; resample gives monthly means "
            f"[{number_of(body, 'resample.md')}].")),
        scores(),
    )
    result = run("Which neuron model spikes cheaply, and how do I get monthly means?",
                 [domains["neuro"], domains["arrays"]])
    files = material_files(answer_prompt(fake))
    assert {"izhikevich.md", "resample.md"} <= set(files.values())
    lines = trace(result, tokens=False)
    assert lines[2:6] == [
        "classify: neuro, arrays",
        "route: domains: neuro, arrays",
        "pick_tools: no tools offered",
        "generate_queries: spiking neuron model; monthly means time series",
    ]
    assert [r["file_name"] for r in result.references] == ["izhikevich.md", "resample.md"]
    assert result.answer.text == "Izhikevich neurons spike [1]; resample gives monthly means [2]."
    assert {r["domain"] for r in result.references} == {"neuro", "arrays"}
    assert result.answer.domains == ["neuro", "arrays"]
    assert "## neuro" in answer_prompt(fake) and "## arrays" in answer_prompt(fake)


def test_filters_are_typed_per_field_and_passed_to_retrieval(fake, domains, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""
    fake.script(
        domains_reply("neuro"),
        queries_reply(
            "spiking model", " spiking model ", "cortical neurons", "bursting", "fourth query",
            filters={"year": {"gte": 2000, "lte": 2010}, "authors": ["Izhikevich"], "keywords": ["spiking"],
                     "journal": "ignored: not declared"},
        ),
        citing("izhikevich.md", "A cheap spiking model [{n}]."),
        scores(),
    )
    result = run("Which spiking models from 2000 to 2010 by Izhikevich?", [domains["neuro"]],
                 filters={"keywords": {"$contains": ["cortex"]}})
    dsl = {"authors": "Izhikevich", "keywords": {"$contains": ["cortex"]}, "year": {"$gte": 2000, "$lte": 2010}}
    lines = trace(result, tokens=False)
    assert lines[5] == "generate_queries: spiking model; cortical neurons; bursting | filters " + json.dumps(
        dsl, sort_keys=True
    )
    assert lines[6] == retrieve_line(fake, filters=", filters on authors, keywords, year")
    schema = fake.bodies()[1]["format"]
    assert schema["properties"]["queries"]["maxItems"] == 3
    fields = schema["properties"]["filters"]["properties"]
    assert sorted(fields) == ["authors", "keywords", "year"]
    assert fields["keywords"] == {"type": "array", "items": {"type": "string"}}
    assert [option.get("type") for option in fields["year"]["anyOf"]] == ["integer", "array", "object"]
    assert fields["year"]["anyOf"][2]["properties"] == {"gte": {"type": "integer"}, "lte": {"type": "integer"}}
    assert [option["type"] for option in fields["authors"]["anyOf"]] == ["string", "array"]
    assert schema["properties"]["filters"]["additionalProperties"] is False


def test_domain_without_fields_gets_no_filter_schema(fake, domains, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""
    fake.script(domains_reply("arrays"), queries_reply(), citing("resample.md", "Use resample [{n}]."), scores())
    question = "How do I compute monthly means?"
    result = run(question, [domains["arrays"]])
    assert "filters" not in fake.bodies()[1]["format"]["properties"]
    # An empty query list falls back to the user's own question.
    assert trace(result)[5] == f"generate_queries: {question} (the question)"


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({"year": {"gte": 1990, "lte": 2010}, "authors": "Poo"}, {1: "stdp.md"}),
        ({"authors": ["huxley", "Izhikevich"]}, {1: "izhikevich.md", 2: "hodgkin-huxley.md"}),
        ({"keywords": ["spiking", "cortex"]}, {1: "izhikevich.md"}),
    ],
)
def test_extracted_filters_restrict_the_sources_end_to_end(fake, domains, settings, filters, expected):
    settings.KLEA_RAG_GUARD_MODEL = ""
    answer = citing(expected[1], "See [{n}].")
    fake.script(domains_reply("neuro"), queries_reply("neuron model", filters=filters), answer, scores())
    result = run("Which neuron models do these papers describe?", [domains["neuro"]])
    streamed = [b for b in fake.bodies() if b.get("stream")]
    assert material_files(streamed[-1]["messages"][0]["content"]) == expected
    references = result.references
    assert [r["file_name"] for r in references] == [expected[1]]
