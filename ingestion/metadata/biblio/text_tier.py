"""The regex tier: fields from plain text of the first pages (no positions or sizes).

Used for what the tiers above left empty, and on its own for text that comes from
elsewhere (a converter's Markdown, OCR). Title, authors, DOI, year and journal are read
from the first ~3,000 characters, keywords from the first ~8,000.

- **Title**: a Markdown heading when the text has them; otherwise the title-like lines
  right above the first byline.
- **DOI**: only a DOI labelled ``doi``/``DOI``/doi.org that opens a line or sentence,
  or one alone on its line, outside reference entries and before any References
  heading (a cited work's DOI is not the article's).
"""

from __future__ import annotations

import re

from .doi import find_dois
from .fields import arxiv_id, is_citation_line, is_title_text, journal_from_line, keywords_from_lines, pick_year
from .layout_tier import REFERENCE_ENTRY, REFERENCES_HEADING, BYLINE_END, is_prose
from .names import parse_byline

HEAD_CHARS = 3000  # title, authors, DOI, year, journal
KEYWORD_CHARS = 8000  # keywords may follow a long abstract
_MARKDOWN_HEADING = re.compile(r"^#{1,3}\s+(.+?)\s*#*$")
_SECTION = re.compile(
    r"^(?:\d+\.?\s*)?(?:abstract|summary|introduction|background|contents|references|keywords)\b", re.IGNORECASE
)


def _lines(text: str) -> list[str]:
    """Non-empty lines; a line starting with ``,`` (a byline broken after a superscript)
    is joined to the one before."""
    out: list[str] = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if out and line[:1] in ",;":
            out[-1] = f"{out[-1]}{line}"
        else:
            out.append(line)
    return out


def _markdown_title(lines: list[str]) -> str | None:
    for line in lines:
        match = _MARKDOWN_HEADING.match(line)
        if match:
            heading = match.group(1).strip("*_ ")
            if not _SECTION.match(heading) and is_title_text(heading):
                return heading
    return None


_OPEN_END = re.compile(r"\b(?:of|in|and|for|the|a|an|on|to|with|from|by|at|its)$", re.IGNORECASE)


def _byline(line: str, common: set[str], previous: str = "") -> list[str] | None:
    """The names on ``line``, unless it is a title line that happens to look like one
    name ("Selective Pressure Analyses"): words the text also uses in lower case, or a
    line that continues a title ending in "of", "in", "and"..."""
    if len(previous.split()) >= 3 and _OPEN_END.search(previous.strip()):
        return None
    names = parse_byline(line)
    if names and len(names) == 1 and not re.search(r"\b[A-Z]\.", names[0]):
        words = [w.lower() for w in names[0].split() if len(w) >= 3]
        if words and sum(w in common for w in words) * 2 >= len(words):
            return None
    return names


def _title_and_authors(lines: list[str], common: set[str]) -> tuple[str | None, list[str]]:
    """Title lines right above the first byline that has some, and the names on the
    bylines that follow (affiliation lines skipped, stopping at the abstract)."""

    def byline(i: int) -> list[str] | None:
        return _byline(lines[i], common, lines[i - 1] if i else "")

    for index in range(min(len(lines), 40)):
        names = byline(index)
        if not names:
            continue
        above: list[str] = []
        for i in range(index - 1, max(-1, index - 8), -1):
            if not any(c.isalnum() for c in lines[i]) and not above:
                continue  # a rule printed between title and byline
            if not is_title_text(lines[i]) or byline(i):
                break
            above.insert(0, lines[i])
        if not above:
            continue
        for i in range(index + 1, min(len(lines), index + 12)):
            if BYLINE_END.match(lines[i]) or is_prose(lines[i]):
                break
            names.extend(n for n in byline(i) or [] if n not in names)
        return re.sub(r"[\s*\u2217\u2020\u2021]+$", "", " ".join(above)), names
    return None, []


def _labelled_doi(head: str) -> str | None:
    cut = len(head)
    offset = 0
    starts = []
    for line in head.split("\n"):
        starts.append((offset, line))
        if REFERENCES_HEADING.match(line) and cut == len(head):
            cut = offset
        offset += len(line) + 1
    for found in find_dois(head):
        line = next(text for start, text in reversed(starts) if start <= found.start)
        if found.start >= cut or REFERENCE_ENTRY.match(line):
            continue
        if found.labelled and found.opens_statement(head) or line.strip(" .") == found.doi:
            return found.doi
    return None


def text_fields(text: str) -> dict:
    """Fields found in ``text``: ``title``, ``authors``, ``doi``, ``year``, ``journal``,
    ``keywords`` and ``url_arxiv``, each only when found."""
    head = (text or "")[:HEAD_CHARS]
    lines = _lines(head)
    out: dict = {}
    title = _markdown_title(lines)
    common = set(re.findall(r"\b[a-z]{3,}\b", text or ""))  # words the text writes in lower case
    found_title, authors = _title_and_authors(lines, common)
    title = title or found_title
    if title:
        out["title"] = title
    if authors:
        out["authors"] = authors
    doi = _labelled_doi(head)
    if doi:
        out["doi"] = doi
    year = pick_year((line, "body") for line in lines)
    if year:
        out["year"] = year
    journal = next((j for j in (journal_from_line(ln) for ln in lines if is_citation_line(ln)) if j), None)
    if journal:
        out["journal"] = journal
    keywords = keywords_from_lines(_lines((text or "")[:KEYWORD_CHARS]))
    if keywords:
        out["keywords"] = keywords
    arxiv = arxiv_id(head)
    if arxiv:
        out["url_arxiv"] = f"https://arxiv.org/abs/{arxiv}"
    return out
