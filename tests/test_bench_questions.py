"""The question sets of bench/answers.py and bench/routing.py (bench/questions/*.json):
valid question files, at least 30 questions per corpus in the first set (15 in a later set
``<domain>-N``, written apart), no question asked twice in a domain, and every evidence a
verbatim passage of its file (the shared corpora; klea-docs against this repository's docs/)."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from chat.scoring import load_questions

from .conftest import corpora_path

QUESTIONS = Path(settings.BASE_DIR) / "bench" / "questions"
CORPORA = {"neuroml": "neuroml", "xarray": "xarray", "cooking": "based_cooking"}


def corpus_root(domain: str) -> Path:
    return Path(settings.BASE_DIR) / "docs" if domain == "klea-docs" else corpora_path("docs", CORPORA[domain])


SETS = {"neuroml": 30, "xarray": 30, "cooking": 30, "klea-docs": 30,
        "neuroml-2": 20, "xarray-2": 20, "cooking-2": 20, "klea-docs-2": 15,
        "neuroml-3": 20, "xarray-3": 20, "cooking-3": 20, "klea-docs-3": 20}  # set -> least size


def set_domain(name: str) -> str:
    """The domain of a question set: its name without a trailing ``-N``."""
    return re.sub(r"-\d+$", "", name)


@pytest.mark.parametrize("name", SETS)
def test_every_evidence_is_a_verbatim_passage_of_its_file(name):
    questions = load_questions(QUESTIONS / f"{name}.json")
    assert len(questions) >= SETS[name]
    domain = set_domain(name)
    assert {q.domain for q in questions} == {domain}
    asked = [q.question.casefold() for other in SETS if set_domain(other) == domain
             for q in load_questions(QUESTIONS / f"{other}.json")]
    assert len(set(asked)) == len(asked)
    root = corpus_root(domain)
    missing = [(q.number, q.file) for q in questions
               if not (root / q.file).is_file() or q.evidence not in (root / q.file).read_text(encoding="utf-8")]
    assert missing == []


@pytest.mark.parametrize("name, size", [("off-topic", 20), ("off-topic-2", 45)])
def test_off_topic_questions(name, size):
    questions = load_questions(QUESTIONS / f"{name}.json")
    assert len(questions) == size
    assert all(q.off_topic for q in questions)


def test_terse_questions_of_bench_routing():
    """bench/routing.py's pronoun and few-word questions: every domain, evidence verbatim."""
    questions = load_questions(QUESTIONS / "terse.json")
    assert len(questions) == 26
    assert {q.domain for q in questions} == {"neuroml", "xarray", "cooking", "klea-docs"}
    missing = [(q.number, q.file) for q in questions if not (corpus_root(q.domain) / q.file).is_file()
               or q.evidence not in (corpus_root(q.domain) / q.file).read_text(encoding="utf-8")]
    assert missing == []
