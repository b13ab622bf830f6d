"""The characters of a PDF page through pypdfium2, with their glyph boxes and styles: the
only module that reads pdfium's text API (:mod:`.pdf_lines` makes lines of them).

Each character belongs to a text object whose matrix gives the rendered font size and
the text direction; the font's name and flags say whether it is bold.
"""

from __future__ import annotations

import ctypes
import math
import re
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

# Font names that mark a bold face: "Taz-ExtraBold", "CMBX12" (TeX bold extended),
# "NimbusRomNo9L-Medi" (URW Times bold), "AdvOT19ee2aa8.B" (Advent bold suffix).
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|medi|cmbx|cmb\d|cmssbx|[.,-]b$|[.,-]bd$", re.I)
_FORCE_BOLD_FLAG = 1 << 18  # PDF font descriptor flag ForceBold
LINE_BREAKS = {"\r", "\n"}
# TeX OT1 ligature glyphs without a ToUnicode map come out as U+000B-U+000F: letters, not
# white space or line breaks (textclean.repair_ligatures turns them into ff, fi, ...).
_LIGATURE_CODES = {"\x0b", "\x0c", "\x0e", "\x0f"}
# Its "fl" at U+000D reads as a carriage return, not one of the line breaks pdfium writes
# ("in all \ravor sectors"; textclean.repair_ligatures spells it out).
_FL_CODE = "\r"
# Symbol fonts whose codes name other characters (no ToUnicode map, so pdfium reads the code
# as Latin-1): what each code is set as. Advent 3B2's maths font (APS, Elsevier, RSC papers:
# "36þ5" is 36+5, "z ¼ 0.09" is z = 0.09, "hðtÞ" is h(t)); the Math Pi fonts of AIP and
# APS papers of the 1990s-2000s ("~center-of-mass motion!" is "(...)", "@1,2#" is "[1,2]");
# the text face of Elsevier's Macmillan set, whose "fi" ligature reads "#" ("de#nitions"). One
# character each: callers index glyphs by character (NFKC makes U+FB01 "fi").
FONT_CODES = {
    "AdvP4C4E74": {"¼": "=", "ð": "(", "Þ": ")", "þ": "+", "½": "[", "f": "{", "g": "}", "\x01": "\u2212"},
    "Universal-GreekwithMathPi": {"~": "(", "!": ")", "@": "[", "#": "]", "$": "{", "%": "}",
                                  "^": "\u27e8", "&": "\u27e9"},
    "MathematicalPi-One": {"1": "+", "2": "\u2212", "3": "\u00d7", "5": "="},
    "MacmillanRoman": {"#": "\ufb01"},
}


@dataclass
class Style:
    """How a text object is set: font size in points (matrix applied), bold face."""

    size: float
    bold: bool
    # Text direction and glyph "up" as unit axis vectors (dx, dy, ux, uy); None when
    # the text is set at an angle that is not a multiple of 90 degrees.
    orientation: tuple[int, int, int, int] | None = (1, 0, 0, 1)
    # The font's entry of FONT_CODES: code as read -> character set.
    codes: dict[str, str] | None = None


def _axis(x: float, y: float) -> tuple[int, int] | None:
    norm = math.hypot(x, y)
    if norm == 0:
        return None
    x, y = x / norm, y / norm
    if max(abs(x), abs(y)) < 0.995:
        return None  # set at an angle
    return (round(x), round(y))


