"""How one answer is scored, and how scores add up (definitions in docs/evaluation.md).

Words: link targets and role names are removed first (``http(s)://...`` URLs, the
``<target>`` of a reST/MyST reference written as text, space, ``<target>`` in backquotes, role names such as
``{ref}`` or ``:py:func:`` before a backquote), because evidence is copied from source
markup while answers show the rendered text; then the text is NFKC-normalised and
case-folded, and every maximal run of letters and digits is a word (``[^\\W_]+``:
punctuation, Markdown marks, underscores and whitespace separate words, so
``keep_attrs`` is the two words ``keep`` and ``attrs``).
Citation markers such as ``[2]`` or ``[1, 3]`` are removed from answer text first.
Coverage of an evidence passage by a text: the share of the evidence's distinct words
that occur in the text; "in" means a coverage of at least :data:`EVIDENCE_COVERAGE`.
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from dataclasses import asdict, dataclass, field

EVIDENCE_COVERAGE = 0.8
IN_DOMAIN_COUNTS = ("routed_right", "evidence_in_answer", "file_cited", "evidence_in_references")
_WORD = re.compile(r"[^\W_]+")
_MARKUP = re.compile(
    r"https?://[^\s)>\]`]+"  # a URL
    r"|\s*<[^<>`\s]+>(?=`)"  # the target of `text <target>`
    r"|\{[\w:.-]+\}(?=`)|:[\w:.-]+:(?=`)"  # a MyST {role} or a reST :role:
)
_CITATION = re.compile(r"\[\d+(?:\s*[,;–-]\s*\d+)*\]")


def words(text: str) -> list[str]:
    """The normalised words of ``text``, in order (see the module docstring)."""
    return _WORD.findall(unicodedata.normalize("NFKC", _MARKUP.sub(" ", text)).casefold())


def strip_citations(text: str) -> str:
    """``text`` without citation markers (``[1]``, ``[1, 2]``, ``[2-4]``)."""
    return _CITATION.sub(" ", text)


def coverage(evidence: str, text: str) -> float:
    """Share (0..1) of the distinct words of ``evidence`` that occur in ``text``;
    0.0 when the evidence has no word."""
    wanted = set(words(evidence))
    if not wanted:
        return 0.0
    return len(wanted & set(words(text))) / len(wanted)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``; None when empty: the
    smallest value with at least q % of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Scored:
    """One question's outcome. In-domain questions fill the evidence and file fields;
    off-topic ones only ``refused``. ``status`` is the turn's ("complete", "failed", ...)."""

    question: str
    domain: str | None
    file: str | None
    status: str
    route: str
    routed: list[str]
    answer: str
    cited_files: list[str]
    ttft_ms: float | None
    total_ms: float
    answer_coverage: float | None = None
    references_coverage: float | None = None
    error: str = ""
    # The numbers the answer cites: an answer from the domains that cites none says that no
    # source answers ("No source in neuroml answers this question.", docs/pipeline.md).
    citations: list[int] = field(default_factory=list)

    @property
    def off_topic(self) -> bool:
        return self.domain is None

    @property
    def routed_right(self) -> bool:
        return self.route == "domains" and self.domain in self.routed

    @property
    def refused(self) -> bool:
        """Not answered from any domain: refused, declined, general chat, or routed to
        domains whose sources were found not to answer (an answer citing no source)."""
        return self.status == "complete" and (self.route != "domains" or not self.citations)

    @property
    def evidence_in_answer(self) -> bool:
        return self.answer_coverage is not None and self.answer_coverage >= EVIDENCE_COVERAGE

    @property
    def evidence_in_references(self) -> bool:
        return self.references_coverage is not None and self.references_coverage >= EVIDENCE_COVERAGE

    @property
    def file_cited(self) -> bool:
        return self.file in self.cited_files

    def outcome(self) -> str:
        """One line: "ok", "missed <measures>", "refused" or "answered (<route>: <domains>)"."""
        if self.off_topic:
            return "refused" if self.refused else f"answered ({self.route}: {', '.join(self.routed)})"
        missed = [name for name in IN_DOMAIN_COUNTS if not getattr(self, name)]
        return "missed " + ", ".join(missed) if missed else "ok"

    def as_dict(self) -> dict:
        data = asdict(self)
        for name in ("routed_right", "refused", "evidence_in_answer", "evidence_in_references", "file_cited"):
            data[name] = getattr(self, name)
        data["outcome"] = self.outcome()
        return data


def score_turn(question, result) -> Scored:
    """Score a finished turn (:class:`chat.pipeline.TurnResult`) against its
    :class:`~chat.scoring.questions.Question`."""
    answer = result.answer
    done = result.done
    references = [r for r in result.references if r.get("kind") == "document"]
    fatal = next((e for e in result.errors if e.fatal), None)
    text = answer.text if answer else ""
    scored = Scored(
        question=question.question,
        domain=question.domain,
        file=question.file,
        status=done.status if done else "failed",
        route=answer.route if answer else "",
        routed=list(answer.domains) if answer else [],
        answer=text,
        # A file counts as cited from the question's own domain only (names repeat across domains).
        cited_files=[r["file_name"] for r in references if r.get("domain") == question.domain],
        ttft_ms=done.ttft_ms if done else None,
        total_ms=done.total_ms if done else 0.0,
        error=f"{fatal.code}: {fatal.message}" if fatal else "",
        citations=list(answer.citations) if answer else [],
    )
    if not question.off_topic:
        scored.answer_coverage = round(coverage(question.evidence, strip_citations(text)), 4)
        scored.references_coverage = round(
            max((coverage(question.evidence, "\n".join(c["text"] for c in r["chunks"])) for r in references),
                default=0.0),
            4,
        )
    return scored


@dataclass
class Summary:
    """Counts over a group of scored questions (a domain, off-topic, or all in-domain)."""

    questions: int = 0
    failed: int = 0
    routed_right: int = 0
    evidence_in_answer: int = 0
    file_cited: int = 0
    evidence_in_references: int = 0
    refused: int = 0
    median_answer_chars: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p95_ms: float | None = None
    rates: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def summarise(scored: list[Scored]) -> Summary:
    """Counts, rates (count / questions, 4 decimals), median answer length in characters
    (answers that came from a domain) and time to first token p50/p95 (turns that sent one)."""
    summary = Summary(questions=len(scored))
    summary.failed = sum(s.status != "complete" for s in scored)
    names = ("refused",) if scored and all(s.off_topic for s in scored) else IN_DOMAIN_COUNTS
    for name in names:
        setattr(summary, name, sum(getattr(s, name) for s in scored))
        summary.rates[name] = round(getattr(summary, name) / len(scored), 4) if scored else 0.0
    lengths = [len(s.answer) for s in scored if s.route == "domains"]
    summary.median_answer_chars = statistics.median(lengths) if lengths else None
    ttft = [s.ttft_ms for s in scored if s.ttft_ms is not None]
    summary.ttft_p50_ms = percentile(ttft, 50)
    summary.ttft_p95_ms = percentile(ttft, 95)
    return summary
