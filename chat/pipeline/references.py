"""The reference material and the reference list of an answer (never built by a model).

The material the answer model reads is the retrieved documents, numbered 1..n by
:func:`domains.retrieval.serialize_reference_material`, followed by the turn's tool
results as sources n+1..n+m (:func:`with_tool_results`)::

    ## Tool results (live data)

    ### Source document 4/4: [channel_density (neuro-lab)]
    Tool call: channel_density {"channel": "Nav1.6"} on neuro-lab (domain neuro)
    Result:
    Nav1.6 density in the soma: 74 mS/cm2

A failed call reads ``Error (the call failed; there is no data):`` or ``Error (no
result in time; there is no data):`` instead of ``Result:``; a cut one reads
``Result (the first 2500 of 9000 characters):``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from chat.answers.material import Material
from domains.retrieval import Source, page_span, serialize_reference_material
from domains.text import page_label

_URL_KEY = re.compile(r"^url(?:_(.+))?$")


def _authors(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if str(v).strip()]
    return [str(value)] if value not in (None, "") else []


def _year(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def labelled_urls(metadata: dict) -> list[dict]:
    """``url*`` keys as ``[{"label", "url"}]``: ``url_orcid`` -> label "orcid",
    ``url_doi`` -> "doi"; ``url`` and numbered ``url_1`` keys have label ""."""
    urls = []
    for key in sorted(metadata):
        match = _URL_KEY.match(key)
        if not match or not metadata[key]:
            continue
        suffix = match.group(1) or ""
        urls.append({"label": "" if suffix.isdigit() else suffix, "url": str(metadata[key])})
    return urls


def primary_url(metadata: dict) -> str:
    """The link to show first: the DOI's, else ``url``, else the first numbered one."""
    for key in ("url_doi", "url", "url_1"):
        if metadata.get(key):
            return str(metadata[key])
    if metadata.get("doi"):
        return f"https://doi.org/{metadata['doi']}"
    return ""


@dataclass
class ToolSource:
    """One tool call's result (or error) as a numbered source.

    ``status``: "ok" | "error" | "timeout"; ``text``: the result or the error text,
    already capped (``chars``: its length before the cap) and with secrets masked.
    """

    number: int
    domain: str
    server: str
    tool: str
    arguments: dict
    status: str
    text: str
    chars: int = 0
    truncated: bool = False

    @property
    def title(self) -> str:
        return f"{self.tool} ({self.server})"


_TOOL_HEADINGS = {
    "ok": "Result:",
    "error": "Error (the call failed; there is no data):",
    "timeout": "Error (no result in time; there is no data):",
}


def _tool_block(source: ToolSource, total: int) -> list[str]:
    arguments = json.dumps(source.arguments, ensure_ascii=False, sort_keys=True)
    heading = _TOOL_HEADINGS[source.status]
    if source.status == "ok" and source.truncated:
        heading = f"Result (the first {len(source.text)} of {source.chars} characters):"
    return [
        "",
        f"### Source document {source.number}/{total}: [{source.title}]",
        f"Tool call: {source.tool} {arguments} on {source.server} (domain {source.domain})",
        heading,
        source.text,
    ]


def with_tool_results(material, results: Sequence[ToolSource]) -> Material:
    """``material`` (documents numbered 1..n) followed by ``results`` numbered n+1..

    :param material: the retrieval's ReferenceMaterial (``text``, ``sources``) or None.
    :param results: tool results in call order (their ``number`` is replaced).
    """
    text = material.text if material else ""
    sources = list(material.sources) if material else []
    if not results:
        return Material(text, sources)
    total = len(sources) + len(results)
    if sources:
        # Re-render so the document headers count the tool results too ("1/4").
        chunks = [chunk for source in sources for chunk in source.chunks]
        text = serialize_reference_material(chunks, total=total).text
    lines = [text, ""] if text else []
    lines.append("## Tool results (live data)")
    for result in results:
        numbered = ToolSource(**{**result.__dict__, "number": len(sources) + 1})
        sources.append(numbered)
        lines.extend(_tool_block(numbered, total))
    return Material("\n".join(lines), sources)


def tool_reference_item(number: int, source: ToolSource) -> dict:
    """One tool entry of the ``references`` event (shape in chat/pipeline/events.py)."""
    return {
        "number": number,
        "kind": "tool",
        "domain": source.domain,
        "server": source.server,
        "tool": source.tool,
        "title": source.title,
        "arguments": dict(source.arguments),
        "status": source.status,
        "text": source.text,
        "truncated": source.truncated,
    }


