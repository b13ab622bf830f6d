"""The value types of the Python API: search result items, citations, context packs
and answers. Plain dataclasses; ``to_dict``/``from_dict`` round-trip JSON values."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from domains.text import page_label

# Characters of a chunk shown in a citation's one-line rendering (``str(citation)``).
PREVIEW_CHARS = 100


@dataclass
class SearchResultItem:
    """One retrieved chunk, as :meth:`chat.rag.Knowledge.search` returns it.

    :param id: the chunk's id (as a string).
    :param text: the chunk text (what a reader sees; no heading chain).
    :param score: the engine's final score in [0, 1]: the fused score min-max
        normalised over the query's results, blended 0.9/0.1 with recency
        (docs/retrieval.md), so the best result scores about 1.
    :param metadata: the chunk's metadata (bibliographic fields, ``_`` keys dropped)
        plus ``source``, ``filename``, ``doc_id``, ``chunk_id``, ``store``, ``domain``,
        ``headings``, ``source_scores`` (per ranked list, for debugging) and, where the
        converter recorded them, ``pages`` ([first, last], PDFs), ``lines`` ([first,
        last]), ``offset`` (character offset in the file) and ``anchor`` (text sources).
    :param source: the path the document was ingested from.
    :param filename: the document's file name within its store.
    """

    id: str
    text: str
    score: float = 0.0
    metadata: dict = field(default_factory=dict)
    source: str = ""
    filename: str = ""

    def get(self, key: str, default=None):
        """Dict-style read of a field, for code written against dict results."""
        return getattr(self, key, default) if key in _ITEM_FIELDS else default

    def to_dict(self) -> dict:
        return asdict(self)


_ITEM_FIELDS = {f.name for f in fields(SearchResultItem)}


class SearchResults(list):
    """The items of one search, best first, with how the search went.

    ``retrieval_failed`` is True when a store could not be searched (``error`` says
    why; the items of the stores that answered are still here). An empty list with
    ``retrieval_failed`` False is a genuine empty match. ``queries``: the search
    queries that ran (several for FUSION); ``keywords``: the BM25 terms (HYBRID).
    """

    def __init__(self, items=(), *, retrieval_failed: bool = False, error: str = "",
                 queries: list[str] | None = None, keywords: list[str] | None = None):
        super().__init__(items)
        self.retrieval_failed = retrieval_failed
        self.error = error
        self.queries = list(queries or [])
        self.keywords = list(keywords or [])


@dataclass
class Citation:
    """A numbered source of an answer.

    :param id: the number the context and the answer use, e.g. ``"1"``.
    :param source: the label shown to readers (file name, else source path).
    :param text: the cited chunk text (at most 500 characters).
    :param score: the retrieval score in [0, 1].
    :param doc_id: the document's id; :param chunk_id: the chunk's id.
    :param offset: character offset of the chunk's first source line in a Markdown,
        reST or HTML file (None for PDFs and sources without provenance).
    ``metadata["pages"]``: [first, last] 1-based pages of a PDF chunk (docs/python-api.md).
    """

    id: str
    source: str
    text: str
    score: float = 0.0
    doc_id: str | None = None
    chunk_id: str | None = None
    offset: int | None = None
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Citation:
        names = {f.name for f in fields(cls)}
        return cls(**{"source": "", "text": "", **{k: v for k, v in data.items() if k in names}})

    def __str__(self) -> str:
        text = " ".join(self.text.split())  # one line per source: the chunk's line breaks become spaces
        preview = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."
        pages = page_label(self.metadata.get("pages"))
        return f"[{self.id}] {self.source}{', ' + pages if pages else ''}: {preview}"


def _sources_block(citations: list[Citation], line) -> str:
    return "\n\nSources:\n" + "\n".join(line(c) for c in citations)


@dataclass
class ContextPack:
    """Retrieval without generation: the context string and its citations.

    ``metadata`` keys: ``top_k`` (the effective value of this call), ``rerank``,
    ``reranked``, ``retrieval_strategy``, ``queries``, ``num_results``,
    ``num_citations``, ``retrieval_failed``, ``error``, ``elapsed_seconds``.
    """

    context: str
    citations: list[Citation] = field(default_factory=list)
    query: str = ""
    metadata: dict = field(default_factory=dict)

    @property
    def has_citations(self) -> bool:
        return bool(self.citations)

    def format_for_prompt(self, include_sources: bool = True) -> str:
        """The context, followed by a ``Sources:`` list (``  [1] file.md``) when
        ``include_sources`` and there are citations."""
        if not include_sources or not self.citations:
            return self.context
        return self.context + _sources_block(self.citations, lambda c: f"  [{c.id}] {c.source}")

    def to_dict(self) -> dict:
        return {**asdict(self), "citations": [c.to_dict() for c in self.citations]}

    @classmethod
    def from_dict(cls, data: dict) -> ContextPack:
        return cls(
            context=data.get("context", ""),
            citations=[Citation.from_dict(c) for c in data.get("citations", [])],
            query=data.get("query", ""),
            metadata=dict(data.get("metadata", {})),
        )


@dataclass
class RAGResult:
    """An answer with its citations.

    ``metadata``: the ContextPack keys plus ``backend``, ``model`` and ``cited`` (the ids
    of the citations the answer cites, in order of first citation).
    """

    answer: str
    citations: list[Citation] = field(default_factory=list)
    context_used: str = ""
    query: str = ""
    metadata: dict = field(default_factory=dict)

    @property
    def has_citations(self) -> bool:
        return bool(self.citations)

    def format_answer_with_citations(self) -> str:
        """The answer followed by ``Sources:`` and one ``  [1] file.md: text...`` line
        per citation; the bare answer when there are none."""
        if not self.citations:
            return self.answer
        return self.answer + _sources_block(self.citations, lambda c: f"  {c}")

    def to_dict(self) -> dict:
        return {**asdict(self), "citations": [c.to_dict() for c in self.citations]}

    @classmethod
    def from_dict(cls, data: dict) -> RAGResult:
        return cls(
            answer=data.get("answer", ""),
            citations=[Citation.from_dict(c) for c in data.get("citations", [])],
            context_used=data.get("context_used", ""),
            query=data.get("query", ""),
            metadata=dict(data.get("metadata", {})),
        )
