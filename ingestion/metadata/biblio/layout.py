"""Text lines of a PDF page with font size and position, from pypdfium2 character boxes.

pdfium reports each character's box and text matrix. Characters are joined into the
segments pdfium separates with generated line breaks; segments on the same baseline
band (an author name and its superscript affiliation mark) are merged into one line.
Sizes come from glyph heights (the median height of capitals, digits and ascenders,
about 0.7 em), not from the font-size field, which many producers leave at 1 and scale
through the matrix. Positions are in the page's reading orientation, so rotated pages
(``/Rotate 270`` two-up scans) read like upright ones; lines printed in another
orientation (arXiv margin stamps) are flagged ``rotated``.
"""

from __future__ import annotations

import ctypes
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .textclean import clean_text

# Glyphs whose height is about the cap height (0.7 em): capitals, digits, ascenders.
_TALL = set("ABCDEFGHIKLMNOPRSTUVWXYZ0123456789bdfhkl")
# Glyphs that sit on the baseline without descenders (for the baseline estimate).
_ON_BASE = set("ABCDEFGHIKLMNOPRSTUVWXZ0123456789abcdehiklmnorstuvwxz")
# Raised characters that are affiliation or footnote marks when small.
_MARKS = set("*\u2217\u2020\u2021\u00a7\u00b6,;\u2016\u204e\u262f\u00a4")
HEADER_FRACTION = 0.1  # top/bottom share of the printed area that is header/footer


@dataclass
class _Char:
    ch: str
    u0: float = 0.0  # along the text direction
    u1: float = 0.0
    w0: float = 0.0  # across it, upwards
    w1: float = 0.0
    boxed: bool = False
    script: bool = False


@dataclass
class Line:
    """One printed line.

    ``text``: every character; ``plain``: superscripts removed (affiliation marks,
    footnote symbols), for bylines. ``size``: estimated font size in points.
    ``top``/``bottom``/``left``/``right``: points from the page's top-left corner in
    reading orientation. ``rotated``: printed across the page's text direction.
    """

    text: str
    plain: str
    size: float
    top: float
    bottom: float
    left: float
    right: float
    rotated: bool = False


@dataclass
class PageLayout:
    """The lines of one page in reading order (top to bottom, then left to right)."""

    width: float
    height: float
    lines: list[Line] = field(default_factory=list)

    @cached_property
    def _stats(self) -> tuple[float, list[Line], float, float]:
        """(body size, running-text lines, printed top, printed bottom)."""
        sizes: Counter = Counter()
        for line in self.lines:
            if not line.rotated:
                sizes[round(line.size * 2) / 2] += len(line.text)
        body = sizes.most_common(1)[0][0] if sizes else 0.0
        upright = [ln for ln in self.lines if not ln.rotated]
        running = [ln for ln in upright if abs(ln.size - body) <= 0.1 * body and len(ln.text) >= 40]
        top = min((ln.top for ln in upright), default=0.0)
        bottom = max((ln.bottom for ln in upright), default=0.0)
        return body, running, top, bottom

    def body_size(self) -> float:
        """The most common line size weighted by characters (the running text), points."""
        return self._stats[0]

    def band(self, line: Line) -> str:
        """``side`` (rotated, or small print beside every line of running text: a side
        column), ``header``, ``footer`` or ``body``: where a journal prints an article's
        own DOI, dates and citation line. Header and footer: the top and bottom 10 % of
        the page, or of the printed area for lines set smaller than the running text."""
        if line.rotated:
            return "side"
        body, running, top, bottom = self._stats
        small = line.size < 0.92 * body  # running heads and footers are set smaller
        if line.top < HEADER_FRACTION * self.height or small and line.top < top + HEADER_FRACTION * (bottom - top):
            return "header"
        if line.bottom > (1 - HEADER_FRACTION) * self.height or small and line.bottom > bottom - HEADER_FRACTION * (bottom - top):
            return "footer"
        if running and line.size <= 1.1 * body and not any(r.left < line.right and r.right > line.left for r in running):
            return "side"
        return "body"

    def rows(self) -> list[tuple[str, str]]:
        """(text, band) per printed row: lines on one baseline joined left to right (a
        running head spread over the page width), then side-column lines one by one."""
        rows: list[list[Line]] = []
        upright = [ln for ln in self.lines if self.band(ln) != "side"]
        for line in sorted(upright, key=lambda ln: (ln.top, ln.left)):
            if rows and abs(line.top - rows[-1][0].top) < 0.5 * line.size:
                rows[-1].append(line)
            else:
                rows.append([line])
        rows += [[ln] for ln in self.lines if self.band(ln) == "side"]
        out = []
        for row in rows:
            bands = {self.band(ln) for ln in row}
            band = next((b for b in ("side", "header", "footer") if b in bands), "body")
            out.append((" ".join(ln.text for ln in sorted(row, key=lambda ln: ln.left)), band))
        return out


