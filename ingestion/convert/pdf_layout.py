"""Reading order and paragraphs of a PDF page from its text lines (no layout model).

Reading order is a recursive XY-cut (Nagy & Seth 1984) that tries vertical cuts
(column gutters) before horizontal ones, so a two-column body is read column by
column while full-width titles, abstracts and captions stay where they are. A
horizontal cut needs a gap wider than normal line spacing, otherwise the aligned
baselines of two columns would interleave them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import median

from .pdf_lines import PDFIUM_HYPHEN, Line
from .textclean import BULLET

# Minimum width of a column gutter, in points.
MIN_GUTTER = 6.0
# A horizontal cut needs a gap of at least this many times the median font size.
MIN_BAND_GAP = 0.9
_SENTENCE_END = re.compile(r"[.!?:]['\")\]]?$")
# A list item's marker: the bullet (:func:`.textclean.line_text` writes every bullet glyph
# so) or an item number ("2." or "2)").
_ITEM = re.compile(rf"^(?:{BULLET}|(\d{{1,2}})[.)])\s+\S")


def item_number(text: str) -> int | None:
    """The number of a numbered list item (``"2. Each observation"`` -> 2), 0 for a
    bulleted one, None for any other text."""
    match = _ITEM.match(text)
    if not match:
        return None
    return int(match.group(1)) if match.group(1) else 0


def _opens_item(first: Line, previous: Line, line: Line) -> bool:
    """Whether ``line`` opens a list item that the paragraph opened by ``first`` cannot
    hold: any bulleted one, a ``1.`` after a lead-in ending in ":", or the numbered item
    after the one ``first`` opens (``3.`` after ``2.``). A list item never runs on into
    the next, nor into the sentence that introduces the list."""
    number = item_number(line.text)
    if number is None:
        return False
    if number == 0 or (number == 1 and previous.text.endswith(":")):
        return True
    this = item_number(first.text)
    return this is not None and this > 0 and number == this + 1


@dataclass
class Paragraph:
    """Consecutive lines of one style within one reading-order region."""

    lines: list[Line] = field(default_factory=list)

    @property
    def text(self) -> str:
        return join_lines([line.text for line in self.lines])

    @property
    def size(self) -> float:
        return max(self.lines, key=lambda line: len(line.text)).size

    @property
    def bold(self) -> bool:
        return all(line.bold for line in self.lines)

    @property
    def estimated(self) -> bool:
        return any(line.estimated for line in self.lines)

    @property
    def page(self) -> int:
        return self.lines[0].page

    @property
    def top(self) -> float:
        return max(line.y1 for line in self.lines)


def _visible(text: str) -> int:
    """Characters that are not white space (nor pdfium's hyphen mark)."""
    return sum(1 for ch in text if not ch.isspace() and ch != PDFIUM_HYPHEN)


def line_spans(texts: list[str]) -> list[tuple[int, int]]:
    """Per line, the characters of :func:`join_lines` ``(texts)`` it holds, as a
    [start, end) range counted without white space (a hyphen dropped at a line end
    leaves its line)."""
    spans: list[tuple[int, int]] = []
    count, previous = 0, ""
    for text in texts:
        if spans and not previous.endswith(PDFIUM_HYPHEN) and _rejoins(previous, text):
            count -= 1
            spans[-1] = (spans[-1][0], count)
        spans.append((count, count + _visible(text)))
        count += _visible(text)
        previous = text
    return spans


def _rejoins(previous: str, text: str) -> bool:
    """Whether a word hyphenated at the end of ``previous`` goes on in ``text``."""
    return previous.endswith("-") and len(previous) > 1 and previous[-2].isalpha() and text[:1].islower()


def join_lines(texts: list[str]) -> str:
    """Join line texts with spaces, re-joining words hyphenated across lines. Linear in
    the characters: the pieces are joined once (re-building the text at every line took
    9 s for a paragraph of 20,000 lines that merge_continued had re-joined)."""
    pieces: list[str] = []  # never an empty string: the text's last two characters are in the last two
    for text in texts:
        if pieces:
            end = ((pieces[-2] if len(pieces) > 1 else "") + pieces[-1])[-2:]
            if end.endswith(PDFIUM_HYPHEN) or _rejoins(end, text):
                pieces[-1] = pieces[-1][:-1]
                if not pieces[-1]:
                    pieces.pop()
            else:
                pieces.append(" ")
        if text:
            pieces.append(text)
    return "".join(pieces).replace(PDFIUM_HYPHEN, "")


def _gaps(intervals: list[tuple[float, float]], min_gap: float) -> list[tuple[float, float]]:
    """Empty stretches (start, end) of at least ``min_gap`` between merged intervals."""
    gaps: list[tuple[float, float]] = []
    intervals = sorted(intervals)
    end = intervals[0][1]
    for start, stop in intervals[1:]:
        if start - end >= min_gap:
            gaps.append((end, start))
        end = max(end, stop)
    return gaps


def _split(lines: list[Line], gaps: list[tuple[float, float]], key) -> list[list[Line]]:
    cuts = [(a + b) / 2 for a, b in gaps]
    parts: list[list[Line]] = [[] for _ in range(len(cuts) + 1)]
    for line in lines:
        index = sum(1 for cut in cuts if key(line) > cut)
        parts[index].append(line)
    return [part for part in parts if part]


def _gutters(lines: list[Line]) -> list[tuple[float, float]]:
    return _gaps([(line.x0, line.x1) for line in lines], MIN_GUTTER)


def _share_gutter(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    return any(max(a0, b0) < min(a1, b1) for a0, a1 in a for b0, b1 in b)


def xy_cut(lines: list[Line], font_size: float) -> list[list[Line]]:
    """Regions in reading order; each region's lines top to bottom, left to right.

    Bands that share a column gutter (a row of two section headings above the
    two columns they open) are read together, column by column.
    """
    if len(lines) <= 1:
        return [lines] if lines else []
    columns = _gutters(lines)
    if columns:
        parts = _split(lines, columns, key=lambda line: (line.x0 + line.x1) / 2)
        if len(parts) > 1:
            return [region for part in parts for region in xy_cut(part, font_size)]
    # Bands from the top: cut where no line covers a tall enough vertical gap.
    gaps = _gaps([(-line.y1, -line.y0) for line in lines], MIN_BAND_GAP * font_size)
    bands = _split(lines, gaps, key=lambda line: -(line.y0 + line.y1) / 2) if gaps else [lines]
    if len(bands) <= 1:
        return [_rows(lines)]
    groups: list[list[Line]] = []
    previous: list[tuple[float, float]] = []
    for band in bands:
        gutters = _gutters(band)
        if groups and previous and gutters and _share_gutter(previous, gutters):
            groups[-1].extend(band)
            previous = _gutters(groups[-1]) or gutters
        else:
            groups.append(list(band))
            previous = gutters
    if len(groups) == 1:
        parts = _split(groups[0], _gutters(groups[0]), key=lambda line: (line.x0 + line.x1) / 2)
        return [region for part in parts for region in xy_cut(part, font_size)] if len(parts) > 1 else [_rows(lines)]
    return [region for group in groups for region in xy_cut(group, font_size)]


def _rows(lines: list[Line]) -> list[Line]:
    """Top to bottom; lines sharing a baseline (within 0.4 x size) left to right."""
    ordered = sorted(lines, key=lambda line: -line.y0)
    rows: list[list[Line]] = []
    for line in ordered:
        if rows and abs(rows[-1][0].y0 - line.y0) <= 0.4 * max(line.size, 1.0):
            rows[-1].append(line)
        else:
            rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda line: line.x0)]


