"""Citations from results: the default citation formatter."""

from __future__ import annotations

from collections.abc import Sequence

from .context import _field, item_label, item_metadata, item_score, item_text
from .results import Citation

# Characters of chunk text kept in a citation.
CITATION_TEXT_CHARS = 500


class DefaultCitationFormatter:
    """One :class:`Citation` per result, numbered from ``start_id``.

    Usage::

        citations = DefaultCitationFormatter().format(results, start_id=5)
        citations[0].id   # "5"

    A citation formatter's ``format(results, start_id=1)`` returns a list of Citations.
    """

    def format(self, results: Sequence, start_id: int = 1) -> list[Citation]:
        """:param results: dicts and/or result objects (lookup order in
        :mod:`chat.rag.context`); None items are skipped without using a number.
        :returns: citations with ids ``str(start_id)``, ``str(start_id + 1)``, ...;
        ``source`` = filename > source > "Source <n>"; ``chunk_id`` = item id >
        metadata chunk_id; ``doc_id`` = metadata doc_id."""
        citations: list[Citation] = []
        for item in results:
            if item is None:
                continue
            number = start_id + len(citations)
            metadata = item_metadata(item)
            chunk_id = _field(item, "id") or metadata.get("chunk_id")
            doc_id = metadata.get("doc_id")
            citations.append(
                Citation(
                    id=str(number),
                    source=item_label(item, number),
                    text=item_text(item)[:CITATION_TEXT_CHARS],
                    score=item_score(item),
                    doc_id=None if doc_id in (None, "") else str(doc_id),
                    chunk_id=None if chunk_id in (None, "") else str(chunk_id),
                    offset=metadata.get("offset"),
                    metadata=metadata,
                )
            )
        return citations
