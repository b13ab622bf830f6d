"""Model-free answers: the passage of the sources that states the answer, quoted and cited.

Each retrieved chunk offers candidate passages (:mod:`.candidates`: sentences, whole
lists, tables and code blocks, a lead-in with its block, table rows, list items).
Candidates are ranked by lexical evidence (the idf-weighted share of question terms in
the passage, terms in the chunk's headings counting :data:`HEADING_WEIGHT`; a code
block's string literals are not evidence: code quoting the question does not answer it), then the
best :data:`PREFILTER` by dense evidence (cosine similarity of the question to the
heading chain + passage, the way chunks are embedded), the chunk's retrieval score, the
question's shape (:mod:`.shapes`, :mod:`.fits`) and, for a table, a row keyed by what is
asked (:func:`.candidates.key_share`). The best passage is the answer,
reaching as far as :mod:`.reach` lets it; the passages following it are chosen by
:mod:`.followers`. No second one when the first defines what "what is X"
asks about (to "what is X and what is Y", the best passage defining Y follows the one
defining X). Passages of one chunk are quoted together, in their order there; to "how do I", an
instruction chosen under the section the question names is quoted first (unless it shares
the best passage's chunk). When no
passage reaches :data:`.followers.MIN_SIMILARITY` and none holds every question term, nothing is said
(the caller says that no source answers). Every passage is verbatim source text cited by its source's marker, placed
where it reads as part of the passage (:func:`with_marker`); a passage of another source
stating the same (:data:`SAME_STATEMENT`) is cited beside it, not quoted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence

import numpy as np

from asgiref.sync import sync_to_async

from domains import embeddings
from domains.retrieval import neighbour_chunks

from .candidates import (READ_CHARS, Chunk, Passage, candidates, evidence, following, headings_of, key_share, overlap,
                         resumes, trails_lead_in, units_of)
from .findings import finding, label_asked
from .fits import bonus, counts, defined, enumerates, in_place, instructs, under_heading
from .followers import MIN_SIMILARITY, SAYS_NOTHING_NEW, SECOND_CHARS, WIDE_TIE, Followers
from .reach import extend, lean_back, with_list
from .shapes import counted, shapes, subjects
from .stated import misspelt, states
from .text import list_items, matches, terms

# Score = cosine + LEXICAL_WEIGHT x lexical share + RETRIEVAL_WEIGHT x chunk score + shape.
LEXICAL_WEIGHT = 0.35
RETRIEVAL_WEIGHT = 0.15
# A table whose row is keyed by most of what is asked (its first cell holds KEY_ROW_SHARE or
# more of the question's idf weight) gains KEY_ROW_WEIGHT x that share: the row answers.
KEY_ROW_SHARE = 0.5
KEY_ROW_WEIGHT = 0.2
# A question term found only in the chunk's heading chain (or file name) counts this much.
HEADING_WEIGHT = 0.6
# An instruction (a command, code, numbered steps, an imperative sentence) under a section
# heading holding a term of a how-to question gains this much: the section is about the task.
INSTRUCTION_UNDER_TASK = 0.05
# Embedding is the answer's main cost (about 60 ms per passage at machine load 13, 10 ms
# idle): only the best PREFILTER by the cheap score (lexical + retrieval + shape) are
# embedded, each cut to EMBED_CHARS (heading chain first: it carries the topic), through
# the vector cache (a popular chunk's passages are embedded once per process). 12, not 10:
# with an item's lead-in as its heading, the first brew's step ranked 11th by the cheap
# score (first / second sets 114 / 59 -> 115 / 59, `kinds`, 2026-12-07); 16 or 20 gained
# nothing before.
PREFILTER = 12
EMBED_CHARS = 320
# Passages longer than this lose LENGTH_PENALTY per further LENGTH_STEP characters.
LENGTH_FREE = 450
LENGTH_STEP = 300
LENGTH_PENALTY = 0.03
# A passage of another source whose text embeds within SAME_STATEMENT (cosine) of a quoted
# passage's, holds the question terms it holds and scores within WIDE_TIE of it states the
# same (a page and the settings table, a tool's page and the list of tools): it is cited
# beside the quoted one, not quoted (:meth:`Composer.corroborate`). On bench/questions'
# first and second sets every pair at 0.84 or above was one statement in two files (the
# same sentence or table rows, "NeuroML is an INCF endorsed standard." / "NeuroML is
# endorsed by the INCF, and is also an official COMBINE standard."); pairs at 0.75-0.8
# were pointers to other pages and two workshops' themes.
SAME_STATEMENT = 0.84


class Composer(Followers):
    """The answer to ``question`` from ``sources``: passages and their citations.

    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :param sources: numbered sources (``number``; ``chunks`` best first, each with
        ``text``, ``score`` in [0, 1] and optionally ``headings``), best source first;
        a source may also carry ``file_name`` and ``metadata`` (its ``title`` is never
        quoted as an answer).
    :param question: the user's question (its shape: a year, a list, how-to ...).
    :param search_text: a follow-up together with the question(s) before it, whose
        terms the passage should hold too; "" = the question alone.
    """

    def __init__(self, query_vector: np.ndarray, sources: Sequence, question: str, search_text: str = ""):
        self.query_vector = query_vector
        self.question = question
        self.shapes = shapes(question)
        self.wanted = terms(search_text or question)
        asked = self.wanted | terms(question)
        self.asked = (asked, sorted(asked), max(map(len, asked), default=0))
        self.counted = counted(question) & self.wanted
        self.chunks: list[Chunk] = []
        self.files = {source.number: str(getattr(source, "file_name", "")) for source in sources}
        # What a source is besides its text: its domain's name, file name, title and authors
        # (a passage of "klea-docs" is about Klea; of Dijkstra's paper, about Dijkstra).
        self.about = {source.number: about(source) for source in sources}
        for source in sources:
            title = (getattr(source, "metadata", None) or {}).get("title") or ""
            for chunk in source.chunks:
                headings = " > ".join(getattr(chunk, "headings", None) or ())
                label = f"{headings} ({getattr(source, 'file_name', '')})" if headings else getattr(source, "file_name", "")
                self.chunks.append(
                    Chunk(source.number, len(self.chunks), float(chunk.score or 0.0), label, units_of(chunk.text[:READ_CHARS]),
                          getattr(chunk, "chunk_id", None), getattr(chunk, "document_id", None) or None,
                          title=str(title), section=(getattr(chunk, "headings", None) or [""])[-1],
                          paged=str(getattr(source, "file_name", "")).lower().endswith(".pdf"))
                )

    def _idf(self) -> dict[str, float]:
        units = [unit.text for chunk in self.chunks for unit in chunk.units] or [""]
        found = [matches(self.wanted, text) for text in units]
        self.in_units = set().union(*found)  # the question terms some source's text holds
        return {t: float(np.log(1 + len(units) / (1 + sum(t in hit for hit in found)))) for t in self.wanted}

    def offered(self, idf: dict[str, float]) -> list[Passage]:
        """Every candidate passage with its ``found`` terms, ``lexical`` share and ``cheap``
        score (lexical + retrieval + shape), best cheap score first."""
        total = sum(idf.values()) or 1.0
        offered: list[Passage] = []
        # items per list block, split once per list, not once per item (quadratic in a
        # long list's items: a chunk of 1,000 items took 2 s)
        item_counts: dict[tuple[int, int], int] = {}

        def items_of(chunk: Chunk, start: int) -> int:
            key = (id(chunk), start)
            if key not in item_counts:
                item_counts[key] = len(list_items(chunk.units[start].text))
            return item_counts[key]

        for chunk in self.chunks:
            heading_terms = matches(self.wanted, chunk.headings)
            task_section = self.task_section(chunk)
            for passage in candidates(chunk, self.wanted, "name" in self.shapes):
                if passage.kind == "item" and "listing" in self.shapes and not enumerates(passage.text):
                    continue  # "which ... are" asks for the whole list, never a few of its items (one listing some is one)
                passage.found = matches(self.wanted, evidence(passage))
                passage.says_nothing = passage.kind in ("prose", "item") and not self.says_more(passage)
                if counts(self.shapes, passage.kind, passage.text):
                    # a list of three items is "the three rules" the question counts, rarely in those words
                    passage.found |= self.counted
                headed = heading_terms | matches(self.wanted, passage.lead) if passage.lead else heading_terms
                in_heading = headed - passage.found
                passage.lexical = (sum(idf[t] for t in passage.found) + HEADING_WEIGHT * sum(idf[t] for t in in_heading)) / total
                passage.cheap = (
                    LEXICAL_WEIGHT * passage.lexical + RETRIEVAL_WEIGHT * chunk.score
                    + bonus(self.shapes, passage.kind, passage.text, passage.opening)
                    + (INSTRUCTION_UNDER_TASK if task_section and instructs(passage.kind, passage.text) else 0.0)
                    + (in_place(self.shapes, passage.part, items_of(chunk, passage.start)) if passage.kind == "item" else 0.0)
                    + under_heading(self.shapes, passage.kind, chunk.section)
                    + (finding(passage.text) + label_asked(passage.text, self.wanted) if chunk.paged else 0.0)
                    + (self.keyed(passage.text, idf) if passage.kind in ("rows", "table") else 0.0)
                    + (SAYS_NOTHING_NEW if passage.says_nothing else 0.0)
                )
                offered.append(passage)
        offered.sort(key=lambda p: (-p.cheap, p.chunk.rank, p.start))
        return offered

    def keyed(self, table: str, idf: dict[str, float]) -> float:
        """The fit of a table whose row is keyed by what is asked (:func:`.candidates.key_share`)."""
        share = key_share(table, self.wanted, idf)
        return KEY_ROW_WEIGHT * share if share >= KEY_ROW_SHARE else 0.0

    def choose(self) -> list[Passage]:
        """The passages of the answer, in answer order ([] = the sources do not answer)."""
        idf = self._idf()
        total = sum(idf.values()) or 1.0
        offered = self.offered(idf)
        if not offered:
            return []
        kept = offered[:PREFILTER]
        texts = [embedded(p) for p in kept]
        cosines = embeddings.embed_cached(texts) @ self.query_vector
        for passage, cosine in zip(kept, cosines):
            passage.cosine = float(cosine)
            overlong = max(0, len(passage.text) - LENGTH_FREE)
            passage.score = passage.cosine + passage.cheap - LENGTH_PENALTY * (overlong / LENGTH_STEP)
        # A generic question matches no passage closely: it was routed to the only domain.
        # Nor does one naming its subject "it" ("How do I upgrade it?"): a passage holding
        # every word it asks about (in its text or its chunk's headings) answers it.
        if (max(p.cosine for p in kept) < MIN_SIMILARITY and "generic" not in self.shapes
                and not any(self.holds_all(p) for p in kept)):
            return []
        kept.sort(key=lambda p: (-p.score, p.chunk.rank, p.start))
        best = self.grown(with_list(lean_back(extend(kept[0], self.wanted, idf))))
        chosen = [best]
        first = defined(self.shapes, best.text)
        pair = len(subjects(self.shapes)) > 1
        second = None
        if first and pair:
            # "What is X and what is Y?": the best passage defining Y follows the one defining X
            # (its cosine to the whole question may be low: it answers half of it).
            second = next((p for p in kept[1:] if defined(self.shapes, p.text) not in ("", first)
                           and not overlap(best, p) and len(best.text) + len(p.text) <= SECOND_CHARS), None)
        if second is None and "generic" not in self.shapes and (pair or not first or "reason" in self.shapes):
            # A passage that defines what "what is X" asks about says it all (but "why").
            second = self._second(best, kept[1:], idf, total)
        if second is not None:
            # it carries on as the best one does, but never into it (the same sentence twice)
            grown = self.grown(lean_back(extend(second, self.wanted, idf)))
            chosen.append(grown if not overlap(best, grown) else self.grown(second))
            siblings = self._siblings(chosen, kept[1:])
            third = None if siblings else self._third(chosen, kept[1:], idf, total)
            chosen.extend(siblings or ([lean_back(third)] if third is not None else []))
        chosen = self.steps_between(chosen)
        if "generic" not in self.shapes and not self.stated(chosen, idf):
            return []
        self.corroborate(chosen, kept)
        return in_reading_order(self.instruction_first(chosen))

    def stated(self, chosen: Sequence[Passage], idf: dict[str, float]) -> bool:
        """Whether the ``chosen`` passages state something about what the question asks
        (:func:`.stated.states`): the question terms their text, headings and sources hold,
        and their best cosine. A follow-up's own words are what it asks ("How do I ask it
        something from the terminal?" after another question): the words of the question
        before it, searched with it, are context the passage need not repeat."""
        held: set[str] = set()
        for passage in chosen:
            held |= passage.found | matches(self.wanted, f"{headings_of(passage)}\n{self.about[passage.chunk.number]}")
        # a name spelled otherwise ("tabouli" for the recipe "Tabouleh") is held too, when no
        # source holds the word as written
        held |= misspelt(self.wanted - held - self.in_units,
                         "\n".join(f"{headings_of(p)}\n{self.about[p.chunk.number]}" for p in chosen))
        cosine = max(passage.cosine for passage in chosen)
        asked = terms(self.question) & self.wanted or self.wanted
        return states(self.question, asked, idf, cosine, held, MIN_SIMILARITY, "listing" in self.shapes)

    def task_section(self, chunk: Chunk) -> bool:
        """Whether ``chunk`` lies in the section a how-to question names ("How do I X?": a
        question term in its last heading, as "An existing PostgreSQL"): the section titled
        by the task holds its instructions."""
        return "howto" in self.shapes and bool(matches(self.wanted, chunk.section))

    def instruction_first(self, chosen: list[Passage]) -> list[Passage]:
        """``chosen`` with, to a how-to question, the first instruction (:func:`.fits.instructs`)
        under the section the question names (:meth:`task_section`) moved first when the best
        passage is no instruction: the two scored alike (a passage follows the best only
        when it scores near it), and a description merely sharing the question's words
        ("This installs everything ... starts the embedded PostgreSQL") is not what a user
        asking how wants to read first. Otherwise ``chosen`` unchanged. (Passages of one
        chunk are then still read in their order there: :func:`in_reading_order`.)"""
        if not chosen or instructs(chosen[0].kind, chosen[0].text):
            return chosen
        first = next((p for p in chosen[1:] if self.task_section(p.chunk) and instructs(p.kind, p.text)), None)
        return chosen if first is None else [first, *(p for p in chosen if p is not first)]

    def corroborate(self, chosen: Sequence[Passage], kept: Sequence[Passage]) -> None:
        """Set each chosen passage's ``also``: a passage of ``kept`` from a file none of
        ``chosen`` comes from that states the same (two files saying one fact: a page and the
        settings table, a guide and its glossary), at most one per passage and each file
        once, best scored first (one file in two stores is cited once). A
        passage states the same when it holds every question term the chosen one holds,
        scores within :data:`WIDE_TIE` of it, and its text's embedding is within
        :data:`SAME_STATEMENT` (cosine) of the chosen one's."""
        sources = {passage.chunk.number for passage in chosen}
        files = {self.files.get(number) for number in sources}
        pairs = [(passage, other) for passage in chosen for other in kept
                 if other.chunk.number not in sources and self.files.get(other.chunk.number) not in files
                 and other.score >= passage.score - WIDE_TIE and other.found >= passage.found]
        if not pairs:
            return
        texts = list(dict.fromkeys(evidence(p)[:EMBED_CHARS] for pair in pairs for p in pair))
        vectors = dict(zip(texts, embeddings.embed_cached(texts)))
        for passage, other in sorted(pairs, key=lambda pair: -pair[1].score):
            if passage.also or self.files.get(other.chunk.number) in files:
                continue
            if float(vectors[evidence(passage)[:EMBED_CHARS]] @ vectors[evidence(other)[:EMBED_CHARS]]) >= SAME_STATEMENT:
                passage.also.append(other)
                files.add(self.files.get(other.chunk.number))

    def grown(self, passage: Passage) -> Passage:
        """``passage`` with the question terms its whole text holds found: the sentence it
        leans back to or the list it leads into counts as said when the next passage is
        judged by what it adds ("Without `DATABASE_URL` ..." before "... stopped with
        `make stop-db`" already says "database")."""
        passage.found = passage.found | matches(self.wanted, evidence(passage))
        return passage

    def follow(self, nexts: dict[int, tuple[int, str]]) -> None:
        """Give each chunk ending in a lead-in (a colon, a dangling word) the block opening
        its document's next chunk (``nexts``: chunk id -> (next chunk's id, text), :func:`domains.retrieval.neighbour_chunks`)."""
        for chunk in self.chunks:
            if chunk.chunk_id in nexts and trails_lead_in(chunk):
                following(chunk, nexts[chunk.chunk_id][1], nexts[chunk.chunk_id][0])

    def resume(self, previous: dict[int, tuple[int, str]]) -> None:
        """Mark each chunk whose document's previous chunk (``previous``: chunk id ->
        (previous chunk's id, text), :func:`domains.retrieval.neighbour_chunks`) stops inside a sentence
        (:func:`.candidates.resumes`): no passage starts with that sentence's end."""
        for chunk in self.chunks:
            if chunk.chunk_id in previous:
                resumes(chunk, previous[chunk.chunk_id][1])

    async def pieces(self, cite: Callable[..., str]) -> AsyncIterator[str]:
        """The chosen passages as text pieces, verbatim, each followed by
        ``cite(source number, quoted chunk ids, passages)`` (a run of passages of one
        chunk cited once, with that chunk's id and the run's texts, then each passage of
        another source stating the same as one of them, :meth:`corroborate`, with its own
        chunk's id and text: ``"... [1][2]"``; passages of two chunks
        of one source each get their own marker, so that each marker opens the chunk its
        passage came from). Yields nothing when no passage answers. Scoring embeds
        passages only (no database), so any worker thread will do; a passage running on
        into the next chunk cites both chunks' ids under one marker."""
        # Only chunks that name their stored document (a user-written knowledge's results
        # may number themselves): their neighbours are read from the database.
        stored = [chunk for chunk in self.chunks if chunk.chunk_id is not None and chunk.document_id]
        leads = {chunk.chunk_id: chunk.document_id for chunk in stored if trails_lead_in(chunk)}
        opening_prose = {chunk.chunk_id: chunk.document_id for chunk in stored
                         if chunk.units and chunk.units[0].kind == "sentence"}
        if leads or opening_prose:
            nexts, previous = await sync_to_async(neighbour_chunks)(leads, opening_prose)
            self.follow(nexts)
            self.resume(previous)
        chosen = await asyncio.to_thread(self.choose)
        run: list[str] = []
        quoted: list[int | None] = []
        for index, passage in enumerate(chosen):
            if index:  # prose runs on after a full stop; a list, table or code block stands apart
                previous = chosen[index - 1]
                runs_on = passage.kind == previous.kind == "prose" and previous.text.rstrip()[-1:] in ".!?)"
                yield " " if runs_on else "\n\n"
            run.append(passage.text)
            quoted.append(passage.chunk.chunk_id)
            if passage.next_id is not None:  # its block opens the next chunk
                quoted.append(passage.next_id)
            after = chosen[index + 1] if index + 1 < len(chosen) else None
            if after is None or after.chunk is not passage.chunk:
                marker = cite(passage.chunk.number, list(dict.fromkeys(quoted)), run) + "".join(
                    cite(other.chunk.number, [other.chunk.chunk_id], [other.text])
                    for done in chosen[:index + 1] if done.chunk is passage.chunk for other in done.also)
                before, marked = with_marker(passage.text, marker)
                yield before
                yield marked
                run, quoted = [], []
            else:
                yield passage.text


