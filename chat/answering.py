"""Question -> cited answer, on the extractive backend (classify, retrieve, compose)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from domains.models import Domain
from domains.retrieval import RetrievalResult, RetrievedChunk, retrieve

from .backends import extractive

_CITATION = re.compile(r"\[(\d+)\]")


@dataclass
class Reference:
    """A numbered source of an answer, built from stored metadata (never by a model)."""

    number: int
    file_name: str
    headings: list[str]
    title: str
    url: str
    store: str
    domain: str
    chunk_id: int
    text: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Answer:
    question: str
    text: str
    domains: list[str]
    references: list[Reference] = field(default_factory=list)
    retrieval: RetrievalResult | None = None
    route: str = "domains"  # domains | undefined


def _url(metadata: dict) -> str:
    for key in ("url_doi", "url", "url_1"):
        if metadata.get(key):
            return str(metadata[key])
    return ""


def renumber(text: str, sources: Sequence[RetrievedChunk], cited: list[int]) -> tuple[str, list[Reference]]:
    """Renumber citations 1..m in order of first citation and build the reference list."""
    mapping = {old: new for new, old in enumerate(cited, start=1)}
    text = _CITATION.sub(lambda m: f"[{mapping[int(m.group(1))]}]" if int(m.group(1)) in mapping else "", text)
    references = []
    for old in cited:
        chunk = sources[old - 1]
        references.append(
            Reference(
                number=mapping[old],
                file_name=chunk.file_name,
                headings=chunk.headings,
                title=str(chunk.metadata.get("title", "")),
                url=_url(chunk.metadata),
                store=chunk.store,
                domain=chunk.domain,
                chunk_id=chunk.chunk_id,
                text=chunk.text,
            )
        )
    return text, references


def answer_question(question: str, domains: Sequence[Domain] | None = None) -> Answer:
    """Answer ``question`` from ``domains`` (classified among the active ones when None)."""
    if domains is None:
        active = list(Domain.objects.filter(active=True).prefetch_related("stores"))
        domains = extractive.classify(question, active)
        if not domains:
            names = ", ".join(d.name for d in active) or "none configured"
            return Answer(
                question,
                f"This question does not match any of the available domains ({names}).",
                [],
                route="undefined",
            )
    retrieval = retrieve(question, domains)
    names = [d.name for d in domains]
    if not retrieval.results:
        reason = " (retrieval failed: " + retrieval.error + ")" if retrieval.retrieval_failed else ""
        return Answer(question, f"No source in {', '.join(names)} answers this question{reason}.", names, retrieval=retrieval)
    text, cited = extractive.compose_answer(question, retrieval.results)
    if not cited:
        return Answer(question, f"No source in {', '.join(names)} answers this question.", names, retrieval=retrieval)
    text, references = renumber(text, retrieval.results, cited)
    return Answer(question, text, names, references, retrieval)
