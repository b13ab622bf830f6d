"""Bibliographic questions ("Who wrote ...?", "In what year was ... published?", "Which
journal ...?") answered from a document's stored metadata, not from its text.

The authors, year, title, venue and DOI of a paper are in its metadata (the bibliography
cascade, docs/bibliography.md), often nowhere in a chunk: a byline is its own chunk or
none, the year is printed in a margin, and the nearest text about "authors" is the
acknowledgments. When the question asks for such a field and a cited document has it,
the answer is one reference line of that document's stored fields, nothing else::

    *In Search of an Understandable Consensus Algorithm*, Diego Ongaro and John Ousterhout, 2014 USENIX ATC, 2014. [1]

The document is the source whose title, authors, journal or file name share most of the
question's other words (ties: the better retrieved); with none shared, the best
retrieved source. A source without any of the asked fields is never used (a set of
documentation pages without authors answers "Who wrote jLEMS?" from its text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from .text import matches, terms

# The field a question asks for; each pattern names the field, not the document. Narrow
# on purpose: "How does the author prove it?", "When is the steam released?", "How do I
# set the title of a plot?" ask about the text, and are answered from it.
_PUBLISHED = r"(published|publish|written|write|appeared|appear|released|release|issued|presented|come\s+out)"
_DOCUMENT = r"(paper|article|document|book|report|thesis|study|publication|preprint|work)"
FIELDS = {
    "authors": re.compile(
        r"\bwho\s+(wrote|writes|authored|published|is\s+the\s+author|are\s+the\s+authors)\b"
        r"|\bauthors?(hip)?\s+(of|for)\b|\bwhich\s+authors\b|\bby\s+whom\b",
        re.I,
    ),
    "year": re.compile(
        rf"\b(when|(in\s+)?(what|which)\s+year)\s+(was|were|did|had|has)\b.*\b{_PUBLISHED}\b"
        r"|\bpublication\s+(year|date)\b|\byear\s+of\s+publication\b",
        re.I,
    ),
    "journal": re.compile(
        r"\b(which|what|in\s+which|in\s+what)\s+(journal|venue|conference|proceedings|magazine)\b"
        rf"|\bwhere\s+(was|were|did)\b.*\b{_PUBLISHED}\b",
        re.I,
    ),
    "title": re.compile(
        rf"\btitle\s+of\s+(the|this|that|its|his|her|their)\s+([\w'-]+\s+){{0,3}}?{_DOCUMENT}\b"
        rf"|\b{_DOCUMENT}'s\s+(full\s+)?title\b|^\s*what\s+is\s+the\s+(full\s+)?title\s*\??\s*$",
        re.I,
    ),
    "doi": re.compile(r"\b(what|which)\s+is\s+(the|its)\s+([\w'-]+\s+)?doi\b|\bdoi\s+(of|for)\b", re.I),
}
# Words that ask for a field or name the kind of document: they do not tell which document.
FIELD_WORDS = (
    "author authors authored authorship wrote write writes written writer published publish publication "
    "appeared released issued presented year date journal venue conference proceedings magazine title titled "
    "doi paper papers article articles work study document"
)
_FIELD_TERMS = terms(FIELD_WORDS)
# Authors beyond this many are written "et al." (a collaboration lists hundreds).
MAX_AUTHORS = 8


def asked_fields(question: str) -> frozenset[str]:
    """The bibliographic fields the question asks for: any of "authors", "year",
    "journal", "title", "doi" (empty: not a bibliographic question)."""
    return frozenset(name for name, pattern in FIELDS.items() if pattern.search(question))


@lru_cache(maxsize=1)
def field_lexemes() -> frozenset[str]:
    """FIELD_WORDS as search lexemes (the database's stemming), for the routing probe."""
    from domains.retrieval import query_lexemes

    return frozenset(query_lexemes(FIELD_WORDS))


def _stored(metadata: dict, key: str) -> bool:
    value = metadata.get(key)
    if isinstance(value, (list, tuple)):
        return any(str(v).strip() for v in value)
    return value is not None and str(value).strip() != ""


def _authors(value) -> str:
    names = [str(v).strip() for v in value] if isinstance(value, (list, tuple)) else [str(value).strip()]
    names = [n for n in names if n]
    if len(names) > MAX_AUTHORS:
        return f"{names[0]} et al."
    if len(names) > 1:
        return ", ".join(names[:-1]) + " and " + names[-1]
    return names[0] if names else ""


def reference_line(metadata: dict) -> str:
    """``metadata``'s stored title, authors, journal, year and DOI as one line
    ("*Title*, A and B, Journal, 2014, doi:10.x/y."); "" when it has none of them."""
    parts = []
    title = str(metadata.get("title") or "").strip().rstrip(".").replace("*", "")
    if title:
        parts.append(f"*{title}*")
    if _stored(metadata, "authors"):
        parts.append(_authors(metadata["authors"]))
    for key in ("journal", "year"):
        if _stored(metadata, key):
            parts.append(str(metadata[key]).strip())
    if _stored(metadata, "doi"):
        parts.append(f"doi:{str(metadata['doi']).strip()}")
    parts = [p for p in parts if p]
    return ", ".join(parts) + "." if parts else ""


def _naming(source) -> str:
    metadata = getattr(source, "metadata", None) or {}
    authors = metadata.get("authors") or ""
    authors = " ".join(map(str, authors)) if isinstance(authors, (list, tuple)) else str(authors)
    return " ".join([str(metadata.get("title") or ""), authors, str(metadata.get("journal") or ""),
                     re.sub(r"[_./-]", " ", getattr(source, "file_name", "") or "")])


def answer(question: str, sources: Sequence, search_text: str = "") -> tuple[int, str] | None:
    """The reference line answering a bibliographic question, and the number of the
    source it comes from; None when the question asks for no bibliographic field or no
    source stores one it asks for.

    :param sources: numbered sources, best retrieved first (``number``, ``metadata``:
        file-level keys such as title, authors, year, journal, doi; ``file_name``).
    :param search_text: a follow-up with the question(s) before it ("" = the question):
        the words naming the document are taken from it.
    """
    fields = asked_fields(question)
    if not fields:
        return None
    having = [s for s in sources if any(_stored(getattr(s, "metadata", None) or {}, f) for f in fields)]
    if not having:
        return None
    naming = terms(search_text or question) - _FIELD_TERMS
    shares = [len(matches(naming, _naming(s))) for s in having]
    best = max(shares)
    if best == 0 and having[0] is not sources[0]:
        return None  # nothing names a document, and the best retrieved one lacks the field
    source = having[shares.index(best)]
    return source.number, reference_line(source.metadata)
