"""A document's DEFAULT metadata from what conversion found (title, front matter)."""

from __future__ import annotations

import datetime as dt
import re

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
