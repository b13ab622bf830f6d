"""PDF text lines with boxes, font size and weight, read through pypdfium2 (no model):
the one reader of PDF text layers, for the converter (:mod:`ingestion.convert.pdf`) and
the bibliographic layout tier (:mod:`ingestion.metadata.biblio.layout`). OCR output
becomes the same :class:`Line` objects.

The characters come in content-stream order with their glyph boxes and styles
(:mod:`.pdf_chars`). Lines are runs of characters on one baseline without a jump backwards or a wide gap (a column
gutter), so two columns never share a line. Within a line, small characters raised
above its baseline (affiliation and footnote marks) are left out of ``plain``.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from statistics import median

import pypdfium2 as pdfium

from .pdf_chars import LINE_BREAKS, Style, read_chars, upright_frame
from .textclean import line_text

# pdfium marks a hyphen it found at a line end with U+0002.
PDFIUM_HYPHEN = "\x02"
# Glyphs about the cap height (0.7 em), and glyphs that sit on the baseline without a
# descender (for the baseline estimate of a line).
_TALL = set("ABCDEFGHIKLMNOPRSTUVWXYZ0123456789bdfhkl")
_ON_BASE = set("ABCDEFGHIKLMNOPRSTUVWXZ0123456789abcdehiklmnorstuvwxz")
# A gap this wide (in em) before a letter is a word space the text layer left out ("Problem.A
# Level", "Afundamental"); letters within a word sit under 0.3 em apart, glyph box to box.
_WORD_GAP = 0.35
# What an exponent is written with.
_EXPONENT = set("0123456789+-\u2212")
# An "=" glyph this many times taller than wide is a slash: TeX's math italic font sets "/"
# at the code of "=", and a text layer without a ToUnicode map reads the code ("1=mQ");
# an equals sign is wider than tall.
_SLASH_RATIO = 1.5
# A bar set under a "+" ("+" then "−" at the same place) makes "±" (fonts without the glyph).
_BARS = set("-\u2212_")
# Raised characters that are affiliation or footnote marks when small.
_MARKS = set("*\u2217\u2020\u2021\u00a7\u00b6,;\u2016\u204e\u262f\u00a4")


@dataclass
class Line:
    """One line of text.

    ``page``: 0-based page index. ``x0, y0, x1, y1``: the line's box in PDF points,
    origin bottom-left, y up, in the page's upright frame (a rotated page reads as if
    turned upright; a ``rotated`` line is measured in its own upright frame).
    ``size``: font size in points (character-weighted mode over the line), or an
    estimate from glyph heights when the font reports none (``estimated``);
    ``bold``: most letters are set in a bold face. ``plain``: ``text`` without raised
    small marks (superscript affiliation and footnote marks), for bylines; the same as
    ``text`` when not given. ``rotated``: printed across the page's text direction
    (margin stamps), kept only when asked for. ``ocr``: read by OCR from a page image
    (:mod:`.ocr`): ``size`` is estimated from word heights (and ``estimated``), ``bold`` is
    never set.
    """

    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    bold: bool
    text: str
    estimated: bool = False  # size guessed from glyph boxes (Type 3 fonts without a size)
    plain: str | None = None
    rotated: bool = False
    ocr: bool = False

    def __post_init__(self) -> None:
        if self.plain is None:
            self.plain = self.text

    @property
    def height(self) -> float:
        return self.y1 - self.y0


def _accent(ch: str) -> str:
    """The combining mark ``ch`` is: itself when combining, the mark of a spacing accent
    ("¨" -> U+0308, "´" -> U+0301), else ""."""
    if unicodedata.combining(ch):
        return ch
    spaced = unicodedata.normalize("NFKD", ch)
    return spaced[1] if len(spaced) == 2 and spaced[0] == " " and unicodedata.combining(spaced[1]) else ""


class _LineBuilder:
    def __init__(self, page: int, rotated: bool = False) -> None:
        self.page = page
        self.rotated = rotated
        self.lines: list[Line] = []
        self._reset()

    def _reset(self) -> None:
        self.chars: list[str] = []
        self.glyphs: list[tuple[int, float, float]] = []  # (index in chars, bottom, top)
        self.box: list[float] | None = None
        self.last_left = 0.0
        self.last_right = 0.0
        self.sizes: Counter = Counter()
        self.glyph_heights: list[float] = []
        self.bold_letters = 0
        self.letters = 0
        self.pending_space = False
        self.pending_mark: tuple[str, float, str] | None = None  # (mark, centre, glyph) waiting for its letter

    def continues(self, left: float, bottom: float, top: float, size: float) -> bool:
        """Whether a glyph at this box continues the current line."""
        if self.box is None:
            return True
        x0, y0, x1, y1 = self.box
        scale = max(size, 1.0)
        went_back = left < x1 - 0.5 * scale and left < self.last_left - 0.5
        if went_back or left - x1 > 1.5 * scale:
            return False  # next line or column, or a jump over a gutter; ligatures share a box
        middle = (bottom + top) / 2
        return y0 - 0.4 * scale <= middle <= y1 + 0.4 * scale

    def add(self, ch: str, left: float, right: float, bottom: float, top: float, style: Style) -> None:
        # Type 3 fonts may report a size near 0: estimate it from the glyph (caps ~0.7 em).
        size = style.size if style.size >= 1.0 else max(top - bottom, 1.0) / 0.7
        accent = _accent(ch)
        if accent and self.chars and self.continues(left, bottom, top, size):
            # An accent set as a glyph of its own ("Sch¨onhage", "fu ̈r"): it joins the letter it
            # stands over, before or after it, and the space the text layer put before it goes.
            self.pending_space = False
            centre = (left + right) / 2
            if self.last_left - 0.1 * size <= centre <= self.last_right + 0.1 * size:
                self.chars[-1] += accent
            else:
                self._place_pending()  # an accent after one over no letter (quotes set as two acutes)
                self.pending_mark = (accent, centre, ch)
            return
        if ch == "=" and top - bottom > _SLASH_RATIO * (right - left):
            ch = "/"  # TeX's math italic sets "/" at the code of "=" ("1=mQ" is 1/mQ)
        if ch in _BARS and self.chars and self.chars[-1] == "+" and self._under_last(left, right, top):
            self.chars[-1] = "\u00b1"  # "+" with a bar set under it: "±" ("11.21 +− 0.74")
            return
        if not self.continues(left, bottom, top, size):
            self.end()
        if self.pending_mark is not None:
            mark, centre = self.pending_mark[:2]
            if left - 0.1 * size <= centre <= right + 0.1 * size:
                ch += mark
                self.pending_mark = None
            else:  # over no letter (an accent used as an apostrophe or a quote): kept as it was set
                self._place_pending()
        if (self.chars and ch.isalpha() and left - self.last_right >= _WORD_GAP * size
                and (self.chars[-1].isalpha() or self.chars[-1] in ".,;:)")):
            self.pending_space = True
        if self.pending_space and self.chars:
            self.chars.append(" ")
        self.pending_space = False
        self.glyphs.append((len(self.chars), bottom, top))
        self.chars.append(ch)
        self.last_left, self.last_right = left, right
        self.box = (
            [left, bottom, right, top]
            if self.box is None
            else [min(self.box[0], left), min(self.box[1], bottom), max(self.box[2], right), max(self.box[3], top)]
        )
        if style.size >= 1.0:
            self.sizes[round(style.size * 2) / 2] += 1
        elif ch.isalpha():
            self.glyph_heights.append(top - bottom)
        if ch.isalpha():
            self.letters += 1
            self.bold_letters += style.bold

    def _under_last(self, left: float, right: float, top: float) -> bool:
        """Whether a glyph boxed ``left``-``right`` up to ``top`` is set under the last
        glyph, overstriking it: centred within its width, no higher than its lower quarter."""
        _, last_bottom, last_top = self.glyphs[-1]
        centre = (left + right) / 2
        return (self.last_left <= centre <= self.last_right
                and top <= last_bottom + 0.25 * (last_top - last_bottom))

    def _estimate(self) -> float:
        """Font size from the 75th percentile of letter heights (ascenders ~0.7 em)."""
        if not self.glyph_heights:
            return 1.0
        heights = sorted(self.glyph_heights)
        return round(heights[(3 * len(heights)) // 4] / 0.7 * 2) / 2

    def space(self) -> None:
        self.pending_space = True

    def _scripts(self, size: float) -> set[int]:
        """Indexes of raised small marks: superscript letters and digits, and marks
        such as * and daggers (commas and semicolons only when raised)."""
        bases = [bottom for i, bottom, _ in self.glyphs if self.chars[i] in _ON_BASE]
        if not bases or size <= 0:
            return set()
        baseline = median(bases)
        out = set()
        for i, bottom, top in self.glyphs:
            ch, raised = self.chars[i], bottom > baseline + 0.25 * size
            if ch.isalnum() and raised and top - bottom < (0.6 if ch in _TALL else 0.4) * size:
                out.add(i)
            elif ch in _MARKS and (raised or ch not in ",;"):
                out.add(i)
        return out

    def _exponents(self, size: float) -> set[int]:
        """Indexes before which a ``^`` goes: a raised run of digits after a digit on the
        baseline ("10" "−21" -> 10^−21, "2" "53" -> 2^53). A run that opens with "+" is an
        error bar over its subscript ("36" "+5" "−4"), left as it is."""
        bases = [bottom for i, bottom, _ in self.glyphs if self.chars[i] in _ON_BASE]
        if not bases or size <= 0:
            return set()
        baseline = median(bases)
        raised = {i for i, bottom, top in self.glyphs
                  if self.chars[i] in _EXPONENT and bottom > baseline + 0.25 * size and top - bottom < 0.6 * size}
        return {i for i in raised if i > 0 and i - 1 not in raised and self.chars[i - 1].isdigit()
                and self.chars[i] != "+" and any(self.chars[j].isdigit() for j in range(i, i + 2) if j in raised)}

    def _place_pending(self) -> None:
        """The pending accent, over no letter, as it was set."""
        if self.pending_mark is not None:
            self.chars.append(self.pending_mark[2])
            self.pending_mark = None

    def end(self) -> None:
        self._place_pending()
        size = self.sizes.most_common(1)[0][0] if self.sizes else self._estimate()
        exponents = self._exponents(size)
        text = line_text("".join(("^" + ch) if i in exponents else ch for i, ch in enumerate(self.chars)))
        if text and self.box is not None:
            bold = self.letters > 0 and self.bold_letters >= 0.9 * self.letters
            scripts = self._scripts(size)
            plain = line_text("".join(" " if i in scripts else ch for i, ch in enumerate(self.chars)))
            self.lines.append(
                Line(self.page, *self.box, size=size, bold=bold, text=text, estimated=not self.sizes,
                     plain=" ".join(plain.split()), rotated=self.rotated)
            )
        self._reset()


def _build(items: list, orientation, transform, page_index: int, rotated: bool) -> list[Line]:
    """The lines of the characters set in ``orientation``, measured by ``transform``."""
    builder = _LineBuilder(page_index, rotated=rotated)
    for item in items:
        if isinstance(item, str):
            builder.end() if item in LINE_BREAKS else builder.space()
            continue
        ch, x0, x1, y0, y1, style = item
        if style.orientation == orientation:
            builder.add(ch, *transform(x0, x1, y0, y1), style)
    builder.end()
    return builder.lines


def _upright(page: pdfium.PdfPage, items: list):
    """The orientations of ``items`` (:func:`.pdf_chars.read_chars`), the dominant one,
    the transform to its upright frame, that frame's height, and the unrotated page's
    width and height, in points."""
    orientations = Counter(item[5].orientation for item in items if not isinstance(item, str))
    width, height = page.get_size()
    if page.get_rotation() in (90, 270):
        width, height = height, width  # character boxes are in the unrotated page space
    dominant = next((o for o, _ in orientations.most_common() if o is not None), (1, 0, 0, 1))
    transform, frame_height = upright_frame(dominant, width, height)
    return orientations, dominant, transform, frame_height, width, height


def page_lines(page: pdfium.PdfPage, page_index: int, *, rotated: bool = False) -> tuple[list[Line], float]:
    """The text lines of one page in content-stream order (not yet reading order), and
    the page height in the frame the lines are measured in.

    Text in the page's dominant orientation is kept and measured upright; text in any
    other direction (margin stamps such as arXiv identifiers, rotated labels) is left
    out, or with ``rotated`` added after the upright lines, flagged ``rotated``.
    """
    items = read_chars(page)
    orientations, dominant, transform, frame_height, width, height = _upright(page, items)
    lines = _build(items, dominant, transform, page_index, rotated=False)
    if rotated:
        for other in (o for o in orientations if o is not None and o != dominant):
            lines += _build(items, other, upright_frame(other, width, height)[0], page_index, rotated=True)
    return lines, frame_height


def _frame_width(page: pdfium.PdfPage, frame_height: float) -> float:
    # Lines are measured upright; on a page set sideways the frame is turned.
    width, shown_height = page.get_size()
    return width if abs(frame_height - shown_height) < 1 else shown_height


def upright_page(page: pdfium.PdfPage, page_index: int) -> tuple[list[Line], float, float]:
    """:func:`page_lines` of one page with the width and height, in points, of the frame
    its lines are measured in (line boxes as fractions of the page divide by these)."""
    lines, height = page_lines(page, page_index)
    return lines, _frame_width(page, height), height


def upright_chars(page: pdfium.PdfPage) -> tuple[list, float, float]:
    """The page's characters as its lines are measured: in content-stream order, a str
    for a line break or space, else ``(char, left, right, bottom, top)`` in points in
    the upright frame of the dominant text direction (characters set in another
    direction are left out); with that frame's width and height, as :func:`upright_page`."""
    items = read_chars(page)
    _, dominant, transform, frame_height, _, _ = _upright(page, items)
    chars = [
        item if isinstance(item, str) else (item[0], *transform(*item[1:5]))
        for item in items
        if isinstance(item, str) or item[5].orientation == dominant
    ]
    return chars, _frame_width(page, frame_height), frame_height
