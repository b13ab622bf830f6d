"""Model-free answers: the passage of the sources that states the answer, quoted and cited.

Each retrieved chunk (Markdown chunk text, docs/ingestion.md "Chunk text") is cut into
units: the sentences of its paragraphs and its whole lists, tables and code blocks.
Candidate passages are

- a sentence (and the next one of its paragraph when that one carries on);
- a sentence ending in ":" (or in a dangling word: "..., which provides") with the block
  it introduces (a colon or a fragment is never left hanging);
- a whole list, table or code block (after a sentence ending in ":" only with it). A table
  too long to quote is cut to its header and the rows that hold question words (whole
  rows, never a row alone); a code block too long to quote is left out;
- one item of a list longer than :data:`ITEM_LIST_CHARS` (a step of a method, an entry of a
  long list of facts), with its nested items and its marker.

Candidates are ranked by lexical evidence (the idf-weighted share of question terms in
the passage, terms in the chunk's headings counting :data:`HEADING_WEIGHT`; a code
block's string literals are not evidence: code quoting the question does not answer it), then the
best :data:`PREFILTER` by dense evidence (cosine similarity of the question to the
heading chain + passage, the way chunks are embedded), the chunk's retrieval score and
the question's shape (:mod:`.shapes`). The best passage is the answer; a second one
when it adds question terms the first lacks and scores nearly as well, or when it scores
within :data:`NEAR_TIE` of the first (the evidence cannot tell them apart); two passages
of one chunk are quoted in their order there. When no
passage reaches :data:`MIN_SIMILARITY`, nothing is said (the caller says that no source
answers). Every passage is verbatim source text cited by its source's marker, placed
where it reads as part of the passage (:func:`with_marker`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from domains import embeddings

from .shapes import bonus, shapes
from .text import (
    Block,
    leads_on,
    list_items,
    looks_like_code,
    matches,
    segment,
    split_sentences,
    terms,
    without_literals,
    without_quoted_questions,
)

# Cosine similarity (question vs. heading chain + passage) below which a passage does
# not answer. Measured on the documentation corpora: answered questions' best passage
# scores >= 0.38; the same questions asked of the wrong domain mostly score below 0.35.
# Set low: declining an answerable question is worse than a weak answer.
MIN_SIMILARITY = 0.35
# Score = cosine + LEXICAL_WEIGHT x lexical share + RETRIEVAL_WEIGHT x chunk score + shape.
LEXICAL_WEIGHT = 0.35
RETRIEVAL_WEIGHT = 0.15
# A question term found only in the chunk's heading chain (or file name) counts this much.
HEADING_WEIGHT = 0.6
# Embedding is the answer's main cost (about 60 ms per passage at machine load 13, 10 ms
# idle): only the best PREFILTER by the cheap score (lexical + retrieval + shape) are
# embedded, each cut to EMBED_CHARS (heading chain first: it carries the topic), through
# the vector cache (a popular chunk's passages are embedded once per process).
PREFILTER = 10
EMBED_CHARS = 320
# Quoted blocks: a table longer than TABLE_CHARS keeps its header and at most TABLE_ROWS
# rows holding question words; a code block longer than CODE_CHARS is left out.
TABLE_CHARS = 700
TABLE_ROWS = 4
CODE_CHARS = 900
# Passages longer than this lose LENGTH_PENALTY per further LENGTH_STEP characters.
LENGTH_FREE = 450
LENGTH_STEP = 300
LENGTH_PENALTY = 0.03
# A sentence is followed by the next one of its paragraph when it is shorter than
# SHORT_SENTENCE, or the next one holds question terms it lacks; up to EXTEND_CHARS.
SHORT_SENTENCE = 90
EXTEND_CHARS = 450
# A second passage must add at least SECOND_NEW_TERMS of the question's idf mass, score
# within SECOND_MARGIN + that share of the first, and keep the answer within SECOND_CHARS.
SECOND_MARGIN = 0.06
SECOND_NEW_TERMS = 0.2
SECOND_CHARS = 800
# Measured on bench/questions (neuroml + klea-docs to choose, xarray + cooking to check):
# the answering passage is the runner-up in about one miss in three, within 0.1 of the best.
NEAR_TIE = 0.1
MIN_UNIT_CHARS = 6
# A list longer than this may be quoted one item at a time (a step of a method).
ITEM_LIST_CHARS = 300
# A sentence opening with one of these leans on the one before ("It is intended to ...",
# "In particular, ..."): the passage takes the previous sentence of its paragraph too.
_LEANING = re.compile(
    r"^(it|its|this|these|those|they|their|he|she|such|thus|therefore|however|also|in particular|in addition|"
    r"for example|for instance|so|but|then|otherwise|here)\b",
    re.I,
)


@dataclass
class Unit:
    """A sentence of a paragraph, or a whole block (list, table, code)."""

    kind: str  # "sentence" | "list" | "table" | "code"
    text: str
    paragraph: int  # units of one paragraph share it


@dataclass
class Chunk:
    number: int  # its source's number
    rank: int  # order of the chunk across the sources (best source first)
    score: float
    headings: str  # heading chain (and file name) as one line
    units: list[Unit]
    chunk_id: int | None = None  # the stored chunk's id (None for chunks not stored)


@dataclass
class Passage:
    chunk: Chunk
    start: int  # first unit
    end: int  # last unit (inclusive)
    kind: str  # "prose" | "list" | "item" (one item of a list) | "table" | "code"
    text: str
    part: int = -1  # an "item": its index among the list's items
    found: set[str] = field(default_factory=set)
    lexical: float = 0.0
    cheap: float = 0.0
    cosine: float = -1.0
    score: float = -1.0


def _units(text: str) -> list[Unit]:
    units: list[Unit] = []
    for index, block in enumerate(segment(text)):
        if block.kind == "text":
            for sentence in split_sentences(block.text, min_chars=1):
                units.append(Unit("sentence", sentence, index))
        else:
            units.append(Unit(block.kind, block.text, index))
    return units


def _table_rows(table: str, wanted: set[str]) -> str:
    """A long table cut to its header and the rows holding most question terms."""
    lines = table.split("\n")
    header, body = lines[:2], lines[2:]
    counts = [len(matches(wanted, row)) for row in body]
    best = max(counts, default=0)
    ranked = sorted(range(len(body)), key=lambda i: -counts[i])
    # Rows nearly as relevant as the best one (a row matching one common word is noise).
    keep = sorted(i for i in ranked[:TABLE_ROWS] if counts[i] >= max(1, best - 1))
    return "\n".join(header + [body[i] for i in keep]) if keep else ""


def _render(units: Sequence[Unit]) -> str:
    parts: list[str] = []
    for previous, unit in zip([None, *units], units):
        if previous is None:
            parts.append(unit.text)
        elif unit.kind == "sentence" and previous.kind == "sentence" and previous.paragraph == unit.paragraph:
            parts.append(" " + unit.text)
        else:
            parts.append("\n\n" + unit.text)
    return "".join(parts)


def _quotable(unit: Unit, wanted: set[str]) -> str:
    """The unit's text as it may be quoted ("" = not at all)."""
    if unit.kind == "table" and len(unit.text) > TABLE_CHARS:
        return _table_rows(unit.text, wanted)
    if unit.kind == "code" and len(unit.text) > CODE_CHARS:
        return ""
    if unit.kind == "sentence" and (len(unit.text) < MIN_UNIT_CHARS or looks_like_code(unit.text)):
        return ""
    return unit.text