def _starts_paragraph(previous: Line, line: Line, right_edge: float) -> bool:
    size = max(previous.size, 1.0)
    tolerance = 0.25 * size if previous.estimated or line.estimated else 0.6
    if abs(previous.size - line.size) > tolerance or previous.bold != line.bold:
        return True
    if previous.y0 - line.y1 > 0.5 * size:
        return True  # more space than line spacing
    if line.y0 > previous.y0 + 0.4 * size:
        return True  # above the previous line: a new region within the row
    if line.x0 > previous.x0 + 0.7 * size and previous.x1 > right_edge - 2 * size:
        return True  # first-line indent after a full line
    return previous.x1 < right_edge - 3 * size and bool(_SENTENCE_END.search(previous.text))


def paragraphs(region: list[Line]) -> list[Paragraph]:
    """Group a region's ordered lines into paragraphs."""
    if not region:
        return []
    right_edge = max(line.x1 for line in region)
    out = [Paragraph([region[0]])]
    for previous, line in zip(region, region[1:]):
        if _starts_paragraph(previous, line, right_edge) or _opens_item(out[-1].lines[0], previous, line):
            out.append(Paragraph([line]))
        else:
            out[-1].lines.append(line)
    return out


@dataclass
class _Style:
    """What :func:`merge_continued` compares of a paragraph: :attr:`Paragraph.size`,
    ``bold`` and ``estimated``, and its first and last line's text."""

    size: float
    longest: int  # the characters of the line whose size is the paragraph's
    bold: bool
    estimated: bool
    first: str
    last: str

    @classmethod
    def of(cls, paragraph: Paragraph) -> _Style:
        longest = max(paragraph.lines, key=lambda line: len(line.text))
        return cls(longest.size, len(longest.text), paragraph.bold, paragraph.estimated,
                   paragraph.lines[0].text, paragraph.lines[-1].text)

    def followed_by(self, other: _Style) -> _Style:
        """The style of the two paragraphs re-joined (as :class:`Paragraph` computes it)."""
        size, longest = (other.size, other.longest) if other.longest > self.longest else (self.size, self.longest)
        return _Style(size, longest, self.bold and other.bold, self.estimated or other.estimated, self.first, other.last)


