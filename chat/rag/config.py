"""RAGConfig and RetrievalStrategy: plain values, validated once, never mutated by a call.

Per-call overrides (``top_k``, ``rerank``) are resolved into a :class:`Effective` value
for that call only, so concurrent calls on one :class:`~chat.rag.RAG` cannot see each
other's overrides and ``rag.config`` stays as it was built.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from enum import Enum

DEFAULT_TEMPLATE = """Answer the question based on the context below.

Context:
{context}

Question: {question}

Answer:"""


class RetrievalStrategy(str, Enum):
    """How :meth:`chat.rag.Knowledge.search` builds its ranked lists.

    - ``BASIC``: one dense (pgvector) list for the question;
    - ``FUSION``: one dense list per rephrasing of the question (the question, its
      keyword-only form and its sub-clauses; :mod:`chat.rag.strategies`), fused by RRF;
    - ``HYBRID``: a dense list and a BM25 list for the question, fused by RRF.

    RRF: Cormack, Clarke & Buettcher 2009, weighted, k = 5 (:mod:`domains.retrieval.fusion`).
    """

    BASIC = "basic"
    FUSION = "fusion"
    HYBRID = "hybrid"

    @classmethod
    def coerce(cls, value: RetrievalStrategy | str) -> RetrievalStrategy:
        """:raises ValueError: naming the bad value and the allowed ones."""
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            allowed = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown retrieval strategy {value!r}; allowed: {allowed}") from None


@dataclass(frozen=True)
class RAGConfig:
    """Settings of a :class:`~chat.rag.RAG` pipeline (frozen: build a new one with
    :meth:`replace` to change it).

    Usage::

        config = RAGConfig(top_k=8, retrieval_strategy=RetrievalStrategy.HYBRID)
        RAGConfig.from_dict(config.to_dict()) == config   # True

    :param top_k: results retrieved per query (>= 1).
    :param min_score: results scoring below are dropped (scores in [0, 1]).
    :param max_context_tokens: budget of the context string, about 4 characters per
        token (:func:`chat.rag.context.estimate_tokens`).
    :param include_citations: False: results and packs carry no citations.
    :param retrieval_strategy: BASIC, FUSION or HYBRID (a string is accepted).
    :param rerank: call the reranker (when one is given) on the retrieved results.
    :param rerank_top_k: results kept after reranking.
    :param template: the user prompt; must contain ``{context}`` and ``{question}``.
    :param system_prompt: an optional system message.
    :param stream: a hint for callers (``query`` never streams; use ``stream``).
    :raises ValueError: a bound violated or a placeholder missing, naming the field.
    """

    top_k: int = 5
    min_score: float = 0.0
    max_context_tokens: int = 4000
    include_citations: bool = True
    retrieval_strategy: RetrievalStrategy = RetrievalStrategy.BASIC
    rerank: bool = False
    rerank_top_k: int = 3
    template: str = DEFAULT_TEMPLATE
    system_prompt: str | None = None
    stream: bool = False

    def __post_init__(self):
        object.__setattr__(self, "retrieval_strategy", RetrievalStrategy.coerce(self.retrieval_strategy))
        for name in ("top_k", "rerank_top_k", "max_context_tokens"):
            check_positive(name, getattr(self, name))
        if not 0.0 <= float(self.min_score) <= 1.0:
            raise ValueError(f"min_score must be in [0, 1], got {self.min_score!r}")
        for placeholder in ("{context}", "{question}"):
            if placeholder not in self.template:
                raise ValueError(f"template must contain {placeholder}")

    def replace(self, **changes) -> RAGConfig:
        """A copy with ``changes`` applied (validated like a new config)."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """Plain JSON values (the strategy as its string value)."""
        data = asdict(self)
        data["retrieval_strategy"] = self.retrieval_strategy.value
        return data

    @classmethod
    def from_dict(cls, data: dict) -> RAGConfig:
        """Unknown keys are ignored; missing keys take the defaults."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def check_positive(name: str, value) -> int:
    """:returns: ``value``. :raises ValueError: not an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class Effective:
    """The values one call runs with: the config's, with that call's overrides."""

    top_k: int
    rerank: bool
    strategy: RetrievalStrategy

    @classmethod
    def of(cls, config: RAGConfig, top_k: int | None = None, rerank: bool | None = None) -> Effective:
        """:raises ValueError: a ``top_k`` override below 1."""
        return cls(
            top_k=config.top_k if top_k is None else check_positive("top_k", top_k),
            rerank=config.rerank if rerank is None else bool(rerank),
            strategy=config.retrieval_strategy,
        )