def _candidates(chunk: Chunk, wanted: set[str]) -> list[Passage]:
    units = chunk.units
    texts = [_quotable(unit, wanted) for unit in units]
    found: dict[tuple[int, int, int], Passage] = {}

    def add(start: int, end: int, kind: str) -> None:
        parts = [Unit(units[i].kind, texts[i], units[i].paragraph) for i in range(start, end + 1)]
        if all(part.text for part in parts) and (start, end, -1) not in found:
            found[(start, end, -1)] = Passage(chunk, start, end, kind, _render(parts))

    for i, unit in enumerate(units):
        following = units[i + 1] if i + 1 < len(units) else None
        if unit.kind == "sentence":
            if leads_on(unit.text):
                # Only with what it introduces: the next block, or the rest of its sentence run
                # (after a dangling word, whatever comes next: "..., which provides" + the names).
                colon = unit.text.rstrip().endswith(":")
                if following is not None and (following.kind != "sentence" or following.paragraph == unit.paragraph
                                              or not colon):
                    add(i, i + 1, "prose" if following.kind == "sentence" else following.kind)
                continue
            add(i, i, "prose")
        else:
            if unit.kind == "list" and len(unit.text) > ITEM_LIST_CHARS:
                # One step of a long method, one entry of a long list of facts: quotable alone.
                items = list_items(unit.text)
                for n, item in enumerate(items if len(items) > 1 else ()):
                    if len(item.strip()) >= MIN_UNIT_CHARS:
                        found[(i, i, n)] = Passage(chunk, i, i, "item", item, part=n)
            previous = units[i - 1] if i > 0 else None
            if previous is not None and previous.kind == "sentence" and leads_on(previous.text):
                continue  # quoted with its lead-in above
            add(i, i, unit.kind)
    return list(found.values())


