"""The passages a retrieved chunk offers as an answer (:mod:`.passages` scores them).

Chunk text (Markdown, docs/ingestion.md "Chunk text") is cut into units: the sentences
of its paragraphs (a glossary line "Term: what it is" a paragraph of its own) and its
whole lists, tables and code blocks. Candidate passages are

- a sentence (once chosen, it reaches on through the sentences carrying on after it, back
  to the one it leans on and over a short list after it: :mod:`.reach`);
- a sentence ending in ":" (or in a dangling word: "..., which provides") with the block
  it introduces (a colon or a fragment is never left hanging), a sentence pointing ahead
  ("with the settings below") only with the block after it; the block of a lead-in
  ending its chunk may open the document's next chunk (:attr:`Chunk.follow`);
- a whole list, table or code block (after a sentence ending in ":" only with it). A table
  too long to quote is cut to its header and the rows that hold question words (whole
  rows, never a row alone); a code block too long to quote is left out;
- the rows of a table that hold question words, under its header (kind "rows"; a word in a
  row's first cell, the thing the row is about, weighs more: :func:`_row_weight`);
- one item of a list longer than :data:`ITEM_LIST_CHARS` (a step of a method, an entry of a
  long list of facts), or an entry of a definition list, with its nested items and marker.

No passage starts inside a sentence (:func:`mid_sentence`: a paragraph resumed after a
figure, a page break or a command; a chunk's opening when the previous chunk was cut
inside the sentence). A paper's front matter (journal header, affiliation) is a candidate
only when asked for; its title line never is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from .text import (
    is_definition_list,
    labelled_line,
    continues_sentence,
    ends_mid_sentence,
    leads_on,
    list_items,
    looks_like_code,
    looks_like_citation,
    looks_like_front_matter_or_byline,
    looks_like_reference_entry,
    matches,
    points_ahead,
    segment,
    split_sentences,
    without_literals,
    without_quoted_questions,
)

# The characters of a chunk's text the answer reads: its first READ_CHARS (its last, of the
# previous chunk, whose last paragraph is read). The largest chunk of the bench stores has
# 2,452 (450 tokens), but characters that cost no token (zero-width spaces, combining
# marks, blank lines in code) leave a hostile chunk unbounded, and the answer reads each
# character several times: ten chunks of 230,000 characters took 10 s an answer.
READ_CHARS = 20_000
# Quoted blocks: a table longer than TABLE_CHARS keeps its header and at most TABLE_ROWS
# rows holding question words; a code block longer than CODE_CHARS is left out.
TABLE_CHARS = 700
TABLE_ROWS = 4
CODE_CHARS = 900
MIN_UNIT_CHARS = 6
# A list longer than this may be quoted one item at a time (a step of a method).
ITEM_LIST_CHARS = 300


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
    document_id: int | None = None  # its stored document's id (None: unknown)
    # The first unit of the document's next chunk and that chunk's id, when this chunk
    # ends in a lead-in (:func:`trails_lead_in`) and the next one opens with a block.
    follow: Unit | None = None
    follow_id: int | None = None
    title: str = ""  # its document's title (metadata), "" = unknown
    section: str = ""  # its last heading ("" = none)
    # The document's previous chunk stops inside a sentence (:func:`resumes`): this one's
    # first sentence is that sentence's end.
    resumed: bool = False
    paged: bool = False  # its document is laid out in pages (a PDF): figures and page breaks cut sentences


@dataclass
class Passage:
    chunk: Chunk
    start: int  # first unit
    end: int  # last unit (inclusive); len(chunk.units) = the chunk's ``follow``
    kind: str  # "prose" | "list" | "item" (one item of a list) | "table" | "rows" (header + some rows) | "code"
    text: str
    part: int = -1  # an "item": its index among the list's items
    opening: bool = False  # starts at the chunk's first quotable unit
    next_id: int | None = None  # runs on into the document's next chunk (its id; ``end`` = len(chunk.units))
    # An item's list's lead-in ("Primary brew:" over the steps): what the list is about, a
    # heading of the item's own (:func:`headings_of`).
    lead: str = ""
    found: set[str] = field(default_factory=set)
    # holds no word of its own besides the question's (:meth:`.followers.Followers.says_more`)
    says_nothing: bool = False
    # Passages of other sources stating what this one states (:meth:`.passages.Composer.corroborate`):
    # cited beside it, not quoted.
    also: list[Passage] = field(default_factory=list)
    lexical: float = 0.0
    cheap: float = 0.0
    cosine: float = -1.0
    score: float = -1.0


def units_of(text: str) -> list[Unit]:
    """The units of chunk text; a glossary line ("Term: what it is") is a paragraph of
    its own, so a passage never runs on into the next entry."""
    units: list[Unit] = []
    paragraph = -1
    for block in segment(text):
        paragraph += 1
        if block.kind != "text":
            units.append(Unit(block.kind, block.text, paragraph))
            continue
        for number, line in enumerate(block.text.split("\n")):
            if number and labelled_line(line):
                paragraph += 1
            for sentence in split_sentences(line, min_chars=1):
                units.append(Unit("sentence", sentence, paragraph))
    return units


# A question term in a row's first cell (what the row is about: the setting, the file type,
# the step) counts KEY_CELL_WEIGHT times one in its other cells: asked "how are .docx files
# converted?", the `.docx` row answers, not the Markdown row whose text says "converted".
KEY_CELL_WEIGHT = 3


def _row_weight(row: str, wanted: set[str]) -> int:
    """How much of the question a table row holds: its terms, those in its first cell
    counting :data:`KEY_CELL_WEIGHT`."""
    key = matches(wanted, row.strip().strip("|").split("|", 1)[0])
    return len(matches(wanted, row) - key) + KEY_CELL_WEIGHT * len(key)


# A first cell of at most KEY_WORDS words is a row's key (a name, a setting, a task); a longer
# one describes a case, and shares the question's words without naming what is asked (a
# bad-input table's "a scanned page too large to render (over 40 million pixels at 300 dpi
# ...)" for "at what resolution are scanned pages rendered?": fifth sets, 2026-12-07).
KEY_WORDS = 8


def key_share(table: str, wanted: set[str], idf: dict[str, float]) -> float:
    """The largest idf-weighted share of the question's terms that one body row's key
    (a first cell of at most :data:`KEY_WORDS` words) holds, in [0, 1]: a row keyed by what
    is asked ("rename a variable, dimension or coordinate | Dataset.rename, ..." of a "How
    do I ..." table, a setting's row) answers it. 0.0 for text that is no table."""
    lines = table.split("\n")
    total = sum(idf.get(term, 0.0) for term in wanted) or 1.0
    best = 0.0
    for row in lines[2:] if len(lines) > 2 and lines[0].lstrip().startswith("|") else ():
        cell = row.strip().strip("|").split("|", 1)[0]
        if len(cell.split()) <= KEY_WORDS:
            best = max(best, sum(idf.get(term, 0.0) for term in matches(wanted, cell)) / total)
    return best


def _table_rows(table: str, wanted: set[str]) -> str:
    """A long table cut to its header and the rows holding most question terms
    (:func:`_row_weight`)."""
    lines = table.split("\n")
    header, body = lines[:2], lines[2:]
    counts = [_row_weight(row, wanted) for row in body]
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


def _quotable(unit: Unit, wanted: set[str], front_matter: bool) -> str:
    """The unit's text as it may be quoted ("" = not at all); a paper's front matter (a
    journal header, an affiliation, a byline) only when ``front_matter`` (the question asks "who")."""
    if unit.kind == "table" and len(unit.text) > TABLE_CHARS:
        return _table_rows(unit.text, wanted)
    if unit.kind == "code" and len(unit.text) > CODE_CHARS:
        return ""
    if unit.kind == "sentence" and (len(unit.text) < MIN_UNIT_CHARS or looks_like_code(unit.text)):
        return ""
    if unit.kind == "sentence" and not front_matter and looks_like_front_matter_or_byline(unit.text):
        return ""
    return unit.text


def _fold(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _paragraph_texts(units: Sequence[Unit]) -> dict[int, str]:
    """The text of each paragraph of sentences, by paragraph index."""
    texts: dict[int, str] = {}
    for unit in units:
        if unit.kind == "sentence":
            texts[unit.paragraph] = f"{texts[unit.paragraph]} {unit.text}" if unit.paragraph in texts else unit.text
    return texts


def _reference_paragraphs(units: Sequence[Unit], front_matter: bool) -> set[int]:
    """The paragraphs that are entries of a reference list or parts of one
    (:func:`domains.front_matter.looks_like_reference_entry`, :func:`~domains.front_matter.looks_like_citation`),
    which a two-column page sets among the body text: cut into sentences, "[28] M. Ikram
    and F. Saif (unpublished)." gave "Saif (unpublished).", close to any question on the
    paper through its heading chain. A citation is a journal header too ("Journal of
    Computational Neuroscience 17, 149-171 (2004)"): quoted when ``front_matter`` (the
    question asks "who" or "which journal")."""
    return {paragraph for paragraph, text in _paragraph_texts(units).items()
            if looks_like_reference_entry(text) or (not front_matter and looks_like_citation(text))}


def _title_paragraphs(units: Sequence[Unit], title: str) -> set[int]:
    """The paragraphs of ``units`` that are the document's title (letters and digits the
    same but for a few OCR slips): a paper's title line names its subject with all the
    question's words and answers nothing (a question about the title is answered from the
    metadata, :mod:`.biblio`)."""
    wanted = _fold(title)
    if len(wanted) < 12:
        return set()
    out = set()
    for paragraph, text in _paragraph_texts(units).items():
        folded = _fold(text)
        if abs(len(folded) - len(wanted)) <= 0.1 * len(wanted) and (
            folded == wanted or SequenceMatcher(None, folded, wanted).ratio() >= 0.9
        ):
            out.add(paragraph)
    return out


def candidates(chunk: Chunk, wanted: set[str], front_matter: bool = False) -> list[Passage]:
    """The chunk's candidate passages (see the module docstring); ``opening`` marks those
    that start at its first quotable unit."""
    units = chunk.units
    texts = [_quotable(unit, wanted, front_matter) for unit in units]
    left_out = _title_paragraphs(units, chunk.title) | _reference_paragraphs(units, front_matter)
    texts = ["" if unit.paragraph in left_out else text for unit, text in zip(units, texts)]
    found: dict[tuple[int, int, int], Passage] = {}

    def add(start: int, end: int, kind: str) -> None:
        parts = [Unit(units[i].kind, texts[i], units[i].paragraph) for i in range(start, end + 1)]
        if all(part.text for part in parts) and (start, end, -1) not in found and not mid_sentence(chunk, start):
            found[(start, end, -1)] = Passage(chunk, start, end, kind, _render(parts))

    for i, unit in enumerate(units):
        following = units[i + 1] if i + 1 < len(units) else None
        if unit.kind == "sentence":
            if leads_on(unit.text):
                # Only with what it introduces: the next block, or the rest of its sentence run
                # (after a dangling word, whatever comes next: "..., which provides" + the names);
                # words pointing ahead ("the settings below") only with the block they point at.
                colon = unit.text.rstrip().endswith(":")
                ahead = points_ahead(unit.text)
                if following is not None and (following.kind != "sentence" or (
                        not ahead and (following.paragraph == unit.paragraph or not colon))):
                    add(i, i + 1, "prose" if following.kind == "sentence" else following.kind)
                continue
            add(i, i, "prose")
        else:
            if unit.kind == "list" and (len(unit.text) > ITEM_LIST_CHARS or is_definition_list(unit.text.split("\n"))):
                # One step of a long method, one entry of a long list of facts or of a
                # glossary: quotable alone.
                items = list_items(unit.text)
                before = units[i - 1] if i > 0 else None
                lead = before.text if before is not None and before.kind == "sentence" and leads_on(before.text) else ""
                for n, item in enumerate(items if len(items) > 1 else ()):
                    if len(item.strip()) >= MIN_UNIT_CHARS:
                        found[(i, i, n)] = Passage(chunk, i, i, "item", item, part=n, lead=lead)
            if unit.kind == "table" and unit.text.count("\n") > 2:
                # The rows that hold the question's words, under the header: a fact of a
                # settings table ("which setting", "the default") is a row, not the table;
                # of a table of two or three rows too (the NeuroML row of the corpora's
                # ingest figures: fourth sets 84 -> 85, `kinds`, 2026-12-07).
                rows = _table_rows(unit.text, wanted)
                if rows and rows != texts[i]:
                    found[(i, i, -2)] = Passage(chunk, i, i, "rows", rows)
            previous = units[i - 1] if i > 0 else None
            if previous is not None and previous.kind == "sentence" and leads_on(previous.text):
                continue  # quoted with its lead-in above
            add(i, i, "rows" if unit.kind == "table" and texts[i] != unit.text else unit.kind)
    last = len(units) - 1
    if chunk.follow is not None and trails_lead_in(chunk) and texts[last]:
        block = _quotable(chunk.follow, wanted, front_matter)
        if block:  # the lead-in with the block it introduces, which opens the next chunk
            kind = "rows" if chunk.follow.kind == "table" and block != chunk.follow.text else chunk.follow.kind
            found[(last, last + 1, -1)] = Passage(chunk, last, last + 1, kind, f"{texts[last]}\n\n{block}",
                                                  next_id=chunk.follow_id)
    first = next((i for i, text in enumerate(texts) if text), -1)
    for passage in found.values():
        passage.opening = passage.start == first
    return list(found.values())


def headings_of(passage: Passage) -> str:
    """The heading chain ``passage`` stands under: its chunk's, then for one item of a
    list the list's lead-in (:attr:`Passage.lead`; "Kombucha > Directions", "Primary brew:"
    over "9. Let the jar sit ... for 10-14 days": the first brew's step)."""
    return f"{passage.chunk.headings}\n{passage.lead}" if passage.lead else passage.chunk.headings


def mid_sentence(chunk: Chunk, i: int) -> bool:
    """Whether unit ``i`` of ``chunk`` starts inside a sentence, so that no passage may
    start there: the first sentence of a paragraph opening in lower case
    (:func:`.text.continues_sentence`), or the chunk's first sentence when its document's
    previous chunk stops inside that sentence (:attr:`Chunk.resumed`). A lead-in before it
    still quotes it with itself ("..., which provides" + "testing.strategies.names, ...")."""
    unit = chunk.units[i]
    if unit.kind != "sentence" or (i and chunk.units[i - 1].paragraph == unit.paragraph):
        return False
    return (i == 0 and chunk.resumed) or continues_sentence(unit.text, chunk.paged)


# The chunker cuts a sentence longer than its budget at words (ingestion/chunk/chunker.py,
# _word_windows): the window before a cut fills its chunk, hundreds of characters at any
# budget. A short paragraph without a full stop ("More details to follow") is no cut.
CUT_CHARS = 300


def resumes(chunk: Chunk, previous_text: str | None) -> None:
    """Mark ``chunk`` :attr:`Chunk.resumed` when its document's previous chunk (its text)
    ends in a paragraph of at least :data:`CUT_CHARS` cut inside a sentence (a sentence
    split between chunks) and this chunk opens with prose."""
    blocks = segment((previous_text or "")[-READ_CHARS:])
    last = blocks[-1] if blocks else None
    chunk.resumed = (last is not None and last.kind == "text" and len(last.text) >= CUT_CHARS
                     and ends_mid_sentence(last.text) and bool(chunk.units) and chunk.units[0].kind == "sentence")


def trails_lead_in(chunk: Chunk) -> bool:
    """The chunk ends in a lead-in (:func:`.text.leads_on`: a sentence ending in ":" or in
    a dangling word, "..., which provides"): what it introduces opens the next chunk."""
    return bool(chunk.units) and chunk.units[-1].kind == "sentence" and leads_on(chunk.units[-1].text)


def following(chunk: Chunk, text: str | None, chunk_id: int | None) -> None:
    """Record the next chunk's first unit as ``chunk.follow`` when it is a block (a list,
    table or code block); a next chunk opening with prose leaves the colon (or dangling
    word) hanging, so the lead-in stays unquoted."""
    units = units_of((text or "")[:READ_CHARS])
    if units and units[0].kind != "sentence":
        chunk.follow, chunk.follow_id = units[0], chunk_id



def evidence(passage: Passage) -> str:
    """The passage's text as evidence: a code block's string literals are what it is
    given (an example question, a file name), not what it states; a quoted question is
    mentioned, not answered."""
    text = without_literals(passage.text) if passage.kind == "code" else passage.text
    return without_quoted_questions(text)


def overlap(a: Passage, b: Passage) -> bool:
    if a.part >= 0 and b.part >= 0 and a.part != b.part:
        return False  # two items of one list
    return a.chunk is b.chunk and a.start <= b.end and b.start <= a.end
