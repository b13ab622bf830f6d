"""Result shapes of the retrieval engine."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RetrievedChunk:
    """One chunk in a ranked result.

    ``score``: the final score in [0, 1] after fusion and the recency blend.
    ``source_scores``: per ranked list, e.g. {"docs:vector": 0.71, "docs:bm25": 5.1};
    for debugging only, never shown to the answer model.
    ``provenance``: where the text is in its source (shape: ``domains.models.Chunk``).
    """

    chunk_id: int
    text: str
    headings: list[str]
    metadata: dict
    file_name: str
    document_id: int
    store: str
    domain: str
    year: int | None = None
    score: float = 0.0
    source_scores: dict[str, float] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    @property
    def heading_chain(self) -> str:
        from domains.text import heading_chain

        return heading_chain(self.headings)

    @property
    def pages(self) -> list[int] | None:
        """[first, last] 1-based page of a PDF chunk, None for other sources."""
        return self.provenance.get("pages")


@dataclass
class RetrievalResult:
    """``retrieval_failed`` is True when a store could not be searched (``error`` says
    why, with the driver's message; ``failures``: one short "store:mode (domain d):
    ErrorClass" per failure, safe to show to users); an empty ``results`` with
    ``retrieval_failed`` False is a genuine empty match. ``dropped_filters``: filter
    field -> the domains that do not declare it (ignored there). ``lists_at_once``: the
    vector lists ran beside the BM25 lists on a second connection (side_lists.py)."""

    results: list[RetrievedChunk] = field(default_factory=list)
    retrieval_failed: bool = False
    error: str = ""
    keywords: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    dropped_filters: dict[str, list[str]] = field(default_factory=dict)
    lists_at_once: bool = False
