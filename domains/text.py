"""Text helpers shared by ingestion and retrieval."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

HEADING_SEPARATOR = " > "

_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"), None)
_SPACES = re.compile(r"\s+")
# Control characters other than white space, and lone surrogates: PostgreSQL refuses
# NUL, UTF-8 (and so the tokenizer) refuses lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


# What client text may not hold (refused, never stripped: docs/api.md): NUL, which
# PostgreSQL cannot store, and lone surrogates, which UTF-8 cannot encode.
_REFUSED = re.compile("[\x00\ud800-\udfff]")


# What shows nothing: white space, controls, and format characters (zero-width spaces
# and joiners, BOM, soft hyphen, bidi marks).
_BLANK_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


# The characters the chat page drops from everything it shows (KleaRender.visible,
# chat/static/chat/render.js; docs/security.md): bidi controls and invisible characters.
_MISLEADING = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def without_misleading(text: str) -> str:
    """``text`` without the bidi controls and invisible characters the chat page never
    shows: for the names the server itself gives out, such as a downloaded file's
    (``report\u202efdp.exe``, which a browser shows as ``reportexe.pdf``, is saved as
    ``reportfdp.exe``)."""
    return _MISLEADING.sub("", text)


def blank(text: str) -> bool:
    """True when ``text`` has no visible character (a question of only zero-width spaces
    is as empty as one of only spaces)."""
    return all(ch.isspace() or unicodedata.category(ch) in _BLANK_CATEGORIES for ch in text)


def refused(text: str) -> bool:
    """True when ``text`` holds a NUL character or a lone surrogate."""
    return _REFUSED.search(text) is not None


def check_refused(name: str, text: str, *, allow_blank: bool = True) -> str:
    """:returns: ``text``. :raises ValueError: ``"<name> contains a NUL character or a
    lone surrogate"``, or with ``allow_blank=False`` ``"<name> is empty (no visible
    character)"`` (the Python API's form of the HTTP API's ``bad_request``)."""
    if refused(text):
        raise ValueError(f"{name} contains a NUL character or a lone surrogate")
    if not allow_blank and blank(text):
        raise ValueError(f"{name} is empty (no visible character)")
    return text


def storable(value):
    """``value`` (JSON-like: dicts, lists, strings, numbers, ...) with NUL characters
    dropped and lone surrogates made U+FFFD in every string, keys included: PostgreSQL's
    text and jsonb refuse both, and a PDF whose Info Title held a NUL stopped the whole
    ingest run at its first write. Other values are returned as they are."""
    if isinstance(value, str):
        return _REFUSED.sub(lambda found: "" if found.group() == "\x00" else "\ufffd", value)
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(item) for item in value]
    return value


def strip_unsafe(text: str) -> str:
    """``text`` with NUL and other control characters and lone surrogates made spaces."""
    return _UNSAFE.sub(" ", text)


def normalize_text(text: str) -> str:
    """Normalise user or document text before embedding and keyword search.

    Soft hyphens, zero-width characters and the BOM are removed, no-break spaces become
    spaces, Unicode NFKC is applied and runs of white space collapse to one space.
    """
    text = text.translate(_INVISIBLE).replace("\u00a0", " ")
    text = unicodedata.normalize("NFKC", text)
    return _SPACES.sub(" ", text).strip()


def shortened(text: str, limit: int) -> str:
    """``text`` with its white space collapsed; longer than ``limit`` characters, it is cut
    at a word boundary (unless that would keep less than half) and ends with "…" (counted
    in ``limit``), so that a reader sees it was cut.

    :returns: str of at most ``limit`` characters.
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if text[len(cut)] != " ":  # the cut falls inside a word: leave the word out
        space = cut.rfind(" ")
        if space > limit // 2:
            cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def heading_chain(headings: Sequence[str]) -> str:
    """``["Results", "2.1 Neurons"]`` -> ``"Results > 2.1 Neurons"``."""
    return HEADING_SEPARATOR.join(h for h in headings if h)


def page_label(pages) -> str:
    """``[4, 4]`` -> ``"p. 4"``, ``[4, 5]`` -> ``"p. 4–5"``, None or ``[]`` -> ``""``."""
    if not pages:
        return ""
    first, last = pages[0], pages[-1]
    return f"p. {first}" if first == last else f"p. {first}–{last}"


def indexed_text(headings: Sequence[str], text: str) -> str:
    """What is embedded for a chunk: its heading chain on the first line, then the text."""
    chain = heading_chain(headings)
    return f"{chain}\n{text}" if chain else text
