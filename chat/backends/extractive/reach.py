"""How far a chosen passage reaches beyond its candidate (:mod:`.candidates`): back to the
sentence its first one leans on (:func:`lean_back`), on through the sentences carrying on
after it (:func:`extend`), and over a short list right after it that no lead-in
introduces (:func:`with_list`), each within its paragraph and :data:`EXTEND_CHARS`.
"""

from __future__ import annotations

import re

from .candidates import Passage, Unit, mid_sentence
from .text import leads_on, looks_like_code, looks_like_front_matter, matches

# A sentence is followed by the next one of its paragraph when it is shorter than
# SHORT_SENTENCE, or the next one holds question terms it lacks; up to EXTEND_CHARS.
SHORT_SENTENCE = 90
EXTEND_CHARS = 450
# A sentence opening with one of these leans on the one before ("It is intended to ...",
# "In particular, ..."): the passage takes the previous sentence of its paragraph too.
_LEANING = re.compile(
    r"^(it|its|this|these|those|they|their|he|she|such|thus|therefore|however|also|in particular|in addition|"
    r"for example|for instance|so|but|then|otherwise|here)\b",
    re.I,
)


def lean_back(passage: Passage) -> Passage:
    """A prose passage whose first sentence leans on the one before (:data:`_LEANING`)
    starts one sentence earlier, within its paragraph (or in the paragraph before, when
    the sentence is a paragraph of its own: :func:`_carries_on`)."""
    units = passage.chunk.units
    before = passage.start - 1
    if passage.kind != "prose" or before < 0 or not _LEANING.match(units[passage.start].text):
        return passage
    unit = units[before]
    if unit.kind != "sentence" or looks_like_code(unit.text):
        return passage
    if unit.paragraph != units[passage.start].paragraph and not _carries_on(units, passage.start):
        return passage
    if mid_sentence(passage.chunk, before):
        return passage
    if looks_like_front_matter(unit.text):
        return passage
    if len(unit.text) + len(passage.text) + 1 > EXTEND_CHARS:
        return passage
    leaned = Passage(passage.chunk, before, passage.end, "prose", f"{unit.text} {passage.text}")
    leaned.found, leaned.score, leaned.cosine = passage.found, passage.score, passage.cosine
    return leaned


def _next_sentence(passage: Passage) -> Unit | None:
    """The sentence after ``passage`` in its paragraph when it may be quoted with it (not a
    lead-in, code or front matter, within :data:`EXTEND_CHARS`), or opening the next
    paragraph when it leans on the one before (:func:`_carries_on`); else None."""
    units = passage.chunk.units
    nxt = passage.end + 1
    if passage.kind != "prose" or nxt >= len(units):
        return None
    unit = units[nxt]
    if unit.kind != "sentence" or leads_on(unit.text):
        return None
    if unit.paragraph != units[passage.end].paragraph and not _carries_on(units, nxt):
        return None
    if looks_like_code(unit.text) or looks_like_front_matter(unit.text) or len(passage.text) + len(unit.text) + 1 > EXTEND_CHARS:
        return None
    return unit


def _carries_on(units: list[Unit], index: int) -> bool:
    """Whether the sentence ``units[index]``, opening a paragraph of its own, carries on
    from the paragraph before: a one-sentence paragraph (a whole sentence, not the lead-in
    of what follows) leaning on it ("This is the approach taken in MOOSE, Arbor and
    NetPyNE." after the paragraph describing the approach: Markdown authors set such a
    sentence apart)."""
    unit = units[index]
    before = units[index - 1]
    alone = index + 1 >= len(units) or units[index + 1].paragraph != unit.paragraph
    return (alone and before.kind == "sentence" and before.paragraph == unit.paragraph - 1
            and unit.text.rstrip()[-1:] in ".!?" and bool(_LEANING.match(unit.text)))


def extend(passage: Passage, wanted: set[str], idf: dict[str, float]) -> Passage:
    """A one-sentence passage followed by the next sentence of its paragraph when the
    sentence is short or the next one adds question terms (never past a colon's block),
    and then by each next one that carries on about the same subject ("It is based on
    ...", :data:`_LEANING`), up to :data:`EXTEND_CHARS`."""
    unit = _next_sentence(passage)
    if unit is None:
        return passage
    new_terms = matches(wanted, unit.text) - passage.found
    if len(passage.text) >= SHORT_SENTENCE and sum(idf[t] for t in new_terms) <= 0 and not _LEANING.match(unit.text):
        return passage
    extended = Passage(passage.chunk, passage.start, passage.end + 1, "prose", f"{passage.text} {unit.text}")
    extended.found = passage.found | new_terms
    extended.score, extended.cosine = passage.score, passage.cosine
    return extend(extended, wanted, idf) if (after := _next_sentence(extended)) and _LEANING.match(after.text) else extended


# A list of at most SHORT_LIST characters that no lead-in introduces is quoted with the
# paragraph before it (:func:`with_list`): a few names, not a method or a reference list.
SHORT_LIST = 200


def with_list(passage: Passage) -> Passage:
    """A prose passage ending its paragraph, followed by a short list that no lead-in
    introduces ("Xarray is active on several social media platforms. ..." + "- Bluesky\n-
    Twitter(X)"): the paragraph introduces it, the list names what it speaks of."""
    units = passage.chunk.units
    nxt = passage.end + 1
    if passage.kind != "prose" or nxt >= len(units) or units[nxt].kind != "list":
        return passage
    if len(units[nxt].text) > SHORT_LIST or len(passage.text) + len(units[nxt].text) > EXTEND_CHARS:
        return passage
    out = Passage(passage.chunk, passage.start, nxt, "list", f"{passage.text}\n\n{units[nxt].text}")
    out.found, out.score, out.cosine = passage.found, passage.score, passage.cosine
    return out
