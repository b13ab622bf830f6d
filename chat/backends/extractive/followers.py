"""The passages quoted after the best one (:class:`.passages.Composer` chooses the best).

A second one when it scores within :data:`NEAR_TIE` of the first (the evidence cannot
tell them apart; of several, the one adding most of the question terms the first lacks),
or else when it adds such terms and scores nearly as well, or else when it scores within
:data:`WIDE_TIE` and adds what the question asks for (a term, a list; to "which ... are"
after prose, the list within :data:`WIDE_TIE` comes first); one holding every question
term may follow below :data:`MIN_SIMILARITY`. After a second one, a third when it scores
within :data:`THIRD_TIE` of the first. None repeats a passage already quoted
(:func:`restates`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from difflib import SequenceMatcher

from .candidates import Passage, headings_of, overlap
from .text import list_items, matches, terms

# Cosine similarity (question vs. heading chain + passage) below which a passage does
# not answer. Measured on the documentation corpora: answered questions' best passage
# scores >= 0.38; the same questions asked of the wrong domain mostly score below 0.35.
# Set low: declining an answerable question is worse than a weak answer.
MIN_SIMILARITY = 0.35
# A second passage must add at least SECOND_NEW_TERMS of the question's idf mass, score
# within SECOND_MARGIN + that share of the first, and keep the answer within SECOND_CHARS.
SECOND_MARGIN = 0.06
SECOND_NEW_TERMS = 0.2
SECOND_CHARS = 800
# Measured on bench/questions (neuroml + klea-docs to choose, xarray + cooking to check):
# the answering passage is the runner-up in about one miss in three, within 0.1 of the best.
NEAR_TIE = 0.1
# Of several near ties, the one quoted maximises its score + SECOND_ADDS x the share of
# the question's idf mass it adds to the best passage: the runner-up that repeats the
# best one's terms ("This page is Klea as an MCP client") loses to the one naming what
# the question asks for ("... the official mcp Python SDK"). Near ties only: a wider
# choice (every passage allowed to follow) gained 3 on the first sets and lost 2 on the
# second (bench/passage_replay.py).
SECOND_ADDS = 0.5
# Without a near tie or a passage that adds, the runner-up within WIDE_TIE follows when it
# adds what the question asks for (a question term the best lacks, or the list "which
# ... are" asks for after prose; of several, the one adding most, as among near ties):
# lexical + dense evidence rarely puts the answering passage further behind. Only after
# the near ties: one window of 0.15 or 0.2 let a runner-up adding terms displace the
# closer one that answered. Replayed (docs/benchmarks.md, `passage`, 2026-12-07): first /
# second sets 108 / 56 -> 110 / 58 with the floor below, median answer 287 -> 306 chars.
WIDE_TIE = 0.2
# After a second passage, a third within THIRD_TIE of the best (the one adding most), all
# three within SECOND_CHARS. Half the near tie: within 0.05 and within 0.1 gained the same
# questions (first / second sets 110 / 58 -> 112 / 59), at +1 against +14 median characters
# there and +14 against +58 on the held-out sets (`passage`, 2026-12-07).
THIRD_TIE = NEAR_TIE / 2
# A sentence or item saying nothing but the question's own words ("A C++ API for NeuroML.",
# a page's caption) matches the question best and answers nothing: fewer than NEW_WORDS
# words of its own cost it SAYS_NOTHING_NEW, and it never follows another. One is enough:
# "The original code is published on ModelDB." answers where it was published (two cost it
# that answer on bench/questions).
NEW_WORDS = 1
SAYS_NOTHING_NEW = -0.15
_NAME = re.compile(r"\b[A-Za-z][a-z]*[A-Z][\w]*")  # "ModelDB", "NetPyNE", "jLEMS": a capital inside
# A passage whose words are this share of another's, in order, restates it (:func:`restates`).
RESTATED = 0.8
# An item of a numbered list: a step of a procedure ("2. Finely slice the garlic").
_NUMBERED = re.compile(r"\s*\d+[.)]\s")


# A yes/no question: an auxiliary first, and no question word after it ("Is there a C++
# API, and how is it produced?" asks how).
YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had|may|must|shall)\b"
    r"(?!.*\b(?:what|which|who|whom|whose|when|where|why|how)\b)", re.I | re.S)
PREFIX_LETTERS = 4


def _asked_word(word: str, asked: set[str], ordered: list[str], longest: int) -> bool:
    """Whether ``word`` is a question term: one of ``asked``, or (both of
    :data:`PREFIX_LETTERS` letters or more) a start of one or started by one (``ordered``:
    ``asked`` sorted; ``longest``: the longest term's length)."""
    if word in asked:
        return True
    if len(word) < PREFIX_LETTERS:
        return False
    # (its starts no longer than the longest term: a 20,000-letter token made 20,000 slices)
    if any(word[:n] in asked for n in range(PREFIX_LETTERS, min(len(word), longest + 1))):
        return True
    i = bisect_left(ordered, word)
    return i < len(ordered) and ordered[i].startswith(word)


class Followers:
    """The choice of the passages following the best one; mixed into
    :class:`.passages.Composer`, whose ``shapes`` (the question's) and ``wanted`` (its terms) it reads."""

    shapes: frozenset[str]  # the question's (:func:`.shapes.shapes`)
    wanted: set[str]  # its terms
    question: str
    # the question's terms (its search text's too): as a set, sorted, the longest's length
    asked: tuple[set[str], list[str], int]

    def _second(self, best: Passage, others: Sequence[Passage], idf: dict[str, float], total: float) -> Passage | None:
        """The passage quoted after ``best`` (of ``others``, best scored first), or None:
        to "which ... are" after prose, the list or table within :data:`WIDE_TIE` that adds
        most (:meth:`fits_better`: a near tie or a passage adding terms would displace the
        list asked for); else the near tie that adds most (:data:`SECOND_ADDS`); without one, the best scored
        passage that adds at least :data:`SECOND_NEW_TERMS` of the question's idf mass
        and scores within :data:`SECOND_MARGIN` + that share of ``best``; without one,
        the runner-up within :data:`WIDE_TIE` that adds most; any of them only when both
        fit in :data:`SECOND_CHARS`, and only at :data:`MIN_SIMILARITY` or above unless
        it holds every question term (:meth:`holds_all`)."""
        ties, adding, wide, listed = [], [], [], []
        for other in others:
            if not self._may_follow([best], other):
                continue
            new_share = sum(idf[t] for t in other.found - best.found) / total
            if other.score >= best.score - WIDE_TIE and self.fits_better(other, best):
                # "which ... are" answered by prose: the list it asks for follows first
                listed.append((SECOND_ADDS * new_share + other.score, other))
            if other.score >= best.score - NEAR_TIE:
                ties.append((SECOND_ADDS * new_share + other.score, other))
            # What it adds buys it room: the second part of "X and Y?" scores lower.
            elif new_share >= SECOND_NEW_TERMS and other.score >= best.score - SECOND_MARGIN - new_share:
                adding.append((other.score, other))
            elif other.score >= best.score - WIDE_TIE and (new_share > 0 or self.fits_better(other, best)):
                wide.append((SECOND_ADDS * new_share + other.score, other))
        for found in (listed, ties, adding, wide):
            if found:
                return max(found, key=lambda pair: pair[0])[1]
        return None

    def _third(self, chosen: Sequence[Passage], others: Sequence[Passage], idf: dict[str, float],
               total: float) -> Passage | None:
        """The passage quoted after the best one and its follower (``chosen``), or None:
        of ``others``, the one scoring within :data:`THIRD_TIE` of the best that adds most
        to what ``chosen`` holds (:data:`SECOND_ADDS`), all three within :data:`SECOND_CHARS`."""
        found = set().union(*(passage.found for passage in chosen))
        ties = [(SECOND_ADDS * sum(idf[t] for t in other.found - found) / total + other.score, other)
                for other in others
                if other.score >= chosen[0].score - THIRD_TIE and self._may_follow(chosen, other)]
        return max(ties, key=lambda pair: pair[0])[1] if ties else None

    def _siblings(self, chosen: Sequence[Passage], others: Sequence[Passage]) -> list[Passage]:
        """The other items of a list one of ``chosen`` is an item of, scoring within
        :data:`NEAR_TIE` of the best, best scored first while all fit in :data:`SECOND_CHARS`
        ([] = none): the evidence cannot tell a list's items apart (the duties of a committee,
        one to an item), so the answer quotes each of them, not the two that scored first. None
        to a question asking for one step by its place ("the first step")."""
        if any(shape.startswith("position:") for shape in self.shapes):
            return []
        lists = [(p.chunk, p.start) for p in chosen if p.kind == "item"]
        taken: list[Passage] = []
        for other in others:
            if (other.kind == "item" and any(other.chunk is chunk and other.start == start for chunk, start in lists)
                    and other.score >= chosen[0].score - NEAR_TIE and self._may_follow([*chosen, *taken], other)):
                taken.append(other)
        return taken

    def steps_between(self, chosen: list[Passage]) -> list[Passage]:
        """``chosen`` with no step skipped: to two or more quoted items of one numbered list,
        the items between them are added (scored as the lowest of them) when all passages
        fit in :data:`SECOND_CHARS`. A procedure quoted as "1. ... 3. ..." would have its
        reader skip step 2 (a new-user trial: "How do I make spaghetti aglio e olio?" quoted
        steps 1 and 3). When they do not fit, the quoted steps keep their written numbers,
        which show the gap: leaving out the later step lost answers (replayed)."""
        lists: dict[tuple[int, int], list[Passage]] = {}
        for passage in chosen:
            if passage.kind == "item" and _NUMBERED.match(passage.text):
                lists.setdefault((id(passage.chunk), passage.start), []).append(passage)
        out = list(chosen)
        for items in lists.values():
            parts = {item.part for item in items}
            missing = [n for n in range(min(parts), max(parts) + 1) if n not in parts]
            if not missing:
                continue
            first = items[0]
            texts = list_items(first.chunk.units[first.start].text)
            low = min(items, key=lambda item: item.score)
            added = []
            for n in missing:
                step = Passage(first.chunk, first.start, first.start, "item", texts[n], part=n, lead=first.lead)
                step.found, step.score, step.cosine = matches(self.wanted, step.text), low.score, low.cosine
                added.append(step)
            if sum(len(passage.text) for passage in out + added) <= SECOND_CHARS:
                out.extend(added)
        return out

    def _may_follow(self, chosen: Sequence[Passage], other: Passage) -> bool:
        """Whether ``other`` may be quoted after ``chosen``: all fit in :data:`SECOND_CHARS`,
        it reaches :data:`MIN_SIMILARITY` or holds every question term, says more than the
        question (:meth:`says_more`, recorded as ``says_nothing``) and repeats none of them."""
        if sum(len(passage.text) for passage in chosen) + len(other.text) > SECOND_CHARS:
            return False
        if other.says_nothing:
            return False
        if other.cosine < MIN_SIMILARITY and not self.holds_all(other):
            return False
        # The same words twice (a passage repeated in another file, a paper's abstract sentence
        # repeated in its introduction with a word changed) say nothing new.
        return not any(overlap(passage, other) or other.text in passage.text or passage.text in other.text
                       or restates(passage.text, other.text) for passage in chosen)

    def says_more(self, passage: Passage) -> bool:
        """Whether ``passage`` holds :data:`NEW_WORDS` or more terms (a number is one) that
        are not the question's: a term that is none of its terms, nor (both of four letters
        or more: "not" is no part of "notebook") starts or is started by one, or a name the
        question does not hold as written ("ModelDB" beside "model"). To a yes/no question
        ("Can xarray read netCDF files?") the sentence saying so in its words is the
        answer: every passage says more."""
        if YES_NO.match(self.question):
            return True
        asked, ordered, longest = self.asked
        new = {word for word in terms(passage.text) if not _asked_word(word, asked, ordered, longest)}
        new |= {name for name in _NAME.findall(passage.text) if not terms(name) <= asked}
        return len(new) >= NEW_WORDS

    def fits_better(self, passage: Passage, than: Passage) -> bool:
        """Whether ``passage`` is the whole list or table a "which ... are" question asks
        for and ``than`` is not."""
        blocks = ("list", "table", "rows")
        return "listing" in self.shapes and passage.kind in blocks and than.kind not in blocks

    def holds_all(self, passage: Passage) -> bool:
        """Whether ``passage`` holds every question term, in its text or its chunk's
        headings (False for a question without terms)."""
        return bool(self.wanted) and self.wanted <= passage.found | matches(self.wanted, headings_of(passage))


def restates(one: str, other: str) -> bool:
    """Whether two passages say the same in nearly the same words: the shorter one's words
    found in order in the longer one, at least :data:`RESTATED` of them ("The Level Ancestor
    Problem is to preprocess a given rooted tree T ..." and "... is thus to preprocess a
    given n-node rooted tree T ...")."""
    a, b = sorted((one.lower().split(), other.lower().split()), key=len)
    if not a or len(b) > 2 * len(a):
        return False
    same = sum(block.size for block in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return same >= RESTATED * len(a)
