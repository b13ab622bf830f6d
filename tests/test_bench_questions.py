"""The question sets of bench/answers.py and bench/routing.py (bench/questions/*.json):
valid question files, at least 30 questions per corpus in the first set (15 in a later set
``<domain>-N``, written apart), no question asked twice in a domain, and every evidence a
verbatim passage of its file (the shared corpora; klea-docs against this repository's docs/;
papers against one chunk of the PDF as ingestion converts and chunks it, scans OCRed)."""

import re
from functools import cache
from pathlib import Path

import pytest
from django.conf import settings

from chat.scoring import load_questions
from ingestion.chunk.step import chunk_file
from ingestion.options import IngestOptions

from .conftest import corpora_path

QUESTIONS = Path(settings.BASE_DIR) / "bench" / "questions"
CORPORA = {"neuroml": "neuroml", "xarray": "xarray", "cooking": "based_cooking"}


def corpus_root(domain: str) -> Path:
    if domain == "papers":
        return corpora_path("pdfs")
    return Path(settings.BASE_DIR) / "docs" if domain == "klea-docs" else corpora_path("docs", CORPORA[domain])


@cache
def _pdf_chunks(path: Path) -> tuple[str, ...]:
    staged, outcome = chunk_file(path.parent, path, IngestOptions())
    assert outcome.status == "chunked", outcome
    return tuple(chunk["text"] for chunk in staged.chunks)


def holds(domain: str, file: str, evidence: str) -> bool:
    """``evidence`` is verbatim in ``file``: in its text, or for a PDF in one of its chunks
    (what the answer bench's references show)."""
    path = corpus_root(domain) / file
    if not path.is_file():
        return False
    if path.suffix == ".pdf":
        return any(evidence in text for text in _pdf_chunks(path))
    return evidence in path.read_text(encoding="utf-8")


SETS = {"neuroml": 30, "xarray": 30, "cooking": 30, "klea-docs": 30, "papers": 30,
        "neuroml-2": 20, "xarray-2": 20, "cooking-2": 20, "klea-docs-2": 15,
        "neuroml-3": 20, "xarray-3": 20, "cooking-3": 20, "klea-docs-3": 20, "papers-2": 15,
        "neuroml-4": 30, "xarray-4": 30, "cooking-4": 25, "klea-docs-4": 25, "papers-3": 20,
        "neuroml-5": 30, "xarray-5": 30, "cooking-5": 25, "klea-docs-5": 25, "papers-4": 15,
        "neuroml-6": 25, "xarray-6": 23, "cooking-6": 24, "klea-docs-6": 18,
        "neuroml-7": 30, "xarray-7": 30, "cooking-7": 30, "neuroml-8": 25, "xarray-8": 25, "cooking-8": 25}  # set -> least size


def set_domain(name: str) -> str:
    """The domain of a question set: its name without a trailing ``-N``."""
    return re.sub(r"-\d+$", "", name)


@pytest.mark.django_db
@pytest.mark.parametrize("name", SETS)
def test_every_evidence_is_a_verbatim_passage_of_its_file(name):
    questions = load_questions(QUESTIONS / f"{name}.json")
    assert len(questions) >= SETS[name]
    domain = set_domain(name)
    assert {q.domain for q in questions} == {domain}
    asked = [q.question.casefold() for other in SETS if set_domain(other) == domain
             for q in load_questions(QUESTIONS / f"{other}.json")]
    assert len(set(asked)) == len(asked)
    missing = [(q.number, q.file) for q in questions if not holds(domain, q.file, q.evidence)]
    assert missing == []


# set -> size; off-topic-6 is the refusal's development set (bench/answers.py)
OFF_TOPIC = {"off-topic": 20, "off-topic-2": 45, "off-topic-3": 25, "off-topic-5": 25, "off-topic-6": 60}


@pytest.mark.parametrize("name, size", OFF_TOPIC.items())
def test_off_topic_questions(name, size):
    questions = load_questions(QUESTIONS / f"{name}.json")
    assert len(questions) == size
    assert all(q.off_topic for q in questions)


def test_the_development_set_asks_no_question_of_another_set():
    """off-topic-6 is read and tuned on: a question it shared with a held-out set would leak
    that set. (off-topic-3 and off-topic-5, both held out, share one question.)"""
    development = [q.question.casefold() for q in load_questions(QUESTIONS / "off-topic-6.json")]
    others = {q.question.casefold() for name in OFF_TOPIC if name != "off-topic-6"
              for q in load_questions(QUESTIONS / f"{name}.json")}
    assert len(set(development)) == 60
    assert [q for q in development if q in others] == []


def test_terse_questions_of_bench_routing():
    """bench/routing.py's pronoun and few-word questions: every domain, evidence verbatim."""
    questions = load_questions(QUESTIONS / "terse.json")
    assert len(questions) == 26
    assert {q.domain for q in questions} == {"neuroml", "xarray", "cooking", "klea-docs"}
    missing = [(q.number, q.file) for q in questions if not holds(q.domain, q.file, q.evidence)]
    assert missing == []


def test_shape_questions_of_bench_answers():
    """bench/answers.py's "shapes" set: the sign that a thing is done, a version, near-misses
    of both; domains of the documentation corpora, evidence verbatim, asked in no other set."""
    questions = load_questions(QUESTIONS / "shapes.json")
    assert len(questions) == 35
    assert {q.domain for q in questions} == {"neuroml", "xarray", "cooking", "klea-docs"}
    others = {q.question.casefold() for name in SETS for q in load_questions(QUESTIONS / f"{name}.json")}
    assert [q.question for q in questions if q.question.casefold() in others] == []
    missing = [(q.number, q.file) for q in questions if not holds(q.domain, q.file, q.evidence)]
    assert missing == []
