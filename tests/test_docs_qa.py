"""End to end on the real documentation corpora, through the full pipeline on the
extractive backend: routing, cited files, refusals, the event sequence, the commands."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chat.models import ChatSession
from domains.models import Domain

from .doc_questions import NEUROML_QUESTIONS, OFF_TOPIC_QUESTIONS, XARRAY_QUESTIONS
from .pipeline_helpers import run, trace

pytestmark = [pytest.mark.django_db, pytest.mark.corpora]

# Measured on the extractive backend: 11/13 NeuroML and 12/14 xarray questions cite the
# expected file with BM25 (k1 1.2, b 0.75) + dense + RRF (12/13 and 12/14 with the
# earlier ts_rank keyword list: the Izhikevich file is now retrieved second but the
# extractive answer cites other chunks); the floor below guards against regressions.
# Since the answer is one passage (issue 13), it cites one file: 10/14 xarray answers
# cite the expected page, the others quote the same API from another page (the quick
# overview for sel, data-structures for DataTree).
MIN_CITED = {"neuroml": 11, "xarray": 10}
# Each question forced into the other domain: 15 of 27 answers say that no source
# answers (bench/docs_qa.py; the others find a sentence with cosine >= 0.35 there).
MIN_DECLINED_ELSEWHERE = 15


@pytest.fixture(autouse=True)
def extractive(settings):
    settings.KLEA_LLM_BACKEND = "extractive"


def doc_domains_allowed():
    return list(Domain.objects.filter(name__in=["neuroml", "xarray"]))


def test_ingest_counts(doc_domains):
    neuroml, xarray = doc_domains["neuroml"], doc_domains["xarray"]
    assert (neuroml.count("stored"), neuroml.count("skipped"), neuroml.count("failed")) == (122, 1, 0)
    assert (xarray.count("stored"), xarray.count("failed")) == (73, 0)


@pytest.mark.parametrize("domain, questions", [("neuroml", NEUROML_QUESTIONS), ("xarray", XARRAY_QUESTIONS)])
def test_questions_route_to_their_domain_and_cite_the_answering_file(doc_domains, domain, questions):
    cited = 0
    misses = []
    for question, expected_file in questions:
        result = run(question, doc_domains_allowed())
        answer = result.answer
        assert (answer.route, answer.domains, result.done.status) == ("domains", [domain], "complete"), question
        assert all(ref["domain"] == domain for ref in result.references), question
        assert answer.citations == list(range(1, len(result.references) + 1)), question
        files = [ref["file_name"] for ref in result.references]
        if expected_file in files:
            cited += 1
        else:
            misses.append((question, expected_file, files))
    assert cited >= MIN_CITED[domain], misses


def test_questions_forced_into_the_other_domain_say_that_no_source_answers(doc_domains):
    declined, quoted = 0, []
    for other, questions in (("xarray", NEUROML_QUESTIONS), ("neuroml", XARRAY_QUESTIONS)):
        for question, _ in questions:
            result = run(question, doc_domains_allowed(), pick=[other])
            answer = result.answer
            if answer.text == f"No source in {other} answers this question.":
                declined += 1
                assert (answer.citations, result.references, answer.warnings) == ([], [], []), question
            else:
                quoted.append((question, answer.text))
    assert declined >= MIN_DECLINED_ELSEWHERE, quoted


def test_off_topic_questions_are_refused_listing_the_domains(doc_domains):
    for question in OFF_TOPIC_QUESTIONS:
        result = run(question, doc_domains_allowed())
        answer = result.answer
        assert (answer.route, answer.domains, result.references) == ("refused", [], []), question
        assert answer.text == ("This question does not match any of the available domains (neuroml, xarray). "
                               "Tick a domain to ask it directly.")


def test_event_sequence_of_an_extractive_answer(doc_domains):
    result = run("How do I install pyNeuroML with pip?", doc_domains_allowed())
    lines = trace(result, tokens=False)
    assert lines[:4] == ["memory: no session", "guard: skipped (no guard model)", lines[2], "route: domains: neuroml"]
    assert lines[2].startswith("classify: neuroml 0.")
    assert lines[4] == "pick_tools: no tools (the extractive backend picks none)"
    assert lines[5] == "generate_queries: How do I install pyNeuroML with pip? (the question)"
    assert lines[6].startswith("retrieve: ") and lines[6].endswith(" (k=default)")
    assert lines[7] == "join_tools: no tool results"
    assert lines[8] == "> answer"
    assert lines[9] == f"token 1: {result.answer.text}"
    assert lines[10].startswith("< answer: ")
    assert lines[11:] == [
        "evaluate: continue",
        "remember: no session",
        "> respond",
        "references: " + ", ".join(f"[{r['number']}] {r['file_name']}" for r in result.references),
        f"answer domains: {result.answer.text}",
        f"< respond: domains, {len(result.references)} references",
        "summarise: no session",
        "done complete",
    ]
    assert result.answer.evaluation == {
        "scores": None,
        "next_step": "",
        "summary": "",
        "checks": {"no_sources": False, "no_valid_citation": False, "answer_empty": False},
        "decision": "continue",
    }
    assert "Userdocs/Software/pyNeuroML.md" in [r["file_name"] for r in result.references]


def test_picked_domain_skips_classification(doc_domains):
    result = run("How do I resample a time series to monthly means?", doc_domains_allowed(), pick=["xarray"])
    assert trace(result)[2:4] == ["classify: picked: xarray", "route: domains: xarray"]


def test_ask_command_prints_stages_answer_and_references(doc_domains):
    out = StringIO()
    call_command("ask", "How do I install pyNeuroML with pip?", "--domain", "neuroml", stdout=out)
    text = out.getvalue()
    before, _, after = text.partition("\nReferences\n")
    assert before.splitlines()[0].startswith("· memory: no session (")
    assert "[1]" in before  # the streamed answer, printed before the answer stage line
    lines = after.splitlines()
    assert lines[0].startswith("[1] Userdocs/Software/pyNeuroML.md — pyNeuroML > ")
    assert lines[1] == "    title: pyNeuroML | domain: neuroml, store: neuroml-docs"

    out = StringIO()
    call_command("ask", "How do I resample a time series to monthly means?", "--json", "--timings", stdout=out)
    payload_text, _, timings = out.getvalue().partition("\nTimings (ms: wall, process CPU)\n")
    payload = json.loads(payload_text)
    assert (payload["route"], payload["domains"]) == ("domains", ["xarray"])
    assert payload["references"][0]["number"] == 1
    assert payload["references"][0]["file_name"] == "user-guide/time-series.md"
    assert [line.split()[0] for line in timings.splitlines()] == [
        "memory", "guard", "classify", "route", "pick_tools", "generate_queries", "retrieve", "join_tools",
        "answer", "evaluate", "remember", "respond", "summarise", "first", "total",
    ]
    # every node: wall and process CPU milliseconds
    assert [len(line.split()) for line in timings.splitlines()] == [3] * 13 + [3, 2]


def test_ask_command_events_are_json_lines(doc_domains):
    out = StringIO()
    call_command("ask", "What is the recipe for banana pancakes?", "--events", stdout=out)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["type"] for e in events][-6:] == ["references", "answer", "stage", "stage", "stage", "done"]
    assert events[-1]["status"] == "complete"
    answer = next(e for e in events if e["type"] == "answer")
    assert answer["route"] == "refused"


def test_ask_errors(doc_domains):
    with pytest.raises(CommandError, match=r"^domain 'nope' does not exist or is inactive \(active: "):
        call_command("ask", "anything", "--domain", "nope")
    for blank in ("   ", "\u200b\ufeff"):  # zero-width characters show nothing either
        with pytest.raises(CommandError, match="the question is empty"):
            call_command("ask", blank)
    with pytest.raises(CommandError, match="chat session 999999 does not exist"):
        call_command("ask", "anything", "--session", "999999")
    assert Domain.objects.filter(name__in=["neuroml", "xarray"]).count() == 2


def test_chat_command_keeps_a_session(doc_domains):
    out = StringIO()
    stdin = StringIO("How do I install xarray with conda?\n\n/new\nWhat is the capital of Australia?\n/quit\n")
    call_command("chat", "--quiet", stdin=stdin, stdout=out)
    text = out.getvalue()
    first, second = ChatSession.objects.order_by("-pk")[:2][::-1]
    assert text.startswith(f"Session {first.pk}. Commands: /new (new session), /quit")
    assert f"Session {second.pk}." in text
    assert ("This question does not match any of the available domains (neuroml, xarray). "
            "Start the chat with --domain NAME to ask one directly.") in text
    assert list(first.messages.values_list("role", flat=True)) == ["user", "assistant"]
    assert first.messages.last().references[0]["domain"] == "xarray"
    assert list(second.messages.values_list("route", flat=True)) == ["", "refused"]