def reference_item(number: int, source: Source | ToolSource) -> dict:
    """One entry of the ``references`` event (shape in chat/pipeline/events.py)."""
    if isinstance(source, ToolSource):
        return tool_reference_item(number, source)
    metadata = {k: v for k, v in source.metadata.items() if not k.startswith("_")}
    if source.chunks:  # chunk-level url keys equal on the cited chunks count too
        first = source.chunks[0].metadata
        for key, value in first.items():
            if key.startswith("url") and key not in metadata and all(
                c.metadata.get(key) == value for c in source.chunks
            ):
                metadata[key] = value
    # The pages of the passages the answer quotes: the union over every retrieved chunk of
    # a paper reads "p. 1-15", the whole paper (new-user trial).
    quoted = set(getattr(source, "quoted", None) or [])
    shown = [chunk for chunk in source.chunks if chunk.chunk_id in quoted] or source.chunks
    markers = [dict(marker) for marker in getattr(source, "markers", None) or []]
    # Cited as a whole only (an answer from its metadata): no page of it is the answer's.
    whole = bool(markers) and not quoted and all(marker["chunk_id"] is None for marker in markers)
    return {
        "number": number,
        "kind": "document",
        "domain": source.domain,
        "store": source.store,
        "file_name": source.file_name,
        "document_id": source.document_id,
        "title": str(metadata.get("title") or ""),
        "authors": _authors(metadata.get("authors")),
        "year": _year(metadata.get("year")),
        "journal": str(metadata.get("journal") or ""),
        "doi": str(metadata.get("doi") or ""),
        "url": primary_url(metadata),
        "urls": labelled_urls(metadata),
        "pages": None if whole else page_span(shown),
        "chunks": [chunk_item(chunk) for chunk in source.chunks],
        "quoted": list(getattr(source, "quoted", None) or []),
        "markers": markers,
    }


def chunk_item(chunk) -> dict:
    """One cited chunk of a document reference: text, heading chain and where it is
    (``pages`` [first, last] for PDFs; ``lines`` [first, last] and ``anchor`` for text
    sources; None / "" when unknown)."""
    provenance = chunk.provenance or {}
    return {
        "chunk_id": chunk.chunk_id,
        "headings": list(chunk.headings),
        "heading_chain": chunk.heading_chain,
        "text": chunk.text,
        "pages": provenance.get("pages"),
        "lines": provenance.get("lines"),
        "anchor": provenance.get("anchor", ""),
    }


def reference_list(cited: Sequence[Source | ToolSource]) -> list[dict]:
    """``cited`` in citation order -> items numbered 1..n."""
    return [reference_item(number, source) for number, source in enumerate(cited, start=1)]


def cited_where(ref: dict) -> str:
    """A document reference's file and where its cited chunks are, for one line of
    text: ``smith2019.pdf — 3 Results (p. 7); Abstract (p. 1)`` (each heading chain once,
    with the pages of its chunks in PDFs), ``smith2019.pdf, p. 3`` for chunks without
    headings."""
    chains: dict[str, list[int]] = {}
    for chunk in ref["chunks"]:
        span = chains.setdefault(chunk.get("heading_chain") or "", [])
        if chunk.get("pages"):
            span[:] = [min(span[0], chunk["pages"][0]), max(span[1], chunk["pages"][1])] if span else list(chunk["pages"])
    parts = [f"{chain} ({page_label(span)})" if chain and span else chain for chain, span in chains.items() if chain]
    loose = chains.get("")
    where = ref["file_name"] + (f", {page_label(loose)}" if loose else "")
    return where + (" — " + "; ".join(parts) if parts else "")


def source_line(ref: dict) -> str:
    """One reference as one line of text: ``[n] title (file — heading chain (p. 4–5)),
    authors (year). url`` for a document (:func:`cited_where`), ``[n] tool (server)
    {arguments}`` for a tool result."""
    if ref.get("kind") == "tool":
        return f"[{ref['number']}] {ref['title']} {json.dumps(ref['arguments'], ensure_ascii=False, sort_keys=True)}"
    where = cited_where(ref)
    line = f"[{ref['number']}] {ref['title']} ({where})" if ref["title"] else f"[{ref['number']}] {where}"
    if ref["authors"]:
        line += ", " + ", ".join(ref["authors"])
    if ref["year"]:
        line += f" ({ref['year']})"
    return line + (f". {ref['url']}" if ref["url"] else "")


def sources_text(references: Sequence[dict]) -> str:
    """The "Sources" list that ends an answer given as plain text or Markdown
    (the OpenAI-compatible endpoint, the MCP ``ask`` tool): ``"\\n\\nSources:\\n- [1] ..."``,
    "" without references."""
    if not references:
        return ""
    return "\n\nSources:\n" + "\n".join(f"- {source_line(ref)}" for ref in references)
