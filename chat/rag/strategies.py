"""What each :class:`~chat.rag.config.RetrievalStrategy` asks the retrieval engine for.

- BASIC: the question, dense list only;
- HYBRID: the question, dense + BM25 lists, fused by RRF;
- FUSION: dense lists for several rephrasings of the question, fused by RRF. The
  rephrasings are made without a model, deterministically (:func:`rephrasings`): a
  question with several sub-clauses ("How do I X, and what is Y?") is searched clause
  by clause (one embedding of the whole question is a blend that favours its dominant
  topic); a single-clause question is searched as written and in its keyword-only
  form. Each rephrasing contributes its top k (as in RAG-Fusion, Raudaschl 2023), so
  a chunk first for one clause is not outvoted by chunks that are second everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .config import RetrievalStrategy

# At most this many rephrasings are searched (each costs an embedding and a list).
MAX_REPHRASINGS = 4
# A sub-clause needs this many content words to be searched on its own.
MIN_CLAUSE_WORDS = 2
_QUESTION_WORDS = r"(?:how|what|which|who|whom|whose|where|when|why|is|are|was|were|do|does|did|can|could|should)"
# Clause boundaries: ? ! ; and a comma or a conjunction right before a question word.
# A boundary starts where a run of spaces starts, and no two quantifiers of it take the
# same spaces: tried from each space of a run, "\s*" then "\s+" cost the cube of its length
# (1,000 spaces in a question took 5 s).
_CLAUSE = re.compile(
    rf"(?:(?<!\s)\s+)?(?:[?!;]+|,\s+(?:(?:and|but|or|also)\s+)?(?={_QUESTION_WORDS}\b))\s*"
    rf"|(?<!\s)\s+(?:and|but|or|also)\s+(?={_QUESTION_WORDS}\b)\s*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w][\w.+#-]*[\w+#]|\w")
STOP_WORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "me my of on or our should so that the their them then there these they this those to was we were what "
    "when where which who whom whose why will with would you your also about please tell explain".split()
)


@dataclass(frozen=True)
class Plan:
    """The engine call of one strategy: queries, modes, fusion and list depth."""

    queries: list[str]
    modes: tuple[str, ...]
    depth: int | None = None  # None: the engine's default (max(50, k))


def keywords(text: str) -> list[str]:
    """The content words of ``text`` in order (stop words and punctuation dropped)."""
    return [w for w in _WORD.findall(text) if w.lower() not in STOP_WORDS]


def split_clauses(question: str) -> list[str]:
    """Every sub-clause of ``question`` in order, stripped of spaces, commas and full
    stops, empty ones dropped: "What does X do and what is its default?" -> ["What does
    X do", "what is its default"]."""
    return [p for p in (p.strip(" ,.") for p in _CLAUSE.split(question)) if p]


def clauses(question: str) -> list[str]:
    """The sub-clauses of ``question`` with at least MIN_CLAUSE_WORDS content words."""
    return [p for p in split_clauses(question) if len(keywords(p)) >= MIN_CLAUSE_WORDS]


def rephrasings(question: str) -> list[str]:
    """The FUSION queries for ``question`` (module docstring), distinct, at most
    MAX_REPHRASINGS.

    Example: "How do I bake sourdough bread, and what is the capital of Mongolia?"
    -> ["How do I bake sourdough bread", "what is the capital of Mongolia"].
    """
    question = " ".join(question.split())
    parts = clauses(question)
    if len(parts) < 2:
        keyword_form = " ".join(keywords(question))
        parts = [question, keyword_form]
    out: list[str] = []
    for part in parts:
        if part and part not in out:
            out.append(part)
    return out[:MAX_REPHRASINGS]


def plan(strategy: RetrievalStrategy, question: str, top_k: int) -> Plan:
    """The engine call for ``strategy``. :raises ValueError: an unknown strategy."""
    strategy = RetrievalStrategy.coerce(strategy)
    if strategy is RetrievalStrategy.BASIC:
        return Plan([question], ("vector",))
    if strategy is RetrievalStrategy.HYBRID:
        return Plan([question], ("vector", "bm25"))
    return Plan(rephrasings(question), ("vector",), depth=top_k)
