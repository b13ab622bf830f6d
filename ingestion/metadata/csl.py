"""CSL-JSON libraries (an array of items, as Zotero, Mendeley and Better BibTeX export)
read into :class:`~ingestion.metadata.library.Record` values, each with the line of its
item, in one pass over the text.
"""

from __future__ import annotations

import json
import re

from .biblio.doi import normalize_doi
from .library import RECORD_FIELDS, LibraryError, Record, file_field, split_list, year_in

_TAG = re.compile(r"</?(?:i|b|em|strong|sup|sub|sc|span)\b[^>]*>", re.I)  # CSL rich-text markup


def csl_records(text: str, name: str) -> list[Record]:
    """Records of a CSL-JSON text (an array of items, as Zotero, Mendeley and Better
    BibTeX export). :raises LibraryError: naming the line."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LibraryError(f"{name}: line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(items, list):
        raise LibraryError(f"{name}: line 1: CSL-JSON is an array of items, got a JSON {type(items).__name__}")
    records, seen = [], {}
    id_lines, item_lines = _id_lines(text), []

    def item_line(index: int) -> int:
        if not item_lines:
            item_lines.extend(_item_lines(text) or [1])
        return item_lines[index] if index < len(item_lines) else 1

    for index, item in enumerate(items):
        if not isinstance(item, dict) or not str(item.get("id") or "").strip():
            raise LibraryError(f"{name}: line {item_line(index)}: item {index + 1} has no \"id\"")
        key = str(item["id"])
        occurrences = id_lines.get(key, [])
        occurrence = 1 if key in seen else 0
        line = occurrences[occurrence] if len(occurrences) > occurrence else item_line(index)
        if key in seen:
            raise LibraryError(f"{name}: line {line}: duplicate item id '{key}' (first at line {seen[key]})")
        seen[key] = line
        files = item.get("file")
        records.append(Record(key, name, line, _csl_fields(item), file_field(files) if isinstance(files, str) else []))
    return records


_ID = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.)*")')


def _id_lines(text: str) -> dict[str, list[int]]:
    """Every string ``"id"`` value of the text -> the lines it is on, in one pass (one
    scan per item made a 20,000-item export take minutes)."""
    lines: dict[str, list[int]] = {}
    line, last = 1, 0
    for found in _ID.finditer(text):
        line += text.count("\n", last, found.start())
        last = found.start()
        try:
            value = json.loads(found.group(1))
        except ValueError:
            continue
        lines.setdefault(value, []).append(line)
    return lines


def _item_lines(text: str) -> list[int]:
    """The line of each top-level array element (depth-1 values), in one pass."""
    lines, depth, line, in_string, escaped = [], 0, 1, False, False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_string:
            escaped = (ch == "\\") and not escaped
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch in "[{":
            if depth == 1:
                lines.append(line)
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == '"':
            if depth == 1:
                lines.append(line)
            in_string = True
    return lines


def _plain(value) -> str:
    return " ".join(_TAG.sub("", str(value or "")).split())


def _csl_name(person) -> str:
    if not isinstance(person, dict):
        return _plain(person)
    if person.get("literal"):
        return _plain(person["literal"])
    parts = [person.get("given"), person.get("dropping-particle"), person.get("non-dropping-particle"),
             person.get("family")]
    name = " ".join(_plain(p) for p in parts if p)
    return f"{name}, {_plain(person['suffix'])}" if person.get("suffix") and name else name


def _cslyear_in(issued) -> int | None:
    if isinstance(issued, dict):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            try:
                return int(parts[0][0])
            except (TypeError, ValueError):
                pass
        return year_in(str(issued.get("raw") or issued.get("literal") or ""))
    return year_in(str(issued or ""))


def _csl_fields(item: dict) -> dict:
    out: dict = {}
    title = _plain(item.get("title"))
    if title:
        out["title"] = title
    authors = [n for n in (_csl_name(p) for p in item.get("author") or [] if p) if n]
    if authors:
        out["authors"] = authors
    year = _cslyear_in(item.get("issued"))
    if year:
        out["year"] = year
    journal = _plain(item.get("container-title"))
    if journal:
        out["journal"] = journal
    doi = normalize_doi(str(item.get("DOI") or ""))
    if doi:
        out["doi"] = doi
    keywords = item.get("keyword")
    keywords = [_plain(k) for k in keywords] if isinstance(keywords, list) else split_list(_plain(keywords))
    if keywords:
        out["keywords"] = keywords
    collections = item.get("collections")
    collections = [_plain(c) for c in collections] if isinstance(collections, list) else split_list(_plain(collections))
    if collections:
        out["collections"] = collections
    abstract = _plain(item.get("abstract"))
    if abstract:
        out["abstract"] = abstract
    url = str(item.get("URL") or "")
    if url.startswith(("http://", "https://")):
        if "arxiv.org/abs/" in url:
            out["url_arxiv"] = url
        else:
            out["url_1"] = url
    return {key: out[key] for key in RECORD_FIELDS if key in out}
