"""Running question sets through the real pipeline and reporting (docs/evaluation.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync

from chat.backends import get_backend
from chat.pipeline import TurnRequest, ask
from domains.models import Document, Domain

from .metrics import Scored, Summary, score_turn, summarise
from .questions import Question, QuestionFileError


def check_against_database(questions: Sequence[Question], domains: Sequence[Domain]) -> None:
    """Every question's domain is one of ``domains`` and its file is a document of that
    domain's stores.

    :raises QuestionFileError: listing every question that cannot be scored.
    """
    by_name = {d.name: d for d in domains}
    problems = []
    files: dict[str, set[str]] = {}
    for q in questions:
        if q.off_topic:
            continue
        where = f"{q.source}: question {q.number}"
        if q.domain not in by_name:
            known = ", ".join(sorted(by_name)) or "none"
            problems.append(f"{where}: domain {q.domain!r} does not exist or is inactive (active: {known})")
            continue
        if q.domain not in files:
            files[q.domain] = set(
                Document.objects.filter(store__domain=by_name[q.domain]).values_list("file_name", flat=True)
            )
        if q.file not in files[q.domain]:
            problems.append(f"{where}: file {q.file!r} is not a document of domain {q.domain!r}")
    if problems:
        raise QuestionFileError("\n".join(problems))


@dataclass
class Report:
    """Scored questions and their summaries: per domain (in question-file order),
    ``off_topic`` and ``overall`` (all in-domain questions)."""

    scored: list[Scored]
    domains: dict[str, Summary] = field(default_factory=dict)
    off_topic: Summary | None = None
    overall: Summary | None = None

    @classmethod
    def of(cls, scored: list[Scored]) -> Report:
        report = cls(scored)
        for name in dict.fromkeys(s.domain for s in scored if not s.off_topic):
            report.domains[name] = summarise([s for s in scored if s.domain == name])
        off = [s for s in scored if s.off_topic]
        report.off_topic = summarise(off) if off else None
        inside = [s for s in scored if not s.off_topic]
        report.overall = summarise(inside) if inside else None
        return report

    def as_dict(self) -> dict:
        return {
            "domains": {name: s.as_dict() for name, s in self.domains.items()},
            "off_topic": self.off_topic.as_dict() if self.off_topic else None,
            "overall": self.overall.as_dict() if self.overall else None,
            "questions": [s.as_dict() for s in self.scored],
        }

    def lines(self) -> list[str]:
        """The summary as a text table (counts and percentages)."""

        def count(summary: Summary, name: str) -> str:
            return f"{getattr(summary, name)}/{summary.questions} ({100 * summary.rates[name]:.0f}%)"

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.0f}"

        header = (f"{'group':<12} {'n':>4} {'routed':>14} {'evid. answer':>14} {'file cited':>14} "
                  f"{'evid. refs':>14} {'median chars':>12} {'ttft p50/p95 ms':>16}")
        out = [header]
        groups = [*self.domains.items()]
        if self.overall and len(self.domains) > 1:
            groups.append(("overall", self.overall))
        for name, s in groups:
            median = "-" if s.median_answer_chars is None else f"{s.median_answer_chars:.0f}"
            out.append(
                f"{name:<12} {s.questions:>4} {count(s, 'routed_right'):>14} {count(s, 'evidence_in_answer'):>14} "
                f"{count(s, 'file_cited'):>14} {count(s, 'evidence_in_references'):>14} {median:>12} "
                f"{ms(s.ttft_p50_ms) + '/' + ms(s.ttft_p95_ms):>16}"
            )
        if self.off_topic:
            s = self.off_topic
            out.append(f"off-topic: {count(s, 'refused')} refused; "
                       f"ttft p50/p95 {ms(s.ttft_p50_ms)}/{ms(s.ttft_p95_ms)} ms")
        failed = sum(s.status != "complete" for s in self.scored)
        if failed:
            out.append(f"failed turns: {failed}")
        return out


def evaluate(
    questions: Sequence[Question],
    domains: Sequence[Domain],
    *,
    backend: str | None = None,
    on_scored: Callable[[int, Scored], None] | None = None,
) -> Report:
    """Ask each question through the full pipeline (as the websocket does: all of
    ``domains`` allowed, no domain picked, no session) and score it.

    :param backend: a backend name (default ``KLEA_LLM_BACKEND``).
    :param on_scored: called with (1-based position, Scored) after each question.
    :raises QuestionFileError: see :func:`check_against_database` (before any question runs).
    :raises ValueError: an unknown backend name.
    """
    check_against_database(questions, domains)
    get_backend(backend)  # an unknown name fails before the first question
    scored = []
    for position, question in enumerate(questions, 1):
        request = TurnRequest(question.question, domains=list(domains))
        result = async_to_sync(ask)(request, backend=get_backend(backend))
        scored.append(score_turn(question, result))
        if on_scored:
            on_scored(position, scored[-1])
    return Report.of(scored)