def about(source) -> str:
    """The words naming ``source`` besides its text: domain, file name, title, authors."""
    metadata = getattr(source, "metadata", None) or {}
    authors = metadata.get("authors") or []
    authors = " ".join(str(a) for a in authors) if isinstance(authors, list) else str(authors)
    return " ".join([str(getattr(source, "domain", "") or ""), str(getattr(source, "file_name", "") or ""),
                     str(metadata.get("title") or ""), authors])


def embedded(passage: Passage) -> str:
    """The text of ``passage`` whose cosine to the question is its dense evidence: its
    heading chain (an item's list's lead-in too, :func:`.candidates.headings_of`), then its
    evidence text, cut to :data:`EMBED_CHARS`."""
    return f"{headings_of(passage)}\n{evidence(passage)}"[:EMBED_CHARS]


def in_reading_order(chosen: Sequence[Passage]) -> list[Passage]:
    """``chosen`` with the passages of one chunk together and in their order there (one
    section reads in its own order), the chunks in the order their first passage was chosen."""
    order: list[Chunk] = []
    for passage in chosen:
        if not any(passage.chunk is chunk for chunk in order):
            order.append(passage.chunk)
    rank = [next(i for i, chunk in enumerate(order) if passage.chunk is chunk) for passage in chosen]
    return [passage for _, passage in sorted(zip(rank, chosen), key=lambda pair: (pair[0], pair[1].start, pair[1].part))]


def with_marker(text: str, marker: str) -> tuple[str, str]:
    """``text`` with its citation ``marker`` where it reads as part of it, as (the text
    before the marker, the marker and the rest): after prose or a list's last item
    (``"... item [1]"``); in the lead-in of a table or code block (``"use pip [1]:"``), or
    in a paragraph of its own after the block when it has none (in Markdown a line under
    a table is one more row of it, and inside a cell the marker would read as the cell's
    value). Two parts, so that the text streams before the marker is known."""
    text = text.rstrip()
    if text.endswith("```") or text.rpartition("\n")[2].lstrip().startswith("|"):
        lead, gap, block = text.partition("\n\n")
        if gap and lead.endswith(":") and not lead.startswith(("```", "|")):
            return lead[:-1], f" {marker}:{gap}{block}"
        return text, f"\n\n{marker}"
    return text, f" {marker}"