def _lean_back(passage: Passage) -> Passage:
    """A prose passage whose first sentence leans on the one before (:data:`_LEANING`)
    starts one sentence earlier, within its paragraph."""
    units = passage.chunk.units
    before = passage.start - 1
    if passage.kind != "prose" or before < 0 or not _LEANING.match(units[passage.start].text):
        return passage
    unit = units[before]
    if unit.kind != "sentence" or unit.paragraph != units[passage.start].paragraph or looks_like_code(unit.text):
        return passage
    if len(unit.text) + len(passage.text) + 1 > EXTEND_CHARS:
        return passage
    leaned = Passage(passage.chunk, before, passage.end, "prose", f"{unit.text} {passage.text}")
    leaned.found, leaned.score, leaned.cosine = passage.found, passage.score, passage.cosine
    return leaned


def _extend(passage: Passage, wanted: set[str], idf: dict[str, float]) -> Passage:
    """A one-sentence passage followed by the next sentence of its paragraph when the
    sentence is short or the next one adds question terms (never past a colon's block)."""
    units = passage.chunk.units
    nxt = passage.end + 1
    if passage.kind != "prose" or nxt >= len(units):
        return passage
    unit = units[nxt]
    if unit.kind != "sentence" or unit.paragraph != units[passage.end].paragraph or leads_on(unit.text):
        return passage
    if looks_like_code(unit.text) or len(passage.text) + len(unit.text) + 1 > EXTEND_CHARS:
        return passage
    new_terms = matches(wanted, unit.text) - passage.found
    if len(passage.text) >= SHORT_SENTENCE and sum(idf[t] for t in new_terms) <= 0:
        return passage
    extended = Passage(passage.chunk, passage.start, nxt, "prose", f"{passage.text} {unit.text}")
    extended.found = passage.found | new_terms
    extended.score, extended.cosine = passage.score, passage.cosine
    return extended


def _evidence(passage: Passage) -> str:
    """The passage's text as evidence: a code block's string literals are what it is
    given (an example question, a file name), not what it states; a quoted question is
    mentioned, not answered."""
    text = without_literals(passage.text) if passage.kind == "code" else passage.text
    return without_quoted_questions(text)


def _overlap(a: Passage, b: Passage) -> bool:
    if a.part >= 0 and b.part >= 0 and a.part != b.part:
        return False  # two items of one list
    return a.chunk is b.chunk and a.start <= b.end and b.start <= a.end