def _style_of(text_object, cache: dict, matrix, name_buffer, textpage, index: int) -> Style:
    key = ctypes.cast(text_object, ctypes.c_void_p).value
    style = cache.get(key)
    if style is not None:
        return style
    size = ctypes.c_float(0.0)
    pdfium_c.FPDFTextObj_GetFontSize(text_object, size)
    if size.value <= 0:
        size.value = pdfium_c.FPDFText_GetFontSize(textpage, index)
    scale, orientation = 1.0, (1, 0, 0, 1)
    if pdfium_c.FPDFPageObj_GetMatrix(text_object, matrix):
        scale = math.hypot(matrix.c, matrix.d) or 1.0
        # "Up" is the text direction turned 90 degrees counter-clockwise; the matrix's own
        # second column is mirrored in some sideways-typeset preprints.
        direction = _axis(matrix.a, matrix.b)
        orientation = (direction[0], direction[1], -direction[1], direction[0]) if direction else None
    font = pdfium_c.FPDFTextObj_GetFont(text_object)
    bold, codes = False, None
    if font:
        pdfium_c.FPDFFont_GetBaseFontName(font, name_buffer, len(name_buffer))
        name = name_buffer.value.decode("latin-1").split("+")[-1]
        # FPDFFont_GetWeight is unreliable for embedded Type 1 fonts (CMR10 reads 744).
        flags = pdfium_c.FPDFFont_GetFlags(font)
        bold = bool(_BOLD_NAME.search(name)) or bool(flags & _FORCE_BOLD_FLAG)
        codes = FONT_CODES.get(name)
    style = Style(size=float(size.value) * scale, bold=bold, orientation=orientation, codes=codes)
    cache[key] = style
    return style


def upright_frame(orientation: tuple[int, int, int, int], width: float, height: float):
    """A function mapping a page box to the upright frame of ``orientation``, and the
    frame's height: rotated pages (landscape tables, sideways typesetting) read upright."""
    dx, dy, ux, uy = orientation
    corners = [(0.0, 0.0), (width, 0.0), (0.0, height), (width, height)]
    xs = [x * dx + y * dy for x, y in corners]
    ys = [x * ux + y * uy for x, y in corners]
    x_shift, y_shift = -min(xs), -min(ys)

    def transform(left: float, right: float, bottom: float, top: float) -> tuple[float, float, float, float]:
        px = [left * dx + b * dy for b in (bottom, top)] + [right * dx + b * dy for b in (bottom, top)]
        py = [left * ux + b * uy for b in (bottom, top)] + [right * ux + b * uy for b in (bottom, top)]
        return min(px) + x_shift, max(px) + x_shift, min(py) + y_shift, max(py) + y_shift

    return transform, max(ys) - min(ys)


def read_chars(page: pdfium.PdfPage) -> list:
    """Per character in content-stream order: a line break or space as a str, else
    (char, left, right, bottom, top, style) with the box in unrotated page space; a
    character of a :data:`FONT_CODES` font is the one that font sets."""
    textpage = page.get_textpage()
    try:
        count = pdfium_c.FPDFText_CountChars(textpage)
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        refs = tuple(ctypes.byref(v) for v in (left, right, bottom, top))
        cache: dict = {}
        matrix = pdfium_c.FS_MATRIX()
        name_buffer = ctypes.create_string_buffer(256)
        items: list = []
        last_style = Style(10.0, False)
        for index in range(count):
            ch = chr(pdfium_c.FPDFText_GetUnicode(textpage, index))
            # OT1's "fl" is a glyph of the page (pdfium did not add it, it has a text object)
            fl = (ch == _FL_CODE and not pdfium_c.FPDFText_IsGenerated(textpage, index)
                  and bool(pdfium_c.FPDFText_GetTextObject(textpage, index)))
            if not fl and (ch in LINE_BREAKS or (ch.isspace() and ch not in _LIGATURE_CODES) or ch == "\x00"):
                items.append(ch)
                continue
            text_object = pdfium_c.FPDFText_GetTextObject(textpage, index)
            style = _style_of(text_object, cache, matrix, name_buffer, textpage, index) if text_object else last_style
            last_style = style
            if style.codes:
                ch = style.codes.get(ch, ch)
            pdfium_c.FPDFText_GetCharBox(textpage, index, *refs)
            items.append((ch, left.value, right.value, bottom.value, top.value, style))
    finally:
        textpage.close()
    return items


def page_char_count(page: pdfium.PdfPage) -> int:
    """Non-space characters of a page's text layer (the OCR pre-check measure)."""
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
    finally:
        textpage.close()
    return sum(1 for ch in text if not ch.isspace() and ch not in "\x00\x02")
