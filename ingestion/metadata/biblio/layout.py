"""Page one as printed lines for the layout tier: the lines of the one PDF line reader
(:func:`ingestion.convert.pdf_lines.page_lines`, rotated margin text included) placed
from the page's top-left corner, with fragments on one baseline joined (pdfium breaks a
line after a superscript: "Doe" "a,*" ", Marie-Claire van der Berg" "b" is one byline).
Lines printed across the page's text direction (arXiv margin stamps) are ``rotated``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

import pypdfium2 as pdfium

from ingestion.convert.pdf_lines import PDFIUM_HYPHEN, Line, page_lines
from ingestion.convert.textclean import clean_text

# Input caps against hostile PDFs (docs/security.md): a printed line is cut to this many
# characters, and the tiers read this many lines of page one (real pages print < 200
# lines of < 300 characters), so no pattern ever runs over an unbounded text.
MAX_LINE_CHARS = 1000
MAX_LINES = 1000
HEADER_FRACTION = 0.1  # top/bottom share of the printed area that is header/footer


@dataclass
class PrintedLine:
    """One printed line.

    ``text``: every character; ``plain``: superscripts removed (affiliation marks,
    footnote symbols), for bylines. ``size``: font size in points.
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

    height: float
    lines: list[PrintedLine] = field(default_factory=list)

    @cached_property
    def _stats(self) -> tuple[float, list[PrintedLine], float, float]:
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

    def band(self, line: PrintedLine) -> str:
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
        rows: list[list[PrintedLine]] = []
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


def _is_script(fragment: Line, line: Line) -> bool:
    """A fragment set small and raised above ``line``'s baseline (a superscript mark)."""
    return fragment.size < 0.8 * line.size and fragment.y0 > line.y0 + 0.25 * line.size


def _continues(last: Line, fragment: Line) -> bool:
    """The next fragment in stream order prints on the same line after ``last``: on its
    baseline band, and nearer than a column gap (2.5 line heights)."""
    if last.rotated != fragment.rotated:
        return False
    height = min(last.height, fragment.height)
    overlap = min(last.y1, fragment.y1) - max(last.y0, fragment.y0)
    return overlap > 0.5 * height and -max(last.size, 1.0) < fragment.x0 - last.x1 < 2.5 * max(height, 1.0)


def _joined(lines: list[Line]) -> list[list[Line]]:
    """Stream-order lines grouped into printed lines (fragments on one baseline)."""
    groups: list[list[Line]] = []
    for line in lines:
        if groups and _continues(groups[-1][-1], line):
            groups[-1].append(line)
        else:
            groups.append([line])
    return groups


def _text(value: str) -> str:
    return clean_text(" ".join(value.replace(PDFIUM_HYPHEN, "-").split()))[:MAX_LINE_CHARS]


def _printed(group: list[Line], height: float) -> PrintedLine:
    main = max(group, key=lambda line: (line.size, len(line.text)))
    plain = " ".join(" " if _is_script(f, main) else f.plain for f in group)
    return PrintedLine(
        text=_text(" ".join(f.text for f in group)),
        plain=_text(plain),
        size=round(main.size, 2),
        top=round(height - max(f.y1 for f in group), 2),
        bottom=round(height - min(f.y0 for f in group), 2),
        left=round(min(f.x0 for f in group), 2),
        right=round(max(f.x1 for f in group), 2),
        rotated=main.rotated,
    )


def page_layout(page: pdfium.PdfPage) -> PageLayout:
    """The printed lines of ``page`` with sizes and positions (see the module docstring)."""
    return lines_layout(*page_lines(page, 0, rotated=True))


def lines_layout(lines: list[Line], height: float) -> PageLayout:
    """The layout of one page's lines (stream order; from a text layer or from OCR,
    :mod:`ingestion.convert.ocr`) on a page ``height`` points high."""
    layout = PageLayout(height=height)
    layout.lines = [p for p in (_printed(g, height) for g in _joined(lines)) if p.text]
    layout.lines.sort(key=lambda ln: (ln.rotated, round(ln.top / 3), ln.left))
    del layout.lines[MAX_LINES:]
    return layout


def first_page_layout(pdf: pdfium.PdfDocument) -> PageLayout | None:
    """The layout of page one, or None for a PDF without pages."""
    if len(pdf) == 0:
        return None
    return page_layout(pdf[0])
