"""A document's DEFAULT metadata entry from what conversion found (title, front matter,
the PDF Info dictionary)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from domains.text import shortened
from ingestion.convert.base import ConvertedDocument

# A title longer than this is a heading or a paragraph taken for one (a 1.18 MB Markdown
# heading was stored whole in the document's metadata, shown in every reference).
TITLE_MAX_CHARS = 500
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
    metadata: dict = {"title": shortened(converted.title, TITLE_MAX_CHARS) or file_name}
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


# Tier order of ``_sources`` (ingestion.metadata.biblio): a fallback title from the converter
# counts as the "docling" tier and is listed in its place.
_TIER_ORDER = ("doi-service", "pdf-info", "docling", "layout-regex", "regex", "ocr")


def pdf_default_metadata(path: Path, converted: ConvertedDocument) -> dict:
    """The DEFAULT map entry of a PDF from the bibliographic cascade
    (:func:`ingestion.metadata.biblio.extract_bibliography`: DOI services, Info dict, layout,
    regex); when no tier finds a title, the title conversion found is used. For a scan,
    the layout and regex tiers read the OCR output of its first pages.

    :returns: the cascade's dict (title, authors, keywords, year, journal, doi, url_*,
        ``_metadata_complete``, ``_sources``).
    """
    from .biblio import extract_bibliography

    ocr = converted.metadata.get("ocr") or {}
    offline = converted.metadata.get("bibliography_tiers")  # from the conversion child
    if ocr.get("page_one"):
        entry = extract_bibliography(
            Path(path), first_pages_text=ocr.get("first_pages_text"), ocr_page_one=ocr["page_one"], offline=offline
        )
    else:
        entry = extract_bibliography(Path(path), offline=offline)
    if not entry.get("title"):
        info = converted.metadata.get("pdf_info") or {}
        stem = Path(path).stem
        if plausible_title(info.get("Title", ""), stem):
            entry["title"], tier = " ".join(info["Title"].split()), "pdf-info"
        else:
            entry["title"], tier = (converted.title, "docling") if converted.title else (stem, "")
        if tier and tier not in entry["_sources"]:
            entry["_sources"] = sorted({*entry["_sources"], tier}, key=_TIER_ORDER.index)
    return {"title": entry.pop("title"), **entry}


def default_metadata(path: Path, converted: ConvertedDocument, file_name: str) -> dict:
    """DEFAULT entry for any converted file: PDFs through :func:`pdf_default_metadata`."""
    if Path(path).suffix.lower() == ".pdf":
        return pdf_default_metadata(path, converted)
    return document_metadata(converted, file_name)
