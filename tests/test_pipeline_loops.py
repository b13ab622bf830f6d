"""The evaluation loop on the Ollama backend (fake server): every route of the routing
table, budgets spent, deterministic checks, invalid JSON."""

from __future__ import annotations

import pytest

from .fake_ollama import Reply
from .test_pipeline_ollama import (  # noqa: F401  (fixtures)
    FALLBACK,
    PARTIAL,
    citing,
    domains,
    domains_reply,
    fake,
    queries_reply,
    scores,
)
from .pipeline_helpers import run, trace

pytestmark = pytest.mark.django_db

IZH = "Which neuron model is cheap to simulate?"
CHEAP = "It is the Izhikevich model [1]."


@pytest.fixture(autouse=True)
def no_guard(fake, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""


def cheap(template="It is the Izhikevich model [{n}].") -> Reply:
    return citing("izhikevich.md", template)


def stages(result) -> list[str]:
    """Only the node-level lines (no tokens, references or answer)."""
    return [line for line in trace(result) if not line.startswith(("token", "references", "answer", "> respond"))]


def test_retrieve_more_info_grows_k_then_continues(fake, domains):
    fake.script(
        domains_reply("neuro"), queries_reply("cheap neuron model"),
        cheap(), scores(coverage=0.8, confidence=0.3, next_step="retrieve_more_info"),
        cheap(), scores(),
    )
    result = run(IZH, [domains["neuro"]])
    lines = stages(result)
    assert [line.split(" (")[0] if line.startswith("retrieve:") else line for line in lines][6:] == [
        "retrieve: 3 chunks, 3 sources",
        "join_tools: no tool results",
        "> answer", f"< answer: {len(CHEAP)} chars, cites 1 of 3 sources",
        "evaluate: retrieve_more_info (k=9)",
        "retrieve: 3 chunks, 3 sources",
        "join_tools: no tool results",
        "> answer", f"< answer: {len(CHEAP)} chars, cites 1 of 3 sources",
        "evaluate: continue",
        "remember: no session", "< respond: domains, 1 references", "summarise: no session", "done complete",
    ]
    assert [line for line in lines if line.startswith("retrieve:")][1].endswith("(k=9)")
    assert [e.attempt for e in result.events if e.type == "token"] == [1, 2]
    assert result.answer.evaluation["decision"] == "continue"
    assert result.answer.warnings == []


def test_k_at_k_max_ends_in_best_effort(fake, domains):
    neuro = domains["neuro"]
    neuro.k_max = 9
    neuro.save()
    fake.script(
        domains_reply("neuro"), queries_reply("cheap neuron model"),
        cheap(), scores(coverage=0.8, confidence=0.4),
        cheap(), scores(coverage=0.8, confidence=0.4),
    )
    result = run(IZH, [neuro])
    assert [line for line in stages(result) if line.startswith("evaluate")] == [
        "evaluate: retrieve_more_info (k=9)", "evaluate: best_effort",
    ]
    assert (result.answer.warnings, result.answer.text) == ([PARTIAL], CHEAP)


def test_modify_query_shows_previous_query_and_review(fake, domains):
    fake.script(
        domains_reply("neuro"), queries_reply("neuron cost"),
        cheap(), scores(coverage=0.1, summary="Nothing about simulation cost.", next_step="modify_query"),
        queries_reply("cheap spiking neuron simulation"),
        cheap(), scores(),
    )
    result = run(IZH, [domains["neuro"]])
    lines = stages(result)
    assert lines[3:6] == ["route: domains: neuro", "pick_tools: no tools offered", "generate_queries: neuron cost"]
    assert "evaluate: modify_query" in lines
    assert "generate_queries: cheap spiking neuron simulation" in lines
    retry = fake.bodies()[4]["messages"][1]["content"]
    assert "Previous queries: neuron cost" in retry
    assert "The reviewer said: Nothing about simulation cost." in retry
    assert result.answer.evaluation["decision"] == "continue"


def test_rewrite_answer_once_then_best_effort_with_warning(fake, domains):
    fake.script(
        domains_reply("neuro"), queries_reply("cheap neuron model"),
        cheap("It is a model [{n}]."), scores(conciseness=0.2, summary="Name the model."),
        cheap(), scores(conciseness=0.4),
    )
    result = run(IZH, [domains["neuro"]])
    lines = stages(result)
    assert lines[8:] == [
        "> answer", f"< answer: {len('It is a model [1].')} chars, cites 1 of 3 sources",
        "evaluate: rewrite_answer",
        "> answer", f"< answer: rewrite: {len(CHEAP)} chars, cites 1 of 3 sources",
        "evaluate: best_effort",
        "remember: no session", "< respond: domains, 1 references", "summarise: no session", "done complete",
    ]
    rewrite = fake.bodies()[4]["messages"]
    assert rewrite[-2]["role"] == "assistant" and rewrite[-2]["content"].startswith("It is a model [")
    assert rewrite[-1]["content"] == "Rewrite your answer to fix this review, keeping the citations: Name the model."
    assert result.answer.warnings == [PARTIAL]
    assert result.answer.text == "It is the Izhikevich model [1]."


def test_no_valid_citation_is_caught_deterministically(fake, domains):
    fake.script(
        domains_reply("neuro"), queries_reply("cheap neuron model"),
        Reply.text("It is the Izhikevich model [12]."), scores(),
        cheap(), scores(),
    )
    result = run(IZH, [domains["neuro"]])
    lines = stages(result)
    assert "< answer: 27 chars, cites 0 of 3 sources, dropped 1 invalid citation(s)" in lines
    assert len("It is the Izhikevich model.") == 27
    assert "evaluate: rewrite_answer [no_valid_citation]" in lines
    assert result.answer.evaluation["decision"] == "continue"
    assert result.answer.citations == [1]


def test_retrieval_budget_spent_falls_back_to_general_knowledge(fake, domains):
    fake.script(domains_reply("neuro"))
    for attempt in range(5):
        fake.script(queries_reply(f"cheap neuron model {attempt}"), cheap(),
                    scores(coverage=0.1, next_step="modify_query"))
    fake.script(Reply.text("From general knowledge: the Izhikevich model."))
    result = run(IZH, [domains["neuro"]])
    lines = stages(result)
    assert [line for line in lines if line.startswith("evaluate")] == ["evaluate: modify_query"] * 4 + [
        "evaluate: fallback"
    ]
    assert sum(line.startswith("retrieve:") for line in lines) == 5
    assert lines[-6:] == [
        "> general_chat", "< general_chat: 45 chars",
        "remember: no session", "< respond: fallback, 0 references", "summarise: no session", "done complete",
    ]
    assert (result.answer.route, result.answer.warnings) == ("fallback", [FALLBACK])
    assert result.references == []


def test_retrieval_budget_spent_without_general_chat_asks_to_clarify(fake, domains, settings):
    settings.KLEA_RAG_NON_DOMAIN_CHAT = False
    settings.KLEA_RAG_RETRIEVAL_BUDGET = 2
    fake.script(domains_reply("neuro"))
    for attempt in range(2):
        fake.script(queries_reply(f"cheap neuron model {attempt}"), cheap(), scores(coverage=0.1, confidence=0.2))
    result = run(IZH, [domains["neuro"]])
    tail = trace(result, tokens=False)
    assert tail[tail.index("evaluate: clarify"):] == [
        "evaluate: clarify",
        "> clarify",
        "token 3: I could not find an answer to this in neuro. Could you rephrase the question or add details?",
        "< clarify: asks for details",
        "remember: no session",
        "> respond",
        "references: ",
        "answer domains: I could not find an answer to this in neuro. Could you rephrase the question or add details?",
        "< respond: domains, 0 references",
        "summarise: no session",
        "done complete",
    ]


def test_no_sources_never_asks_the_model_to_answer(fake, domains, settings):
    settings.KLEA_RAG_RETRIEVAL_BUDGET = 2
    fake.script(domains_reply("empty"), queries_reply("anything"), queries_reply("anything else"),
                Reply.text("General answer."))
    result = run("Tell me about the empty domain", [domains["empty"]])
    assert stages(result)[2:] == [
        "classify: empty",
        "route: domains: empty",
        "pick_tools: no tools offered",
        "generate_queries: anything",
        "retrieve: 0 chunks, 0 sources (k=default)",
        "join_tools: no tool results",
        "> answer", "< answer: no sources",
        "evaluate: modify_query [no_sources]",
        "generate_queries: anything else",
        "retrieve: 0 chunks, 0 sources (k=default)",
        "join_tools: no tool results",
        "> answer", "< answer: no sources",
        "evaluate: fallback [no_sources]",
        "> general_chat", "< general_chat: 15 chars",
        "remember: no session", "< respond: fallback, 0 references", "summarise: no session", "done complete",
    ]
    first_answer = [e.text for e in result.events if e.type == "token" and e.attempt == 1]
    assert first_answer == ["No source in empty answers this question."]


def test_invalid_json_is_retried_once_then_the_typed_default(fake, domains):
    fake.script(
        Reply.text("neuro, I think"), Reply.text("```json\n{\"query_domains\": \"neuro\"}\n```"),
        Reply.text("<think>hm</think>Canberra."),
    )
    result = run(IZH, [domains["neuro"]])
    assert stages(result)[2:5] == [
        "classify: undefined (invalid JSON twice)",
        "route: general chat",
        "> general_chat",
    ]
    assert result.answer.text == "Canberra."
    retry = fake.bodies()[1]["messages"]
    assert retry[-2:] == [
        {"role": "assistant", "content": "neuro, I think"},
        {"role": "user", "content": "Your previous reply was not valid JSON for the schema. Reply with the JSON object only."},
    ]


def test_invalid_json_defaults_for_queries_and_evaluation(fake, domains):
    fake.script(
        domains_reply("neuro"),
        Reply.text("cheap model"), Reply.text("{\"queries\": 5}"),
        cheap(), Reply.text("{\"confidence\": \"high\"}"), scores(next_step="nonsense"),
    )
    result = run(IZH, [domains["neuro"]])
    lines = stages(result)
    assert lines[5] == f"generate_queries: {IZH} (the question) (invalid JSON twice)"
    assert lines[10] == "evaluate: continue (retried once)"
    assert result.answer.evaluation["next_step"] == "undefined"
