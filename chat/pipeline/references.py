"""The reference list of an answer, built from stored metadata (never by a model)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from domains.retrieval import Source

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


def reference_item(number: int, source: Source) -> dict:
    """One entry of the ``references`` event (shape in chat/pipeline/events.py)."""
    metadata = {k: v for k, v in source.metadata.items() if not k.startswith("_")}
    if source.chunks:  # chunk-level url keys equal on the cited chunks count too
        first = source.chunks[0].metadata
        for key, value in first.items():
            if key.startswith("url") and key not in metadata and all(
                c.metadata.get(key) == value for c in source.chunks
            ):
                metadata[key] = value
    return {
        "number": number,
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
        "chunks": [
            {
                "chunk_id": chunk.chunk_id,
                "headings": list(chunk.headings),
                "heading_chain": chunk.heading_chain,
                "text": chunk.text,
            }
            for chunk in source.chunks
        ],
    }


def reference_list(cited: Sequence[Source]) -> list[dict]:
    """``cited`` in citation order -> items numbered 1..n."""
    return [reference_item(number, source) for number, source in enumerate(cited, start=1)]