def _frame(quarter: int, left: float, right: float, bottom: float, top: float) -> tuple[float, float, float, float]:
    """A PDF box (y up) in the reading frame of text running in direction ``quarter``
    (0 = +x, 1 = +y, 2 = -x, 3 = -y): (along start, along end, across low, across high)."""
    if quarter == 0:
        return left, right, bottom, top
    if quarter == 1:
        return bottom, top, -right, -left
    if quarter == 2:
        return -right, -left, -top, -bottom
    return -top, -bottom, left, right


def _read_chars(textpage) -> list[tuple[str, int, tuple[float, float, float, float] | None, bool]]:
    """(char, direction quarter, PDF box (l, r, b, t) or None, generated) per character."""
    out = []
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    matrix = pdfium_c.FS_MATRIX()
    for index in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage, index)
        ch = chr(code) if code else ""
        if pdfium_c.FPDFText_IsHyphen(textpage, index):
            ch = "-"
        generated = bool(pdfium_c.FPDFText_IsGenerated(textpage, index))
        if generated or ch in "\r\n" or not ch:
            out.append((ch, -1, None, True))
            continue
        pdfium_c.FPDFText_GetMatrix(textpage, index, matrix)
        quarter = round(math.atan2(matrix.b, matrix.a) / (math.pi / 2)) % 4
        pdfium_c.FPDFText_GetCharBox(textpage, index, left, right, bottom, top)
        out.append((ch, quarter, (left.value, right.value, bottom.value, top.value), False))
    return out


def _size(chars: list[_Char]) -> float:
    tall = [c.w1 - c.w0 for c in chars if c.ch in _TALL]
    if tall:
        return statistics.median(tall) / 0.7
    heights = [c.w1 - c.w0 for c in chars if c.ch.isalnum()] or [c.w1 - c.w0 for c in chars] or [0.0]
    return statistics.median(heights) / 0.5


def _mark_scripts(chars: list[_Char], size: float) -> None:
    """Flag superscripts: small characters raised above the line's baseline."""
    bases = [c.w0 for c in chars if c.ch in _ON_BASE]
    if not bases or size <= 0:
        return
    baseline = statistics.median(bases)
    for c in chars:
        raised = c.w0 > baseline + 0.25 * size
        if c.ch.isalnum():
            c.script = raised and (c.w1 - c.w0) < (0.6 if c.ch in _TALL else 0.4) * size
        elif c.ch in _MARKS:
            c.script = raised or c.ch not in ",;"


class _Segment:
    def __init__(self, quarter: int):
        self.quarter = quarter
        self.chars: list[_Char] = []

    def boxed(self) -> list[_Char]:
        return [c for c in self.chars if c.boxed and not c.ch.isspace()]

    def extent(self) -> tuple[float, float, float, float]:
        boxed = self.boxed()
        main = [c for c in boxed if not c.script] or boxed
        return (
            min(c.u0 for c in boxed),
            max(c.u1 for c in boxed),
            statistics.median(c.w0 for c in main),
            statistics.median(c.w1 for c in main),
        )


