"""A document's DEFAULT metadata entry from what conversion found (title, front matter,
the PDF Info dictionary)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from .convert.base import ConvertedDocument

_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d|2100)\b")


def year_of(metadata: dict) -> int | None:
    """The publication year in ``metadata`` (``year`` or a ``date``), or None."""
    for key in ("year", "date"):
        value = metadata.get(key)
        if isinstance(value, int) and 1800 <= value <= 2100:
            return value
        if isinstance(value, (dt.date, dt.datetime)):
            return value.year
        if isinstance(value, str):
            match = _YEAR.search(value)
            if match:
                return int(match.group(1))
    return None


def document_metadata(converted: ConvertedDocument, file_name: str) -> dict:
    """DEFAULT entry for a converted text document: title, year, keywords, authors.

    :returns: dict with ``title`` always; ``year``, ``keywords``, ``authors`` when the
        source declares them (e.g. Hugo front matter ``date``/``tags``/``author``).
    """
    front = converted.metadata
    metadata: dict = {"title": converted.title or file_name}
    year = year_of(front)
    if year is not None:
        metadata["year"] = year
    tags = front.get("tags")
    if isinstance(tags, list) and tags:
        metadata["keywords"] = [str(t) for t in tags]
    authors = front.get("authors") or front.get("author")
    if authors:
        metadata["authors"] = [str(a) for a in authors] if isinstance(authors, list) else [str(authors)]
    return metadata


_INFO_TITLE_PREFIX = re.compile(r"^(microsoft (word|powerpoint) - |untitled\b)", re.I)


def plausible_title(value: str, file_stem: str = "") -> bool:
    """A title a reader would accept: two words or more of letters, not the file name,
    not a word-processor placeholder ("Microsoft Word - draft.doc", "ipg1300180a")."""
    value = " ".join(str(value or "").split())
    words = [w for w in value.split() if sum(ch.isalpha() for ch in w) >= 2]
    return (
        len(words) >= 2
        and not _INFO_TITLE_PREFIX.match(value)
        and value.lower() != file_stem.lower()
        and not value.lower().endswith((".doc", ".docx", ".pdf", ".tex", ".dvi"))
    )


def pdf_default_metadata(path: Path, converted: ConvertedDocument) -> dict:
    """The DEFAULT map entry of a PDF: the Info-dict title when it is plausible, else
    the title conversion found (largest text of page one / docling's title item).

    The bibliographic cascade (DOI services, Info dict, layout, regex;
    ingestion.biblio.extract_bibliography) plugs in here.

    :returns: dict with ``title``, ``_metadata_complete`` (False) and ``_sources``.
    """
    info = converted.metadata.get("pdf_info") or {}
    if plausible_title(info.get("Title", ""), Path(path).stem):
        return {"title": " ".join(info["Title"].split()), "_metadata_complete": False, "_sources": ["pdf-info"]}
    title = converted.title or Path(path).stem
    return {"title": title, "_metadata_complete": False, "_sources": ["docling"] if converted.title else []}


def default_metadata(path: Path, converted: ConvertedDocument, file_name: str) -> dict:
    """DEFAULT entry for any converted file: PDFs through :func:`pdf_default_metadata`."""
    if Path(path).suffix.lower() == ".pdf":
        return pdf_default_metadata(path, converted)
    return document_metadata(converted, file_name)
