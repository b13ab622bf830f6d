"""The question sets of bench/answers.py (bench/questions/*.json): valid question files,
at least 30 questions per corpus, and every evidence a verbatim passage of its file
(the shared corpora; klea-docs against this repository's docs/)."""

from pathlib import Path

import pytest
from django.conf import settings

from chat.scoring import load_questions

from .conftest import corpora_path

QUESTIONS = Path(settings.BASE_DIR) / "bench" / "questions"
CORPORA = {"neuroml": "neuroml", "xarray": "xarray", "cooking": "based_cooking"}


def corpus_root(domain: str) -> Path:
    return Path(settings.BASE_DIR) / "docs" if domain == "klea-docs" else corpora_path("docs", CORPORA[domain])


@pytest.mark.parametrize("name", ["neuroml", "xarray", "cooking", "klea-docs"])
def test_every_evidence_is_a_verbatim_passage_of_its_file(name):
    questions = load_questions(QUESTIONS / f"{name}.json")
    assert len(questions) >= 30
    assert {q.domain for q in questions} == {name}
    assert len({q.question for q in questions}) == len(questions)
    root = corpus_root(name)
    missing = [(q.number, q.file) for q in questions
               if not (root / q.file).is_file() or q.evidence not in (root / q.file).read_text(encoding="utf-8")]
    assert missing == []


def test_off_topic_questions():
    questions = load_questions(QUESTIONS / "off-topic.json")
    assert len(questions) >= 20
    assert all(q.off_topic for q in questions)
