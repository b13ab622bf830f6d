"""What a paper says, apart from what introduces it and what it cites.

Front matter (a journal header, a copyright or licence line, received/accepted dates, an
affiliation, a correspondence address, a byline) and reference-list entries answer
nothing but "who", "where from" and "what else": their names, places and title words
match questions about anything. The answer's passage choice leaves them out
(chat/backends/extractive/candidates.py), routing counts a chunk's words from its body
text only (chat/backends/extractive/routing.py) and retrieval ranks a chunk by the share
of it that is body text (domains/retrieval/engine.py).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

from ingestion.metadata.biblio.names import parse_byline

_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
# An address's parts bounded as RFC 5321 bounds them (64 before the "@", 255 after): unbounded,
# each start in a run such as "a.a.a..." or "a-a-a-..." scanned to its end (quadratic: 40,000
# characters of a line took over a minute).
_EMAIL = re.compile(r"\b[\w.+-]{1,64}@[\w-]{1,255}\.[\w.-]{1,255}\b")
_PUBLICATION = re.compile(
    r"\b(ISSN|e-?ISSN|doi:|DOI:)|©|\bCopyright\b|\bCreative Commons\b|\bAll rights reserved\b|"
    r"\b(Received|Accepted|Revised|Published online)\b:?\s+\d|\bCorrespond(ence|ing author)\b",
    re.I,
)
_HEADER = re.compile(r"\b(Journal|Proceedings|Proc\.|Vol\.|Volume\s+\d|No\.\s*\d|pp\.\s*\d)|\b(Universit|Institut|Departamento|Department|Dept\.|Laborator|Faculty|School of|College|Hospital|Cent(er|re) for)", re.I)
_VERB = re.compile(r"\b(is|are|was|were|has|have|had|will|can|may|shows?|showed|found|we|our)\b", re.I)


def looks_like_front_matter(text: str) -> bool:
    """Whether ``text`` reads as a paper's front matter rather than its content: an
    e-mail address, a copyright, licence, DOI/ISSN or received/accepted line, or a
    journal header or affiliation without a verb and with a number or two commas ("J.
    Neurosci., Vol. 12, pp. 1-10", "Department of Physics, University of X, 12345 Y";
    not "National Institutes of Health", a funder's name)."""
    if _EMAIL.search(text) or _PUBLICATION.search(text):
        return True
    address = text.count(",") >= 2 or bool(re.search(r"\d", text))  # "a name alone" is not a header
    return address and bool(_HEADER.search(text)) and not _VERB.search(text)


# What sets a line of names apart from a Title Case phrase ("Tidy Data", "Level Ancestor
# Query") or a board member's line ("Upi Bhalla NCBS Bangalore, India Website"): an initial
# before a name, an affiliation or footnote mark, "et al.", or names joined by "and".
_BYLINE_MARK = re.compile(r"\b[A-Z]\.\s*[A-Z]|[\d*\u2217\u2020\u2021\u00a7\u00b6]|\bet al\b")
_JOINED = re.compile(r"\s(?:and|AND|&)\s")
# A lower-case word of four letters or more but a name's particle: prose, never a byline
# (tested first: the byline parser is the cost of reading a retrieved paper's chunks).
_PROSE_WORD = re.compile(r"\b(?!(?:and|van|von|der|den|del|della|dos|das|ten|ter|bin|ibn|zu)\b)[a-z]{4,}\b")


def looks_like_byline(text: str) -> bool:
    """Whether ``text`` is a paper's byline: person names only
    (:func:`ingestion.metadata.biblio.names.parse_byline`) with an initial, a mark or
    names joined by "and" ("Peter W. Shor\u2020", "Manzoor Ikram1,* and Farhan Saif 2,\u2020",
    "B. P. Abbott et al.*", "Diego Ongaro and John Ousterhout"; not "Tidy Data"). A
    byline sentence carries the paper's title words through its heading chain and was
    quoted as the answer."""
    if len(text) > 2000 or _PROSE_WORD.search(text):  # (an author list is a few hundred characters a line)
        return False
    names = parse_byline(text)
    return bool(names) and bool(_BYLINE_MARK.search(text) or (len(names) >= 2 and _JOINED.search(text)))


# A reference as physics and Nature journals print it, volume, page and year: "Phys. Rev.
# Lett. 79, 325 (1997)", "Nature 574, 505-510 (2019)"; or "ibid.". A reference list's entry
# runs over lines and paragraphs, so its later lines open with no number.
_CITATION = re.compile(r"\b\d{1,4},\s*[A-Z]?\d{1,6}(?:\s*[\u2013-]\s*\d{1,6})?\s*\(\s*(?:1[89]|20)\d\d\s*\)|\bibid\.")


def looks_like_citation(text: str) -> bool:
    """Whether ``text`` (a sentence) holds a reference as a volume, a page and a year in
    parentheses ("ibid. 69, 1293 (1992)") or "ibid.": a reference entry's later part,
    never the body's own words ("Rarity, P.R. Tapster, and G.M. Palma, ibid. 69, 1293
    (1992); F. Saif, ... (unpublished)." was quoted)."""
    return bool(_CITATION.search(text))


def looks_like_front_matter_or_byline(text: str) -> bool:
    """:func:`looks_like_front_matter` or :func:`looks_like_byline`: not to be quoted
    unless the question asks "who"."""
    return looks_like_front_matter(text) or looks_like_byline(text)


# An entry of a paper's reference list: "[12] B. P. Abbott et al., ...", "3. Shojania KG,
# Grimshaw JM: ...", "12 Mason, M. ..." (a number in brackets, or a number and a surname
# with its initials); with a year somewhere in the line.
_REFERENCE_ENTRY = re.compile(r"^\s*(\[\d{1,3}\]\s*\S|\d{1,3}\.?\s+[A-Z][\w'-]+(,\s*([A-Z]\.\s?){1,3}|\s+[A-Z]{1,3}[,:]))")
# A number in brackets and an author's initial open an entry even without a year ("[28] M.
# Ikram and F. Saif (unpublished).").
_NUMBERED_AUTHOR = re.compile(r"^\s*\[\d{1,3}\]\s*[A-Z]\.")


def looks_like_reference_entry(text: str) -> bool:
    """Whether ``text`` (a line or paragraph) opens an entry of a reference list: a number
    in brackets, or a number and a surname with its initials, and a year somewhere; or a
    number in brackets and an initial ("[28] M. Ikram and F. Saif (unpublished).")."""
    return bool(_REFERENCE_ENTRY.match(text) and _YEAR.search(text) or _NUMBERED_AUTHOR.match(text))


def body_text(text: str) -> str:
    """``text`` without the lines that are a paper's front matter
    (:func:`looks_like_front_matter`: affiliations, journal header, copyright) or entries
    of its reference list: what the paper says rather than where it comes from or what
    it cites. Their place names and title words ("Canberra, Australian Capital
    Territory", "Health care in Africa") match questions about anything.

    >>> body_text("Raft elects a leader.\\n[3] L. Lamport. Paxos made simple. 2001.")
    'Raft elects a leader.'
    """
    return "\n".join(line for line in text.split("\n")
                     if not looks_like_front_matter(line)
                     and not looks_like_reference_entry(line))


# Sentence ends within a line, for body_share: a mark, white space and a capital or a digit.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+(?=[A-Z0-9(\[\u00a9])")


# body_share of the texts read lately, by their digest (retrieval reads it for the best 2 k
# chunks of a paper domain on every question). Keyed by a digest, not the text: a cache of
# 2,048 texts held them all, and a chunk of characters that cost no token is unbounded
# (2,000,000 zero-width spaces: 4 MB a chunk, 8 GB a cache).
_SHARES: OrderedDict[bytes, float] = OrderedDict()
_SHARES_SIZE = 2048
_SHARES_LOCK = threading.Lock()


def body_share(text: str) -> float:
    """The share of ``text``'s characters (white space aside) that is body text: not in a
    line opening a reference entry (:func:`looks_like_reference_entry`) nor in a sentence
    of front matter, a byline or a citation (:func:`looks_like_front_matter_or_byline`,
    :func:`looks_like_citation`). Read by
    sentence, not by line as :func:`body_text` does: an abstract printed as one paragraph
    ending "\u00a9 2007 American Institute of Physics." is body text but for that sentence.
    1.0 for empty text."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _SHARES_LOCK:
        if key in _SHARES:
            _SHARES.move_to_end(key)
            return _SHARES[key]
    share = _body_share(text)
    with _SHARES_LOCK:
        _SHARES[key] = share
        if len(_SHARES) > _SHARES_SIZE:
            _SHARES.popitem(last=False)
    return share


def _body_share(text: str) -> float:
    total = body = 0
    for line in text.split("\n"):
        size = len("".join(line.split()))
        total += size
        if not size or looks_like_reference_entry(line):
            continue
        body += sum(len("".join(sentence.split())) for sentence in _SENTENCE_END.split(line)
                    if not (looks_like_front_matter_or_byline(sentence) or looks_like_citation(sentence)))
    return body / total if total else 1.0
