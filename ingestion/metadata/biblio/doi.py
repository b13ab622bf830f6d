"""DOI normalisation and DOI detection in text.

A DOI is ``10.<registrant>/<suffix>`` (DOI Handbook, section 2.2): the registrant is 4-9
digits, the suffix any printable characters. Identity is case-insensitive (DOI Handbook
2.4), so :func:`doi_key` is what caches and comparisons use; the DOI itself keeps the
case it was printed in.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

DOI_RESOLVER = "https://doi.org/"

# Prefixes that only say "this is a DOI"; URL forms are percent-decoded once.
_URL_PREFIX = re.compile(r"^(?:https?://)?(?:(?:dx|www)\.)?doi\.org/", re.IGNORECASE)
_LABEL_PREFIX = re.compile(r"^(?:info:doi/|urn:doi:|doi\s*[:./]?\s*)", re.IGNORECASE)
_CORE = re.compile(r"10\.\d{4,9}/[^\s\x00-\x1f]+")
# Hyphen-like characters PDFs print inside DOIs; DOIs themselves use the ASCII hyphen.
_HYPHENS = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2212"), "-")
# A hyphen (or pdfium's end-of-line hyphen mark) at a line break: the DOI continues.
_BROKEN_LINE = re.compile(r"[-\u00ad\ufffe\x02]\s*\r?\n\s*")
_TRAILING = ".,;:'\"\u2019\u201d"
# Longer candidates are not DOIs (registered DOIs stay far below 300 characters); the cap
# also bounds the work a hostile text can cause.
MAX_DOI_CHARS = 300
_PAIRS = {")": "(", "]": "[", ">": "<", "}": "{"}


def normalize_doi(raw: str | None) -> str | None:
    """The bare DOI in ``raw`` (``10.xxxx/...``), or None when there is none.

    - Opening brackets and quotes before the DOI are ignored; ``doi:``, ``DOI``, ``info:doi/``, ``urn:doi:`` and ``https://doi.org/`` (also
      ``dx.doi.org``, ``http://``) prefixes are removed; a URL form is percent-decoded
      exactly once (``%28`` -> ``(``, while a decoded ``%`` stays).
    - Trailing ``.``, ``,``, ``;``, ``:`` and quotes are removed; a trailing ``)``, ``]``,
      ``>`` or ``}`` only when it is not balanced inside the DOI, so
      ``10.1016/0022-0000(85)90041-8`` stays whole and ``(doi:10.1/x)`` gives ``10.1/x``.
    - SICI DOIs keep their ``<``, ``>`` and ``;``:
      ``10.1002/(sici)1096-9861(19971020)387:2<167::aid-cne1>3.0.co;2-z``.
    - A DOI broken over a line after a hyphen is re-joined keeping the hyphen
      (``10.1038/s41586-\\n019-1666-5`` -> ``10.1038/s41586-019-1666-5``); typographic
      hyphens (U+2010..U+2013, U+2212) become ``-``; HTML entities are unescaped.
    - The case is kept; compare with :func:`doi_key`.

    :param raw: text that holds one DOI, e.g. ``"https://doi.org/10.1000/XYZ."``.
    :returns: the DOI, e.g. ``"10.1000/XYZ"``, or None.
    """
    if not raw:
        return None
    text = _BROKEN_LINE.sub("-", raw.strip().lstrip("([{<'\"\u201c\u2018 ")).translate(_HYPHENS)
    if "&" in text:
        text = html.unescape(text)
    url = _URL_PREFIX.match(text)
    if url:
        text = unquote(text[url.end():])
    else:
        text = _LABEL_PREFIX.sub("", text, count=1)
    match = _CORE.match(text.strip())
    if not match:
        return None
    doi = _trim(match.group(0))
    return doi if doi and len(doi) <= MAX_DOI_CHARS else None


def _trim(doi: str) -> str:
    """Trailing punctuation and unbalanced closing brackets removed, in linear time (the
    bracket counts are taken once and kept up to date)."""
    counts = {char: doi.count(char) for pair in _PAIRS.items() for char in pair}
    end = len(doi)
    while end:
        last = doi[end - 1]
        if last in _TRAILING:
            end -= 1
        elif last in _PAIRS and counts[_PAIRS[last]] < counts[last]:
            counts[last] -= 1
            end -= 1
        else:
            break
    doi = doi[:end]
    return doi if re.fullmatch(r"10\.\d{4,9}/.+", doi) else ""


def doi_key(doi: str) -> str:
    """The case-insensitive identity of a DOI: ``"10.1103/PhysRevA.66.014304"`` ->
    ``"10.1103/physreva.66.014304"``."""
    return doi.strip().lower()


def doi_url(doi: str) -> str:
    """``https://doi.org/<doi>`` with the DOI as written (``url_doi`` in the metadata map)."""
    return DOI_RESOLVER + doi


def quote_doi(doi: str) -> str:
    """The DOI percent-encoded once for a URL path; ``/`` stays (``<`` -> ``%3C``)."""
    return quote(doi, safe="/")


@dataclass(frozen=True)
class FoundDoi:
    """A DOI seen in text. ``labelled``: printed after ``doi``/``DOI`` or as a doi.org
    URL (an article prints its own DOI that way); ``start``: character offset."""

    doi: str
    labelled: bool
    start: int  # offset of the label (or the DOI) in the text searched

    def opens_statement(self, text: str) -> bool:
        """Is the DOI (or its label) the start of a line or sentence of ``text`` (as in
        "... Institute of Physics. DOI: 10.1063/1.2409490", or in brackets, "[DOI: ...]"),
        not inside a sentence ("as reported in https://doi.org/...", "in [doi:...]")?"""
        before = text[: self.start].rstrip(" \t")
        if before.endswith(("[", "(")):
            before = before[:-1].rstrip(" \t")
        return not before or before[-1] in "\n.;:|)]\u2022"


_DOI_CHARS = r"[^\s\x00-\x1f\"\u201c\u201d]"
_IN_TEXT = re.compile(
    r"(?P<label>(?:https?://)?(?:(?:dx|www)\.)?doi\.org/|\bdoi\b\s*[:.]?\s*)?"
    # a DOI cut after a hyphen at a line end continues on the next line
    rf"(?P<core>10\.\d{{4,9}}/(?:{_DOI_CHARS}*?[-\u00ad\ufffe\x02][ \t]*\r?\n\s*)*{_DOI_CHARS}+)",
    re.IGNORECASE,
)


def find_dois(text: str) -> list[FoundDoi]:
    """Every DOI in ``text`` in reading order, normalised, duplicates (by
    :func:`doi_key`) kept only at their first position.

    A DOI broken after a hyphen at a line end is re-joined (see :func:`normalize_doi`).
    """
    found: list[FoundDoi] = []
    seen: set[str] = set()
    for match in _IN_TEXT.finditer(text or ""):
        core = match.group("core")
        if match.group("label") and "doi.org" in match.group("label").lower():
            core = DOI_RESOLVER + core
        doi = normalize_doi(core)
        if doi and doi_key(doi) not in seen:
            seen.add(doi_key(doi))
            found.append(FoundDoi(doi, bool(match.group("label")), match.start()))
    return found
