"""What a "what is X?" question asks to define, and the chunks that define it.

"What is a domain in Klea?" is answered by the sentence or glossary entry that defines the
term ("- **Domain** — a knowledge area ..."), which the ranked lists may put far down: the
term is in most chunks of its documentation, so BM25 cannot tell them apart, and a
glossary's embedding is that of all its entries. Its form finds it
(:func:`defines_subject`), looked for only in the chunks holding the term's rarest lexeme
(:func:`definition_chunks`). :mod:`.acronyms` does the same for "what does X stand for?"
and shares the scan (:func:`scan_chunks`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from django.db import connection

from .bm25 import query_lexemes
from .filters import CompiledFilter

# "What is X?", "What is a X in Y?" (Y names the field: "in Klea", "of NeuroML"); two
# subjects: "What is X and what is Y?", "What are Xs and Ys?".
DEFINITION = re.compile(
    r"^\s*what\s+(is|are)\s+(an?\s+|the\s+)?(?P<subject>[\w.-]+(\s+[\w.-]+)?)"
    r"(,?\s+and\s+(what\s+(is|are)\s+)?(an?\s+|the\s+)?(?P<other>[\w.-]+(\s+[\w.-]+)?))?"
    r"(\s+(in|of|for|within)\s+[\w.'-]+(\s+[\w.'-]+)?)?\s*\??\s*$",
    re.I,
)
# What follows a defined term: "X is a / the / one ...", "X (the ...) is the ...", "X are
# ...", "X refers to ...", a glossary entry "X: ..." or "**X** — ...", or a
# definition-list entry (the term, its definition indented on the next line; the white
# space before the definition read once: "\s*\n\s+" split a run of n blank lines n^2 ways).
_DEFINING = (r"[*_`]*(\s+\([^)\n]*\))?"
             r"(\s+(is|was)\s+(an?|the|one)\b|\s+(are|refers?\s+to|means|stands\s+for|denotes)\b"
             r"|\s*[:\u2014\u2013]\s|[^\S\n]*+\n\s++\S)")
# Where a definition may open: a text's or line's start, or a sentence's (a sentence's
# white space opening with a line break: the line's start).
_OPENING = r"(\A|\n|(?<=[.!?])(?!\n)\s++)"
# Chunks read per store to find a definition: of those holding the term's rarest lexeme
# (an acronym's), at most SCANNED, where it weighs most (best BM25 impact first, through
# the postings index), so that a common term costs a bounded number of regular-expression
# tests in a store of millions of chunks; at most CANDIDATES of them kept.
SCANNED = 5000
CANDIDATES = 200


def asked_subjects(question: str) -> list[str]:
    """The subjects a "what is X (and what is Y)?" question asks to define, lower-cased
    ("What is a domain in Klea?" -> ["domain"]; [] for any other question)."""
    match = DEFINITION.match(question)
    return [subject.lower() for subject in match.group("subject", "other") if subject] if match else []


def _name(subject: str) -> str:
    """``subject`` as a pattern: its plural or singular too ("domains" and "domain")."""
    return re.escape(subject[:-1] if subject.endswith("s") and len(subject) > 3 else subject) + "s?"


def defines_subject(subject: str, text: str) -> bool:
    """Whether ``text`` opens by defining ``subject`` (any case; a list item's marker, an
    article and Markdown emphasis aside)."""
    return re.match(_defining(subject), text, re.I) is not None


def _defining(subject: str) -> str:
    return rf"([-*+]\s+)?(the\s+|an?\s+)?[*_`]*{_name(subject)}{_DEFINING}"


_SCAN = """
SELECT c.id, c.text FROM (
    SELECT p.chunk_id FROM domains_bm25posting p
    WHERE p.term_id = (SELECT t.id FROM domains_bm25term t WHERE t.store_id = %(store)s
                       AND t.lexeme = ANY(%(lexemes)s::text[]) ORDER BY t.df, t.id LIMIT 1)
    ORDER BY p.impact DESC, p.tf, p.dl, p.chunk_id LIMIT %(scanned)s
) p JOIN domains_chunk c ON c.id = p.chunk_id
WHERE c.text {operator} %(pattern)s AND {where}
ORDER BY c.id LIMIT %(limit)s
"""


def scan_chunks(store_id: int, lexemes: Sequence[str], pattern: str, check: Callable[[str], bool], k: int,
                where: CompiledFilter | None = None, ignore_case: bool = False) -> list[int]:
    """The chunks of a store, in the store's order (chunk id), at most ``k``, that hold
    the rarest of ``lexemes`` (of its :data:`SCANNED` postings where it weighs most),
    whose text matches the PostgreSQL regular expression ``pattern`` (of them at most
    :data:`CANDIDATES`) and for which ``check(text)`` holds.

    :param where: filter over the chunk alias ``c``.
    :returns: [chunk id]; [] when the store holds none of the lexemes.
    """
    if not lexemes:
        return []
    where = where or CompiledFilter()
    sql = _SCAN.format(operator="~*" if ignore_case else "~", where=where.sql)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"store": store_id, "lexemes": list(lexemes), "pattern": pattern, "scanned": SCANNED,
                             "limit": CANDIDATES, **where.params})
        return [chunk_id for chunk_id, text in cursor.fetchall() if check(text)][:k]


def definition_chunks(subject: str, store_id: int, k: int, where: CompiledFilter | None = None) -> list[int]:
    """The chunks of a store with a sentence, line or list entry defining ``subject``
    (:func:`defines_subject`), in the store's order, at most ``k`` (:func:`scan_chunks`).

    :param subject: from :func:`asked_subjects`.
    :returns: [chunk id]; [] when the subject has no lexeme or nothing defines it.
    """
    words = r"\s+".join(_name(word) if i == len(subject.split()) - 1 else re.escape(word)
                        for i, word in enumerate(subject.split()))
    pattern = rf"(^|\n|[.!?]\s)\s*([-*+]\s+)?(the\s+|an?\s+)?[*_`]*{words}"

    # one search, openings and definition together: matching a copy of the text after each
    # opening was quadratic (a code chunk of 300,000 empty lines, which cost no token, took minutes)
    opening_definition = re.compile(_OPENING + _defining(subject), re.I)

    def check(text: str) -> bool:
        return opening_definition.search(text) is not None

    return scan_chunks(store_id, query_lexemes(subject), pattern, check, k, where, ignore_case=True)