def _same_size(previous: _Style, paragraph: _Style) -> bool:
    """Whether two paragraphs are set in one size: within 0.6 pt on a text layer; on OCR
    pages, whose sizes are estimated from word heights (ingestion/convert/hocr.py), within
    a quarter of the larger, and any size when one is unknown (1.0: no letter of a known
    extent, as in "tion" or "ioms!") or when a word hyphenated at the end of the first
    goes on in the second (the estimate of a short tail such as "tion)." is 14 pt in a
    10 pt text)."""
    if not (previous.estimated or paragraph.estimated):
        return abs(previous.size - paragraph.size) <= 0.6
    if min(previous.size, paragraph.size) <= 1.0 or _rejoins(previous.last, paragraph.first):
        return True
    return abs(previous.size - paragraph.size) <= 0.25 * max(previous.size, paragraph.size)


def merge_continued(paragraphs: list[Paragraph]) -> list[Paragraph]:
    """Re-join paragraphs broken by a column or page break: the first does not end a
    sentence, the next starts in lower case, and both share a style (:func:`_same_size`).
    A word hyphenated across the break is joined (:func:`join_lines`): OCRed pages
    left "distributed comput-" and "ing." in two paragraphs when their estimated sizes
    differed by a point. Linear in the lines: the style of the paragraph being re-joined
    is kept as it grows (re-reading its lines at each step took 40 s for 20,000
    one-line paragraphs that all re-join)."""
    out: list[Paragraph] = []
    styles: list[_Style] = []
    for paragraph in paragraphs:
        style = _Style.of(paragraph)
        previous = styles[-1] if styles else None
        if (
            previous is not None
            and not _SENTENCE_END.search(previous.last)
            and style.first[:1].islower()
            and _same_size(previous, style)
            and previous.bold == style.bold
        ):
            out[-1].lines.extend(paragraph.lines)
            styles[-1] = previous.followed_by(style)
        else:
            out.append(Paragraph(list(paragraph.lines)))
            styles.append(style)
    return out


def page_paragraphs(lines: list[Line], font_size: float | None = None) -> list[Paragraph]:
    """Paragraphs of one page in reading order."""
    if not lines:
        return []
    size = font_size or median(line.size for line in lines)
    return [p for region in xy_cut(lines, size) for p in paragraphs(region)]
