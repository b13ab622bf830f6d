"""Whether the passages chosen to answer a question state something about what it asks.

Routing lets a question through on the evidence of a domain as a whole (a word or two some
source shares with it, a close embedding); the passages the composer then picks may still
speak of something else: "How many calories are in a medium banana?" picks a banana bread
recipe's ingredient line, "What time zone is Sydney in?" an xarray note on time zones,
"How do I sort a Python dictionary by its values?" ``ds.sortby(...)``. Such an answer is
worse than none. The quoted passages state something about the question when:

- its **content words** (:func:`content`: its terms without the words framing what kind of
  answer it wants, :data:`FRAME`: "how many", "the best way", "what is the difference
  between", "who wrote", "what does the acronym ... stand for"; numbers are never what a
  question is about) are held, idf-weighted, by the quoted passages (their text, their
  headings, their source's file name, title, authors and domain name): the ``share``;
- and ``cosine + share`` (the quoted passages' best cosine to the question) reaches
  :data:`STATED`, or the cosine alone reaches :data:`STRONG`;
- and a question naming something (:func:`names`: "Sydney", "IBM's Condor", "LlamaIndex",
  "Dijkstra's") has one of its names held, unless the cosine reaches :data:`STRONG`;
- and a quoted passage under the composer's floor (``MIN_SIMILARITY``) holds every content word.

Measured with bench/passage_replay.py on the recorded inputs of the first, second and
fourth sets, terse, the papers sets and the off-topic sets 1-3 and 6 (docs/benchmarks.md,
"offtopic, session 10": off-topic 1-3 refused 86 -> 90/90, off-topic-6 44 -> 59/60, held-out
off-topic-5 15 -> 22/25; no answer holding its evidence lost on the sets read, one on the held-out ones).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher
from functools import lru_cache

from .routing import LISTING_FRAME
from .text import terms

# Words that frame what kind of answer a question wants rather than what it is about: an
# amount or size ("how many", "roughly how long"), a judgement ("the best way", "the right
# moment"), a kind or comparison ("what kinds", "the difference between"), a light verb
# ("what does X do / mean / need / stand for", "what is X used for / built on", "who wrote
# X", "what happens"), a vague referent ("something"). A passage answering "Who wrote
# jLEMS?" names jLEMS and its authors, rarely the word "wrote".
FRAME = (
    "many much long often far old big large small roughly approximately about best good better right "
    "way ways kind kinds type types sort sorts difference between need needs make made makes get gets go goes "
    "happen happens happened give gives come took take takes used use tell mean means allow allowed call called "
    "name named acronym stand wrote written author based built one several must may might would could should "
    "shall will did was were have has had they them their there just after before not more than so no yes any "
    "some every other another all also only very ever well see set back first last time times something "
    "anything thing things"
)
# cosine + content share at which the quoted passages state what was asked. Answerable
# questions of the recorded sets reach 0.87 and more ("What happens after several wrong
# passwords on the sign-in page?": cosine 0.49, share 0.38); off-topic ones let through by
# routing mostly stay under 0.85 (a git commit question on xarray's contributing guide 0.77,
# Switzerland's currency on a Zurich recipe 0.81, a cloud in meteorology on Pangeo 0.77).
STATED = 0.85
# A cosine this high states it by itself (the same sets: no off-topic quoted passage but one
# reached 0.6; answerable ones naming their subject in other words do, "How long does
# homemade hummus keep in the fridge?" 0.80 with share 0.27).
STRONG = 0.6
# A question whose words are mostly capitalised is in title case: its capitals name nothing.
TITLE_CASE = 0.5

_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*\w|[^\W\d_]")


@lru_cache(maxsize=2)
def frame_terms(listing: bool = False) -> frozenset[str]:
    """:data:`FRAME` as question terms (:func:`.text.terms`); for a listing question
    ("Which stacking methods are available?") with the listing frame routing leaves out
    too (:data:`.routing.LISTING_FRAME`: the list names the methods, never "methods")."""
    return frozenset(terms(FRAME + (" " + LISTING_FRAME if listing else "")))


def content(wanted: Iterable[str], listing: bool = False) -> set[str]:
    """The terms a question is about: ``wanted`` without :func:`frame_terms` and numbers
    (when only frame words are left, those; when only numbers, nothing)."""
    words = {t for t in wanted if not t.isdigit()}
    frame = frame_terms(listing)
    if len(words) < len(set(wanted)):  # "What is 17 times 23?" is about no word
        return words - frame
    return (words - frame) or words


def names(question: str) -> set[str]:
    """The terms of the names ``question`` holds: a capitalised word after its first one,
    or a word with a capital inside ("jLEMS", "CPython", "LlamaIndex"), possessive "'s"
    dropped. In a question in title case (:data:`TITLE_CASE`) a capital names nothing:
    only the words with a capital inside count."""
    capitalised, inner = set(), set()
    tokens = [re.sub(r"['’]s$", "", token) for token in _TOKEN.findall(question)]
    for position, token in enumerate(tokens):
        if any(c.isupper() for c in token[1:]):
            inner |= terms(token)
        elif position and token[0].isupper() and token != "I":
            capitalised |= terms(token)
    titled = sum(token[0].isupper() for token in tokens) > TITLE_CASE * len(tokens) and len(tokens) > 2
    return inner if titled else inner | capitalised


# A question term and a word naming a quoted source (its title, file name or headings) are
# one name spelled two ways ("tabouli" / "Tabouleh", "neuorml" / "NeuroML") when both have
# MISSPELT_LENGTH to MISSPELT_LONGEST letters, the same first two, differ in length by at most
# MISSPELT_SPREAD and difflib's ratio reaches MISSPELT_RATIO. Names only, and only a term no
# source holds anywhere: in running text "bitter" / "butter", "stock" / "stack" are two words.
# Only the MISSPELT_TERMS longest such terms are looked for, in the first MISSPELT_CHARS of
# the text (a question of 4,000 characters against a long text compared 1.5 million pairs).
MISSPELT_LENGTH = 6
MISSPELT_LONGEST = 40
MISSPELT_SPREAD = 2
MISSPELT_RATIO = 0.8
MISSPELT_TERMS = 8
MISSPELT_CHARS = 20_000


def misspelt(missing: Iterable[str], names: str) -> set[str]:
    """The terms of ``missing`` that a word of ``names`` spells otherwise (:data:`MISSPELT_RATIO`)."""
    by_start: dict[str, set[str]] = {}
    for word in terms(names[:MISSPELT_CHARS]):
        if MISSPELT_LENGTH <= len(word) <= MISSPELT_LONGEST:
            by_start.setdefault(word[:2], set()).add(word)
    looked = sorted((t for t in missing if MISSPELT_LENGTH <= len(t) <= MISSPELT_LONGEST),
                    key=lambda t: (-len(t), t))[:MISSPELT_TERMS]
    found = set()
    for term in looked:
        for word in by_start.get(term[:2], ()):
            if abs(len(word) - len(term)) > MISSPELT_SPREAD:
                continue
            matcher = SequenceMatcher(None, term, word)
            if matcher.quick_ratio() >= MISSPELT_RATIO and matcher.ratio() >= MISSPELT_RATIO:
                found.add(term)
                break
    return found


def states(question: str, wanted: set[str], idf: dict[str, float], cosine: float, held: set[str],
           floor: float, listing: bool = False) -> bool:
    """Whether passages holding the question terms ``held`` (text, headings, source
    metadata) at best ``cosine`` to the question state something about what ``question``
    (terms ``wanted``, weighted by ``idf``; ``listing``: a listing question) asks;
    ``floor``: the composer's least cosine for a passage not holding every content word.
    See the module docstring."""
    about = content(wanted, listing)
    total = sum(idf.get(t, 0.0) for t in about)
    share = sum(idf.get(t, 0.0) for t in about & held) / total if total else 0.0
    if cosine >= STRONG:
        return True
    named = names(question) & wanted
    if named and not named & held:
        return False
    if cosine < floor and share < 1.0:
        return False
    return cosine + share >= STATED