class Composer:
    """The answer to ``question`` from ``sources``: passages and their citations.

    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :param sources: numbered sources (``number``; ``chunks`` best first, each with
        ``text``, ``score`` in [0, 1] and optionally ``headings``), best source first;
        a source may also carry ``file_name``.
    :param question: the user's question (its shape: a year, a list, how-to ...).
    :param search_text: a follow-up together with the question(s) before it, whose
        terms the passage should hold too; "" = the question alone.
    """

    def __init__(self, query_vector: np.ndarray, sources: Sequence, question: str, search_text: str = ""):
        self.query_vector = query_vector
        self.question = question
        self.shapes = shapes(question)
        self.wanted = terms(search_text or question)
        self.chunks: list[Chunk] = []
        for source in sources:
            for chunk in source.chunks:
                headings = " > ".join(getattr(chunk, "headings", None) or ())
                label = f"{headings} ({getattr(source, 'file_name', '')})" if headings else getattr(source, "file_name", "")
                self.chunks.append(
                    Chunk(source.number, len(self.chunks), float(chunk.score or 0.0), label, _units(chunk.text),
                          getattr(chunk, "chunk_id", None))
                )

    def _idf(self) -> dict[str, float]:
        units = [unit.text for chunk in self.chunks for unit in chunk.units] or [""]
        found = [matches(self.wanted, text) for text in units]
        return {t: float(np.log(1 + len(units) / (1 + sum(t in hit for hit in found)))) for t in self.wanted}

    def choose(self) -> list[Passage]:
        """The passages of the answer, in answer order ([] = the sources do not answer)."""
        idf = self._idf()
        total = sum(idf.values()) or 1.0
        candidates: list[Passage] = []
        for chunk in self.chunks:
            heading_terms = matches(self.wanted, chunk.headings)
            for passage in _candidates(chunk, self.wanted):
                passage.found = matches(self.wanted, _evidence(passage))
                in_heading = heading_terms - passage.found
                passage.lexical = (sum(idf[t] for t in passage.found) + HEADING_WEIGHT * sum(idf[t] for t in in_heading)) / total
                passage.cheap = (
                    LEXICAL_WEIGHT * passage.lexical + RETRIEVAL_WEIGHT * chunk.score
                    + bonus(self.shapes, passage.kind, passage.text, passage.start == 0)
                )
                candidates.append(passage)
        if not candidates:
            return []
        candidates.sort(key=lambda p: (-p.cheap, p.chunk.rank, p.start))
        kept = candidates[:PREFILTER]
        texts = [f"{p.chunk.headings}\n{_evidence(p)}"[:EMBED_CHARS] for p in kept]
        cosines = embeddings.embed_cached(texts) @ self.query_vector
        for passage, cosine in zip(kept, cosines):
            passage.cosine = float(cosine)
            overlong = max(0, len(passage.text) - LENGTH_FREE)
            passage.score = passage.cosine + passage.cheap - LENGTH_PENALTY * (overlong / LENGTH_STEP)
        # A generic question matches no passage closely: it was routed to the only domain.
        if max(p.cosine for p in kept) < MIN_SIMILARITY and "generic" not in self.shapes:
            return []
        kept.sort(key=lambda p: (-p.score, p.chunk.rank, p.start))
        best = _lean_back(_extend(kept[0], self.wanted, idf))
        chosen = [best]
        for other in kept[1:]:
            if other.cosine < MIN_SIMILARITY or "generic" in self.shapes:
                continue
            # What it adds buys it room: the second part of "X and Y?" scores lower.
            new_share = sum(idf[t] for t in other.found - best.found) / total
            if _overlap(best, other) or other.text in best.text or best.text in other.text:
                continue  # the same words twice (a passage repeated in another file) say nothing new
            # A near tie: the evidence cannot tell the two apart, so both are quoted.
            near_tie = other.score >= best.score - NEAR_TIE
            if not near_tie and (new_share < SECOND_NEW_TERMS or other.score < best.score - SECOND_MARGIN - new_share):
                continue
            if len(best.text) + len(other.text) <= SECOND_CHARS:
                chosen.append(_lean_back(other))
            break
        if len(chosen) == 2 and chosen[0].chunk is chosen[1].chunk:
            chosen.sort(key=lambda p: (p.start, p.part))  # one section reads in its own order
        return chosen

    async def pieces(self, cite: Callable[..., str]) -> AsyncIterator[str]:
        """The chosen passages as text pieces, verbatim, each followed by
        ``cite(source number, quoted chunk ids, passages)`` (a run of passages of one
        chunk cited once, with that chunk's id and the run's texts; passages of two chunks
        of one source each get their own marker, so that each marker opens the chunk its
        passage came from). Yields nothing when no passage answers. Scoring embeds
        passages only (no database), so any worker thread will do."""
        chosen = await asyncio.to_thread(self.choose)
        run: list[str] = []
        for index, passage in enumerate(chosen):
            if index:  # prose runs on after a full stop; a list, table or code block stands apart
                previous = chosen[index - 1]
                runs_on = passage.kind == previous.kind == "prose" and previous.text.rstrip()[-1:] in ".!?)"
                yield " " if runs_on else "\n\n"
            run.append(passage.text)
            following = chosen[index + 1] if index + 1 < len(chosen) else None
            if following is None or following.chunk is not passage.chunk:
                marker = cite(passage.chunk.number, [passage.chunk.chunk_id], run)
                before, marked = with_marker(passage.text, marker)
                yield before
                yield marked
                run = []
            else:
                yield passage.text


def with_marker(text: str, marker: str) -> tuple[str, str]:
    """``text`` with its citation ``marker`` where it reads as part of it, never alone
    on a line, as (the text before the marker, the marker and the rest): after prose or
    a list's last item (``"... item [1]"``); inside the last cell of a table (``"| a |
    b [1] |"``); in the lead-in of a code block (``"use pip [1]:"``), or after the block
    when it has none. Two parts, so that the text streams before the marker is known."""
    text = text.rstrip()
    head, _, last = text.rpartition("\n")
    if last.startswith("|") and last.endswith("|"):  # a table row: the marker goes into its last cell
        row = last[:-1].rstrip()
        return (f"{head}\n{row}" if head else row), f" {marker} |"
    if text.endswith("```"):
        lead, gap, block = text.partition("\n\n")
        if gap and lead.endswith(":") and not lead.startswith(("```", "|")):
            return lead[:-1], f" {marker}:{gap}{block}"
        return text, f"\n\n{marker}"
    return text, f" {marker}"
