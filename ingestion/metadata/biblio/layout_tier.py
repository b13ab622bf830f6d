"""The layout-regex tier: title, authors, DOI, year, journal and links from the printed
lines of page one (see :mod:`.layout`).

- **Title**: the largest-font block of lines in the top 60 % of the page that reads as a
  title (banners such as "Open Access", journal lines, dates, URLs and affiliations are
  skipped); when nothing stands out by size, the block printed right above the byline.
- **Authors**: the bylines below the title (superscript marks already removed),
  skipping affiliation lines, until the abstract or running text starts.
- **DOI**: the article's own DOI is printed in the header, footer or side column, or
  labelled ``DOI:`` at the start of a line or sentence (under the abstract); a bare DOI
  in running text, a DOI inside a sentence or in a reference entry is a cited work and
  never taken.
"""

from __future__ import annotations

import re

from .doi import find_dois
from .fields import arxiv_id, is_citation_line, is_title_text, journal_from_line, pick_year, urls_in
from .layout import PageLayout, PrintedLine
from .names import parse_byline

TITLE_REGION = 0.6  # the title starts in the top 60 % of page one
BYLINE_REGION = 0.45  # bylines end within this share of the page below the title
BYLINE_END = re.compile(
    r"^\W*(?:abstract|summary|key\s*-?words?|introduction|received|submitted|a\s*b\s*s\s*t\s*r\s*a\s*c\s*t"
    r"|(?:\d+|[IVX]+)\.?\s+introduction)\b",
    re.IGNORECASE,
)
_FUNCTION_WORDS = re.compile(r"\b(?:the|of|and|to|in|is|we|that|for|this|with|are|by|on|an)\b", re.IGNORECASE)
REFERENCE_ENTRY = re.compile(r"^\s*(?:\[\d{1,3}\]|\d{1,3}\.\s+[A-Z]|\d{1,3}\s+[A-Z][\w'-]+,\s*[A-Z])")
REFERENCES_HEADING = re.compile(
    r"^\s*(?:\d+\.?\s*)?(?:references|bibliography|literature\s+cited|works\s+cited|references\s+and\s+notes)\s*$",
    re.IGNORECASE,
)


def is_prose(text: str) -> bool:
    """Running text: a long line with several function words."""
    return len(text.split()) >= 10 and len(_FUNCTION_WORDS.findall(text)) >= 2


def _overlaps(a: PrintedLine, left: float, right: float) -> bool:
    return a.left < right and a.right > left


def _blocks(lines: list[PrintedLine]) -> list[list[PrintedLine]]:
    """Runs of lines of one size printed directly below each other (a title over two
    lines); lines beside the run (the other half of a two-up page) do not break it."""
    blocks: list[list[PrintedLine]] = []
    used: set[int] = set()
    for i, first in enumerate(lines):
        if i in used:
            continue
        block = [first]
        used.add(i)
        for j in range(i + 1, len(lines)):
            if j in used or len(block) == 6:
                continue
            last, nxt = block[-1], lines[j]
            if nxt.top > last.bottom + 1.2 * last.size:
                break
            if not _overlaps(nxt, min(b.left for b in block), max(b.right for b in block)):
                continue
            if abs(nxt.size - first.size) > 0.12 * first.size:
                break
            block.append(nxt)
            used.add(j)
        blocks.append(block)
    return blocks


def block_text(block: list[PrintedLine]) -> str:
    """The lines of a block joined; a line-end hyphen after a letter joins without a
    space (a spaced dash, "a-Si:H - growth", is no hyphenation)."""
    text = ""
    for line in block:
        if text.endswith("-") and text[-2:-1].isalpha() and line.text[:1].islower():
            text += line.text
        else:
            text = f"{text} {line.text}" if text else line.text
    return re.sub(r"[\s*\u2217\u2020\u2021\u00a7]+$", "", text)


def _byline_below(lines: list[PrintedLine], block: list[PrintedLine]) -> bool:
    """Is one of the three lines under ``block`` (horizontally overlapping) a byline,
    before any other line of a title-like size?"""
    left, right, bottom = min(b.left for b in block), max(b.right for b in block), block[-1].bottom
    for line in [ln for ln in lines if ln.top >= bottom - 1 and _overlaps(ln, left, right)][:3]:
        if parse_byline(line.plain):
            return True
        if line.size >= 0.7 * block[0].size:
            return False
    return False


def find_title(layout: PageLayout) -> list[PrintedLine] | None:
    """The lines of the title block (see the module docstring), or None.

    Blocks above the first line of running text are preferred (an equation further down
    may be set in a bigger font), and among blocks at least 70 % of the biggest size the
    one with a byline under it (not a journal banner); a block that also reads as a name
    ("Tidy Data") counts only when printed well above body size.
    """
    upright = [ln for ln in layout.lines if layout.band(ln) != "side"]
    body = layout.body_size()
    blocks = []
    for block in _blocks(upright):
        text = block_text(block)
        if block[0].top > TITLE_REGION * layout.height or not is_title_text(text):
            continue
        if sum(c.isalpha() for c in text) < 8 or (parse_byline(text) and block[0].size < 1.3 * body):
            continue
        blocks.append(block)
    prose_top = min((ln.top for ln in upright if ln.size <= 1.1 * body and is_prose(ln.text)), default=layout.height)
    blocks = [b for b in blocks if b[0].top < prose_top] or blocks
    if not blocks:
        return None
    biggest = max(b[0].size for b in blocks)
    if biggest > 1.1 * body:
        # A journal name set big as a banner has no byline under it; the title has.
        signed = [b for b in blocks if b[0].size >= 0.7 * biggest and _byline_below(upright, b)]
        top = max(b[0].size for b in signed) if signed else biggest
        return next(b for b in (signed or blocks) if b[0].size >= 0.97 * top)
    for line in upright:  # nothing stands out: the block right above the first byline
        if parse_byline(line.plain):
            above = [b for b in blocks if b[-1].bottom <= line.top + 1]
            return above[-1] if above else None
    return None


