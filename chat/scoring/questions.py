"""Question files for ``manage.py evaluate`` (docs/evaluation.md).

A question file is a JSON array of objects with exactly these keys::

    {"question": "How do I resample to monthly means?",   # non-empty string
     "domain": "xarray",          # the domain that answers it; null: off-topic (must be refused)
     "file": "user-guide/time-series.md",   # the document that answers it (its file name in
                                            # the domain's stores, relative to the ingested folder)
     "evidence": "monthly means"}           # a verbatim passage of that file that answers it

Off-topic questions have ``domain``, ``file`` and ``evidence`` all null.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from domains.text import refused

from .metrics import words

KEYS = ("question", "domain", "file", "evidence")


class QuestionFileError(ValueError):
    """A question file that cannot be used; the message lists every problem found,
    each naming the file and the question's position (1-based)."""


@dataclass(frozen=True)
class Question:
    """One question; ``domain`` None = off-topic. ``source``/``number``: where it was read."""

    question: str
    domain: str | None
    file: str | None
    evidence: str | None
    source: str = ""
    number: int = 0

    @property
    def off_topic(self) -> bool:
        return self.domain is None


def _problems(item, where: str) -> list[str]:
    if not isinstance(item, dict):
        return [f"{where}: expected an object with keys {', '.join(KEYS)}, got {type(item).__name__}"]
    problems = []
    missing = [k for k in KEYS if k not in item]
    unknown = sorted(set(item) - set(KEYS))
    if missing:
        problems.append(f"{where}: missing key(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(KEYS)})")
    if missing:
        return problems
    question, domain, file, evidence = (item[k] for k in KEYS)
    if not isinstance(question, str) or not question.strip():
        problems.append(f"{where}: 'question' must be a non-empty string")
    elif refused(question):  # the chat's own rules (chat/parsing.py): the pipeline gets no other
        problems.append(f"{where}: 'question' contains a NUL character or a lone surrogate")
    elif len(question.strip()) > settings.KLEA_MAX_QUESTION_CHARS:
        problems.append(f"{where}: 'question' has {len(question.strip())} characters; the limit is "
                        f"{settings.KLEA_MAX_QUESTION_CHARS} (KLEA_MAX_QUESTION_CHARS)")
    if domain is None:
        if file is not None or evidence is not None:
            problems.append(f"{where}: an off-topic question (domain null) must have file and evidence null")
        return problems
    if not isinstance(domain, str) or not domain.strip():
        problems.append(f"{where}: 'domain' must be a domain name or null (off-topic)")
    if not isinstance(file, str) or not file.strip():
        problems.append(f"{where}: 'file' must be the answering file's name in the domain's stores")
    if not isinstance(evidence, str) or not words(evidence):
        problems.append(f"{where}: 'evidence' must be a passage of the file with at least one word")
    return problems


def parse_questions(data, source: str = "<data>") -> list[Question]:
    """Validate decoded JSON. :raises QuestionFileError: listing every problem."""
    if not isinstance(data, list) or not data:
        raise QuestionFileError(f"{source}: expected a non-empty JSON array of question objects")
    problems: list[str] = []
    for number, item in enumerate(data, 1):
        problems += _problems(item, f"{source}: question {number}")
    if problems:
        raise QuestionFileError("\n".join(problems))
    return [
        Question(item["question"].strip(), item["domain"], item["file"], item["evidence"], source, number)
        for number, item in enumerate(data, 1)
    ]


def load_questions(path: str | Path) -> list[Question]:
    """Read and validate one question file.

    :raises QuestionFileError: the file is missing or unreadable, not UTF-8 JSON (with
        line and column; also JSON nested too deeply), or has malformed questions (all of
        them listed; a question with a NUL character or a lone surrogate, or longer than
        KLEA_MAX_QUESTION_CHARS, is malformed).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QuestionFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionFileError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise QuestionFileError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise QuestionFileError(f"{path}: not valid JSON: nested too deeply") from None
    return parse_questions(data, str(path))