def _segments(chars) -> list[_Segment]:
    segments: list[_Segment] = []
    current: _Segment | None = None
    for ch, quarter, box, generated in chars:
        if ch in "\r\n" or (generated and ch != " "):
            current = None
            continue
        if generated:
            if current is not None:
                current.chars.append(_Char(" "))
            continue
        u0, u1, w0, w1 = _frame(quarter, *box)
        last = next((c for c in reversed(current.chars) if c.boxed), None) if current else None
        # A wide gap on one baseline separates columns (authors side by side).
        wide = last is not None and u0 - last.u1 > 2.5 * max(w1 - w0, last.w1 - last.w0)
        if current is None or current.quarter != quarter or wide:
            current = _Segment(quarter)
            segments.append(current)
        current.chars.append(_Char(ch, u0, u1, w0, w1, boxed=True))
    return [s for s in segments if s.boxed()]


def _merge(segments: list[_Segment]) -> list[_Segment]:
    """Join segments printed on the same line (pdfium breaks after superscripts)."""
    merged: list[_Segment] = []
    for segment in segments:
        boxed = segment.boxed()
        _mark_scripts(boxed, _size(boxed))
        if merged and merged[-1].quarter == segment.quarter:
            last = merged[-1]
            a0, a1, aw0, aw1 = last.extent()
            b0, b1, bw0, bw1 = segment.extent()
            overlap = min(aw1, bw1) - max(aw0, bw0)
            size = max(_size(last.boxed()), 1.0)
            if overlap > 0.5 * min(aw1 - aw0, bw1 - bw0) and -size < b0 - a1 < size:
                last.chars.append(_Char(" "))
                last.chars.extend(segment.chars)
                continue
        merged.append(segment)
    return merged


def _join(chars: list[_Char], keep_scripts: bool) -> str:
    text = "".join(c.ch if (keep_scripts or not c.script) else " " for c in chars)
    return clean_text(" ".join(text.split()))


def page_layout(page: pdfium.PdfPage) -> PageLayout:
    """The lines of ``page`` with sizes and positions (see the module docstring)."""
    chars = _read_chars(page.get_textpage())
    quarters = Counter(q for _, q, box, _ in chars if box is not None)
    main = quarters.most_common(1)[0][0] if quarters else 0
    x0, y0, x1, y1 = page.get_cropbox()
    u0, u1, w0, w1 = _frame(main, x0, x1, y0, y1)
    layout = PageLayout(width=abs(u1 - u0), height=abs(w1 - w0))
    for segment in _merge(_segments(chars)):
        boxed = segment.boxed()
        size = _size(boxed)
        _mark_scripts(boxed, size)
        text = _join(segment.chars, keep_scripts=True)
        if not text:
            continue
        # Position in the page's main frame, whatever this line's own direction.
        boxes = [_frame(main, *_unframe(segment.quarter, c)) for c in boxed]
        layout.lines.append(
            Line(
                text=text,
                plain=_join(segment.chars, keep_scripts=False),
                size=round(size, 2),
                top=round(max(w1, w0) - max(b[3] for b in boxes), 2),
                bottom=round(max(w1, w0) - min(b[2] for b in boxes), 2),
                left=round(min(b[0] for b in boxes) - min(u0, u1), 2),
                right=round(max(b[1] for b in boxes) - min(u0, u1), 2),
                rotated=segment.quarter != main,
            )
        )
    layout.lines.sort(key=lambda ln: (ln.rotated, round(ln.top / 3), ln.left))
    return layout


def _unframe(quarter: int, c: _Char) -> tuple[float, float, float, float]:
    """The PDF box (l, r, b, t) of a character stored in frame ``quarter``."""
    if quarter == 0:
        return c.u0, c.u1, c.w0, c.w1
    if quarter == 1:
        return -c.w1, -c.w0, c.u0, c.u1
    if quarter == 2:
        return -c.u1, -c.u0, -c.w1, -c.w0
    return c.w0, c.w1, -c.u1, -c.u0


def first_page_layout(pdf: pdfium.PdfDocument) -> PageLayout | None:
    """The layout of page one, or None for a PDF without pages."""
    if len(pdf) == 0:
        return None
    return page_layout(pdf[0])