def _byline_join(first: str, second: str) -> str:
    """Two byline lines as one: a name cut at a line-end hyphen joins without it before a
    small letter ("Bastiaan-" "ssen,") and keeps it before a capital ("Agyeman-" "Duah")."""
    if first.endswith("-") and first[-2:-1].isalpha() and second[:1].isalpha():
        return (first[:-1] if second[:1].islower() else first) + second
    return f"{first} {second}"


def find_authors(layout: PageLayout, title: list[PrintedLine]) -> list[str]:
    """Names on the bylines under the title (see the module docstring). A line that ends
    the bylines (the abstract, running text, "Received ...") counts only when it is
    printed in the bylines' column, not beside it. A name may run on to the next line
    (initials at the end of one line, the surname on the next; a line-end hyphen): a
    line that is no byline alone, or ends with a hyphen, is read again joined with the
    line under it, and kept alone when the join is no byline."""
    left, right = min(ln.left for ln in title), max(ln.right for ln in title)
    # Names may sit side by side wider than the title (one column per author).
    left, right = left - 0.4 * (right - left), right + 0.4 * (right - left)
    bottom = max(ln.bottom for ln in title)
    names: list[str] = []
    byline_size = None
    column = (min(ln.left for ln in title), max(ln.right for ln in title))
    # The lines above, when a name may run on from them: no byline alone, or a line-end hyphen.
    pending: list[PrintedLine] = []
    pending_text = ""

    def sized(line: PrintedLine) -> bool:
        return byline_size is None or abs(line.size - byline_size) <= 0.15 * byline_size

    def accept(lines: list[PrintedLine], found: list[str]) -> None:
        nonlocal byline_size, column
        if byline_size is None:
            byline_size, column = lines[0].size, (lines[0].left, lines[0].right)
        column = (min(column[0], *(ln.left for ln in lines)), max(column[1], *(ln.right for ln in lines)))
        names.extend(n for n in found if n not in names)

    def settle() -> None:
        """The pending lines taken alone (the next line did not continue them)."""
        found = parse_byline(pending_text) if pending else None
        if found:
            accept(pending, found)

    for line in layout.lines:
        if layout.band(line) == "side" or line.top < bottom - 1 or not _overlaps(line, left, right):
            continue
        if line.top > bottom + BYLINE_REGION * layout.height:
            break
        ends = BYLINE_END.match(line.text) or (names and is_prose(line.text))
        if ends and _overlaps(line, *column):
            break
        if ends or not sized(line):
            settle()
            pending, pending_text = [], ""
            continue
        lines, text = [line], line.plain
        if pending:
            joined = _byline_join(pending_text, line.plain)
            if parse_byline(joined):
                lines, text = [*pending, line], joined
            else:
                settle()
        found = parse_byline(text)
        if found and not text.endswith("-"):
            accept(lines, found)
            pending, pending_text = [], ""
        else:
            pending, pending_text = lines, text
    settle()
    return names


def own_doi(lines: list[tuple[str, str]]) -> str | None:
    """The article's DOI among page lines given as (text, band) in reading order:
    header/footer/side DOIs first, then a DOI labelled ``DOI``/doi.org that opens a
    line or sentence of the body; reference entries and everything after a References
    heading are skipped."""
    text = "\n".join(t for t, _ in lines)
    starts, offset = [], 0
    for t, _ in lines:
        starts.append(offset)
        offset += len(t) + 1
    cut = next((starts[i] for i, (t, _) in enumerate(lines) if REFERENCES_HEADING.match(t)), len(text))
    ranked = []
    for found in find_dois(text):
        index = max(i for i, s in enumerate(starts) if s <= found.start)
        line, band = lines[index]
        if found.start >= cut or REFERENCE_ENTRY.match(line):
            continue
        if band != "body":
            ranked.append((0, found.start, found.doi))
        elif found.labelled and found.opens_statement(text):
            ranked.append((1, found.start, found.doi))
    return min(ranked)[2] if ranked else None


def layout_fields(layout: PageLayout) -> dict:
    """Fields printed on page one: ``title``, ``authors``, ``doi``, ``year``,
    ``journal``, ``urls`` (list) and ``url_arxiv``, each only when found."""
    out: dict = {}
    banded = [(ln.text, layout.band(ln)) for ln in layout.lines]
    title = find_title(layout)
    if title:
        out["title"] = block_text(title)
        authors = find_authors(layout, title)
        if authors:
            out["authors"] = authors
    doi = own_doi(banded)
    if doi:
        out["doi"] = doi
    rows = layout.rows()
    year = pick_year(rows)
    if year:
        out["year"] = year
    edges = [t for t, band in rows if band != "body"]
    for text in edges + [t for t, band in rows if band == "body"]:
        journal = journal_from_line(text) if is_citation_line(text) else None
        if journal:
            out["journal"] = journal
            break
    urls = [u for t in edges for u in urls_in(t)]
    if urls:
        out["urls"] = list(dict.fromkeys(urls))
    arxiv = next((a for a in map(arxiv_id, edges) if a), None)
    if arxiv:
        out["url_arxiv"] = f"https://arxiv.org/abs/{arxiv}"
    return out
