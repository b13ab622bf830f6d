"""Conversation memory: recent messages verbatim, older ones folded into the running
summary by the model (or deterministically on the extractive backend); search queries
never enter the history."""

from __future__ import annotations

import pytest

from chat import memory
from chat.backends.extractive import split_sentences
from chat.models import ChatMessage, ChatSession

from .fake_ollama import Reply
from .pipeline_helpers import run, trace
from .test_pipeline_loops import IZH, cheap
from .test_pipeline_ollama import domains, domains_reply, fake, queries_reply, scores  # noqa: F401

pytestmark = pytest.mark.django_db
SECRET_QUERY = "zebra quokka neuron cost"


def test_history_is_given_verbatim_and_queries_stay_out(fake, domains, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""
    session = ChatSession.objects.create()
    fake.script(domains_reply("neuro"), queries_reply(SECRET_QUERY), cheap(), scores())
    first = run(IZH, [domains["neuro"]], session_id=session.pk)
    assert trace(first)[0] == "memory: 0 messages (0 chars), summary 0 chars"
    assert first.answer.session_id == session.pk
    fake.script(domains_reply("undefined"), Reply.text("It has two variables."))
    second = run("How many variables does it have?", [domains["neuro"]], session_id=session.pk)
    answer1 = first.answer.text
    chars = len(IZH) + len(answer1)
    assert trace(second)[0] == (f"memory: 2 messages ({chars} chars), summary 0 chars; "
                                f"follow-up, searched as: {IZH} How many variables does it have?")
    classify, general = fake.bodies()[4:]
    assert classify["messages"][1]["content"] == (
        f"Recent messages:\nuser: {IZH}\nassistant: {answer1}\n\nQuestion: How many variables does it have?"
    )
    assert general["messages"][1:] == [
        {"role": "user", "content": IZH},
        {"role": "assistant", "content": answer1},
        {"role": "user", "content": "How many variables does it have?"},
    ]
    assert all(SECRET_QUERY not in str(body) for body in fake.bodies()[4:])
    stored = list(session.messages.values_list("role", "content", "status", "route"))
    assert stored == [
        ("user", IZH, "complete", ""),
        ("assistant", answer1, "complete", "domains"),
        ("user", "How many variables does it have?", "complete", ""),
        ("assistant", "It has two variables.", "complete", "general"),
    ]
    assistant = session.messages.filter(role="assistant").first()
    assert first.answer.message_id == assistant.pk
    assert assistant.references[0]["file_name"] == "izhikevich.md"
    assert assistant.evaluation["decision"] == "continue"
    assert set(assistant.timing) >= {"classify", "answer", "ttft_ms", "total_ms", "cpu_ms"}
    assert set(assistant.timing["cpu_ms"]) >= {"classify", "answer"}
    session.refresh_from_db()
    assert session.title == IZH


def test_old_messages_are_folded_into_the_summary_by_the_model(fake, domains, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""
    settings.KLEA_RAG_HISTORY_CHARS = 60
    session = ChatSession.objects.create()
    q1, a1, s1 = "What is the capital of Australia?", "Canberra is the capital of Australia.", "Asked: Australia's capital."
    fake.script(domains_reply("undefined"), Reply.text(a1), Reply.text(f"<think>short</think>{s1}"))
    first = run(q1, [domains["neuro"]], session_id=session.pk)
    # 33 + 37 characters exceed 60: the question is folded, the answer stays verbatim.
    assert trace(first)[-2:] == [f"summarise: folded 1 messages into the summary ({len(s1)} chars)", "done complete"]
    assert fake.bodies()[2]["messages"][1]["content"] == f"New messages:\nuser: {q1}"
    session.refresh_from_db()
    user1 = session.messages.get(content=q1)
    assert (session.summary, session.summarised_till_id) == (s1, user1.pk)

    q2, a2 = "And its population?", "About 460,000."
    fake.script(domains_reply("undefined"), Reply.text(a2), Reply.text("Asked: capital, population."))
    second = run(q2, [domains["neuro"]], session_id=session.pk)
    assert trace(second)[0] == f"memory: 1 messages ({len(a1)} chars), summary {len(s1)} chars"
    classify = fake.bodies()[3]["messages"][1]["content"]
    assert classify == (
        f"Summary of the earlier conversation:\n{s1}\n\nRecent messages:\nassistant: {a1}\n\nQuestion: {q2}"
    )
    assert fake.bodies()[5]["messages"][1]["content"] == f"Current summary:\n{s1}\n\nNew messages:\nassistant: {a1}"
    session.refresh_from_db()
    assert session.summary == "Asked: capital, population."


def test_extractive_backend_folds_without_a_model(domains, settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    settings.KLEA_RAG_HISTORY_CHARS = 1  # nothing stays verbatim
    session = ChatSession.objects.create()
    first = run(IZH, [domains["neuro"], domains["arrays"]], session_id=session.pk)
    opening = split_sentences(first.answer.text)[0][:200]
    summary = f"user: {IZH}\nassistant: {opening}"
    assert trace(first)[-2] == f"summarise: folded 2 messages into the summary ({len(summary)} chars)"
    session.refresh_from_db()
    assert session.summary == summary


LONG = ("Is there a mechanism or a tool that integrates fuzzy and RAG approaches, and if so, what problem does "
        "it solve?")


@pytest.mark.parametrize(("question", "title"), [
    (IZH, IZH),
    ("  Which   neuron\nmodel?  ", "Which neuron model?"),
    ("x" * 80, "x" * 80),
    # cut at the last word boundary within 79 characters, with an ellipsis
    (LONG, "Is there a mechanism or a tool that integrates fuzzy and RAG approaches, and if…"),
    ("a" * 100, "a" * 79 + "…"),  # no word boundary to cut at
    ("word " * 30, "word " * 15 + "word…"),  # the cut falls on a space
])
def test_a_sessions_title_is_its_first_question_cut_with_an_ellipsis(question, title):
    session = ChatSession.objects.create()
    memory.add_message(session.pk, "user", question)
    memory.add_message(session.pk, "user", "A second question does not rename it.")
    session.refresh_from_db()
    assert session.title == title and len(title) <= memory.TITLE_CHARS


def test_window_and_fold_selection():
    session = ChatSession.objects.create()
    ids = [
        memory.add_message(session.pk, role, text)
        for role, text in [("user", "a" * 40), ("assistant", "b" * 30), ("user", "c" * 20), ("assistant", "")]
    ]
    memory.add_message(session.pk, "assistant", "lost", status=ChatMessage.Status.FAILED)
    assert memory.load_history(session.pk, 50) == ("", [
        {"role": "assistant", "content": "b" * 30}, {"role": "user", "content": "c" * 20},
    ])
    assert [m["id"] for m in memory.messages_to_fold(session.pk, 50)] == [ids[0]]
    memory.store_summary(session.pk, "S", ids[0])
    assert memory.load_history(session.pk, 10_000) == ("S", [
        {"role": "assistant", "content": "b" * 30}, {"role": "user", "content": "c" * 20},
    ])
    assert memory.messages_to_fold(session.pk, 10_000) == []


def test_a_callers_own_history_is_windowed_like_a_sessions():
    given = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a" * 40},
             {"role": "assistant", "content": "b" * 30}, {"role": "tool", "content": "x"},
             {"role": "user", "content": "c" * 20}, {"role": "assistant", "content": ""}]
    assert memory.recent(given, 50) == [{"role": "assistant", "content": "b" * 30}, {"role": "user", "content": "c" * 20}]
    assert memory.recent(given, 10_000) == [{"role": "user", "content": "a" * 40},
                                            {"role": "assistant", "content": "b" * 30},
                                            {"role": "user", "content": "c" * 20}]
    assert memory.recent([], 50) == []
