"""Repairs for text layers: broken ligatures, pdfium hyphen marks, control characters,
bullet glyphs."""

from __future__ import annotations

import re
import unicodedata

# TeX OT1 fonts put the ligatures at code points 11-15; text layers without a
# ToUnicode map hand them out as control characters ("e\x0bective" = "effective").
_OT1_LIGATURES = {"\x0b": "ff", "\x0c": "fi", "\x0d": "fl", "\x0e": "ffi", "\x0f": "ffl"}
_OT1 = re.compile(r"(?<=[A-Za-z])[\x0b-\x0f]|[\x0b-\x0f](?=[a-z])")
# Some publisher fonts map the "fi" ligature to "#": "simpli#ed", "#nd".
_HASH_FI = re.compile(r"(?<=[A-Za-z])#(?=[a-z])|(?<![\w#])#(?=[a-z]{2})")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd]")
# pdfium marks a hyphen at a line end with U+FFFE (or U+0002 through the raw API).
# Spaces up to the first line break, then any whitespace: "\s*\r?\n" let the first run take
# newlines too, and a hyphen before n newlines was tried n^2 ways (10,000: 2.7 s).
_LINE_END_HYPHEN = re.compile(r"(\w)[\ufffe\x02\u00ad][^\S\n]*\n\s*+(\w)")
_SPACES = re.compile(r"[ \t\u00a0\u2009\u202f]+")
# The space a converter put before punctuation (a run, as a whole: "\s+(...)" backtracked
# from every space of a run not followed by punctuation, 10,000 spaces 1.6 s).
SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<!\s)\s++(?=[.,;:!?)\]])")


# A list bullet as fonts set it: the Unicode bullets and squares, and the code a symbol font
# without a ToUnicode map hands out for its bullet (a C1 control such as U+0088, or a
# private-use code point).
BULLET = "\u2022"
_BULLETS = set("\u2022\u25cf\u25e6\u25aa\u25ab\u25a0\u25a1\u2023\u2219\u2043\u25cb\u25ba\u25b6\u27a2\u2713\u2714\u2756\u25c6\u25c7")
# C0 and C1 controls (pdfium's hyphen mark U+0002 only where it marks a line end) and
# private-use code points: symbol-font codes without a ToUnicode map, never readable text.
_LINE_JUNK = re.compile(r"[\x00\x01\x03-\x1f\x7f-\x9f\ue000-\uf8ff\ufffd]|\x02(?!$)")


def _bullet_glyph(ch: str) -> bool:
    return ch in _BULLETS or "\x80" <= ch <= "\x9f" or "\ue000" <= ch <= "\uf8ff"


def line_text(text: str) -> str:
    """One PDF text line made readable: ligatures repaired, NFKC, a bullet glyph opening
    the line (``"\\x88 Column headers"``, ``"\u25cf Item"``) written :data:`BULLET`,
    every other control and private-use character dropped (pdfium's hyphen mark U+0002
    stays at the line's end, where :func:`.pdf_layout.join_lines` needs it)."""
    text = unicodedata.normalize("NFKC", repair_ligatures(text)).strip()
    if len(text) > 2 and _bullet_glyph(text[0]) and text[1].isspace() and not _bullet_glyph(text[2]):
        text = BULLET + text[1:]  # (a run of glyphs is the dots of a plot, not a list)
    return _LINE_JUNK.sub("", text).strip()


def repair_ligatures(text: str) -> str:
    """TeX OT1 ligature codes between letters spelled out (``e\\x0bective`` -> ``effective``)."""
    return _OT1.sub(lambda m: _OT1_LIGATURES[m.group(0)], text)


def clean_text(text: str) -> str:
    """Ligatures repaired (``con\\x0cning`` -> ``confining``, ``simpli#ed`` ->
    ``simplified``, U+FB01 -> ``fi`` via NFKC), control characters dropped,
    pdfium's line-end hyphen marks turned into ``-``; line breaks are kept."""
    if not text:
        return ""
    text = repair_ligatures(text)
    text = _HASH_FI.sub("fi", text)
    text = text.replace("\ufffe", "-").replace("\u00ad", "")
    text = _CONTROL.sub("", text)
    text = "".join(
        unicodedata.normalize("NFKC", ch) if "\ufb00" <= ch <= "\ufb06" else ch for ch in text
    )
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.splitlines())


def page_text(raw: str) -> str:
    """pdfium page text made readable: line-end hyphenations joined (``appli-\\ncations``
    -> ``applications``), CRLF to LF, then :func:`clean_text`."""
    raw = (raw or "").replace("\r\n", "\n").replace("\r", "\n")
    raw = _LINE_END_HYPHEN.sub(r"\1\2", raw)
    return clean_text(raw)
