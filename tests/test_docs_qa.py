"""End to end on the real documentation corpora: routing and cited files."""

from io import StringIO
import json

import pytest
from django.core.management import CommandError, call_command

from chat.answering import answer_question
from domains.models import Domain

from .doc_questions import NEUROML_QUESTIONS, OFF_TOPIC_QUESTIONS, XARRAY_QUESTIONS

pytestmark = [pytest.mark.django_db, pytest.mark.corpora]

# Measured on the extractive backend: 11/13 NeuroML and 12/14 xarray questions cite the
# expected file with BM25 (k1 1.2, b 0.75) + dense + RRF (12/13 and 12/14 with the
# earlier ts_rank keyword list: the Izhikevich file is now retrieved second but the
# extractive answer cites other chunks); the floor below guards against regressions.
MIN_CITED = {"neuroml": 11, "xarray": 12}


def test_ingest_counts(doc_domains):
    neuroml, xarray = doc_domains["neuroml"], doc_domains["xarray"]
    assert (neuroml.count("stored"), neuroml.count("skipped"), neuroml.count("failed")) == (122, 1, 0)
    assert (xarray.count("stored"), xarray.count("failed")) == (73, 0)


@pytest.mark.parametrize("domain, questions", [("neuroml", NEUROML_QUESTIONS), ("xarray", XARRAY_QUESTIONS)])
def test_questions_route_to_their_domain_and_cite_the_answering_file(doc_domains, domain, questions):
    cited = 0
    misses = []
    for question, expected_file in questions:
        answer = answer_question(question)
        assert answer.domains == [domain], question
        assert all(ref.domain == domain for ref in answer.references), question
        files = [ref.file_name for ref in answer.references]
        if expected_file in files:
            cited += 1
        else:
            misses.append((question, expected_file, files))
    assert cited >= MIN_CITED[domain], misses


def test_off_topic_questions_are_undefined(doc_domains):
    for question in OFF_TOPIC_QUESTIONS:
        answer = answer_question(question)
        assert (answer.route, answer.domains, answer.references) == ("undefined", [], []), question
        assert answer.text.startswith("This question does not match any of the available domains (")


def test_ask_command_prints_answer_and_references(doc_domains):
    out = StringIO()
    call_command("ask", "How do I install pyNeuroML with pip?", "--domain", "neuroml", stdout=out)
    text = out.getvalue()
    answer, _, references = text.partition("\nReferences\n")
    assert "[1]" in answer
    lines = references.splitlines()
    assert lines[0].startswith("[1] Userdocs/Software/pyNeuroML.md — pyNeuroML > ")
    assert lines[1] == "    title: pyNeuroML | domain: neuroml, store: neuroml-docs"

    out = StringIO()
    call_command("ask", "How do I resample a time series to monthly means?", "--json", stdout=out)
    payload = json.loads(out.getvalue())
    assert (payload["route"], payload["domains"]) == ("domains", ["xarray"])
    assert payload["references"][0]["number"] == 1
    assert payload["references"][0]["file_name"] == "user-guide/time-series.md"


def test_ask_errors(doc_domains):
    with pytest.raises(CommandError, match=r"^domain 'nope' does not exist \(known: "):
        call_command("ask", "anything", "--domain", "nope")
    with pytest.raises(CommandError, match="the question is empty"):
        call_command("ask", "   ")
    assert Domain.objects.filter(name__in=["neuroml", "xarray"]).count() == 2
