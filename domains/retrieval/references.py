"""The reference material the answer model reads, and the numbered sources behind it.

Layout (docs/pipeline.md, "Reference material")::

    ## <domain>

    ### Source document 1/3: [paper.pdf]
    Metadata: title=... | authors=A, B | year=2021 | doi=...

      Chunk 1: Results > 2.1 Neurons (p. 4–5)
      Chunk metadata: section_url=...
    <chunk text>

A *source* is one document; sources are numbered 1..n across the whole material, in
the order they appear, and answers cite them as ``[n]``. Domains appear in the order
of their best chunk, files by their best chunk, chunks by score. File-level keys
(title, authors, keywords, year, journal, doi, and ``url*`` keys equal on every chunk
of the file) are printed once on the header; other keys stay on their chunk. Keys
starting with ``_`` and all scores are never printed. A PDF chunk's pages follow its
heading chain (``p. 4``, ``p. 4–5``), so the model can cite them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from domains.text import page_label

from .types import RetrievedChunk

FILE_KEYS = ("title", "authors", "keywords", "year", "journal", "doi")


@dataclass
class Source:
    """One numbered source document and the chunks of it that were retrieved."""

    number: int
    domain: str
    store: str
    file_name: str
    document_id: int
    metadata: dict = field(default_factory=dict)  # file-level keys only, never "_" keys
    chunks: list[RetrievedChunk] = field(default_factory=list)
    # The ids of the chunks an answer quotes, in answer order (set on the cited copy by
    # the answer core, chat.answers.compose.Composition.cited); [] = not known.
    quoted: list[int] = field(default_factory=list)
    # One {"chunk_id", "passages" (the quoted text, verbatim)} per marker [n] of the
    # answer, in answer order (set with ``quoted``); [] = not known.
    markers: list[dict] = field(default_factory=list)


@dataclass
class ReferenceMaterial:
    text: str
    sources: list[Source]

    def source_of(self, chunk_id: int) -> Source | None:
        """The source holding ``chunk_id``, or None."""
        for source in self.sources:
            if any(c.chunk_id == chunk_id for c in source.chunks):
                return source
        return None


def page_span(chunks: Sequence[RetrievedChunk]) -> list[int] | None:
    """The [first, last] page over the chunks that have pages, None when none has."""
    spans = [c.pages for c in chunks if c.pages]
    return [min(s[0] for s in spans), max(s[-1] for s in spans)] if spans else None


def _value(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _line(label: str, items: dict) -> str:
    return f"{label}: " + " | ".join(f"{k}={_value(v)}" for k, v in items.items())


def _file_level(chunks: Sequence[RetrievedChunk]) -> dict:
    first = chunks[0].metadata
    keys = [k for k in FILE_KEYS if first.get(k) not in (None, "", [])]
    keys += sorted(k for k in first if k.startswith("url") and first.get(k))
    return {k: first[k] for k in keys if all(c.metadata.get(k) == first[k] for c in chunks)}


def group_sources(results: Sequence[RetrievedChunk]) -> list[Source]:
    """Group chunks by document; number the documents 1..n in reference-material order."""
    domain_order: list[str] = []
    groups: dict[tuple[str, int], list[RetrievedChunk]] = {}
    for chunk in sorted(results, key=lambda c: -c.score):
        if chunk.domain not in domain_order:
            domain_order.append(chunk.domain)
        groups.setdefault((chunk.domain, chunk.document_id), []).append(chunk)
    sources: list[Source] = []
    for domain in domain_order:
        for (group_domain, document_id), chunks in groups.items():
            if group_domain != domain:
                continue
            sources.append(
                Source(
                    number=len(sources) + 1,
                    domain=domain,
                    store=chunks[0].store,
                    file_name=chunks[0].file_name,
                    document_id=document_id,
                    metadata=_file_level(chunks),
                    chunks=chunks,
                )
            )
    return sources


def serialize_reference_material(
    results: Sequence[RetrievedChunk], total: int | None = None
) -> ReferenceMaterial:
    """Render ``results`` in the layout above.

    :param results: retrieved chunks (any order; grouped and ordered here).
    :param total: the number of sources the headers count ("n/total") when the caller
        appends sources of its own after these (e.g. tool results); default: the
        number of documents here.
    :returns: ReferenceMaterial with the text and the numbered sources; empty text when
        there are no results.
    """
    sources = group_sources(results)
    total = len(sources) if total is None else total
    lines: list[str] = []
    current_domain = None
    for source in sources:
        if source.domain != current_domain:
            if lines:
                lines.append("")
            lines.append(f"## {source.domain}")
            current_domain = source.domain
        lines.append("")
        lines.append(f"### Source document {source.number}/{total}: [{source.file_name}]")
        if source.metadata:
            lines.append(_line("Metadata", source.metadata))
        for index, chunk in enumerate(source.chunks, start=1):
            lines.append("")
            heading = f"  Chunk {index}: {chunk.heading_chain}" if chunk.headings else f"  Chunk {index}"
            pages = page_label(chunk.pages)
            if pages:
                heading += f" ({pages})" if chunk.headings else f": {pages}"
            lines.append(heading)
            inline = {
                k: v
                for k, v in chunk.metadata.items()
                if not k.startswith("_") and k not in source.metadata and v not in (None, "", [])
            }
            if inline:
                lines.append("  " + _line("Chunk metadata", inline))
            lines.append(chunk.text)
    return ReferenceMaterial("\n".join(lines), sources)
