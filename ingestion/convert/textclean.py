"""Repairs for text layers: broken ligatures, pdfium hyphen marks, control characters."""

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
_LINE_END_HYPHEN = re.compile(r"(\w)[\ufffe\x02\u00ad]\s*\r?\n\s*(\w)")
_SPACES = re.compile(r"[ \t\u00a0\u2009\u202f]+")


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
