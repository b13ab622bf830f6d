"""A chunk's source lines narrowed to its own text (docs/ingestion.md, "Provenance").

A converter records the lines of a whole block: every entry of a reST glossary or a
Markdown definition list, every part of a split table, gets the lines of the whole list
or table ([20, 298] for each term of a glossary), and the source view highlighted all of
it. Here each chunk's lines become those of its own text: from the line holding its first
words to the line holding its last ones, searched inside the block's lines after the
part before it (an entry that names the next term is not that term's start). A
table part starts at its first body row (its repeated header is not where it is).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import replace

from domains.sources import converted_text

from .chunker import ChunkDraft

_WORD = re.compile(r"\w+")
# Words matched at each end of a chunk, fewest last: Markdown and its source differ in
# markup (roles, links), so a shorter run is tried when a longer one is not found.
_RUNS = (4, 3, 2)


class _Words:
    """The words of one block's source lines, searched for runs of words.

    Built once per block: every part of a split table searches the same block, and
    rebuilding its words (or matching word by word in Python) for each part made
    ``narrow_lines`` quadratic in the table's rows (4,000 rows: 4 s).
    """

    def __init__(self, lines: list[str], first: int, last: int):
        self.line_of: list[int] = []
        words: list[str] = []
        for number in range(first, last + 1):
            for word in _WORD.findall(lines[number - 1].lower()):
                words.append(word)
                self.line_of.append(number)
        # "\0" never occurs in a \w word, so a run matches at word boundaries only
        self.joined = "\0" + "\0".join(words) + "\0"
        self.at = [0]  # at[i]: index in joined of the "\0" before word i
        for word in words:
            self.at.append(self.at[-1] + len(word) + 1)

    def __len__(self) -> int:
        return len(self.line_of)

    def find(self, run: list[str], start: int) -> int:
        """First word index i >= start where the words ``run`` follow, else -1."""
        found = self.joined.find("\0" + "\0".join(run) + "\0", self.at[min(max(start, 0), len(self))])
        return -1 if found < 0 else bisect_left(self.at, found)


def _body(text: str) -> str:
    """The chunk's text without a leading table header (header row + separator row)."""
    lines = text.split("\n")
    if len(lines) > 2 and lines[0].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[1].strip()):
        return "\n".join(lines[2:])
    return text


def narrow_lines(drafts: list[ChunkDraft], source: str) -> list[ChunkDraft]:
    """``drafts`` with each ``provenance["lines"]`` (and ``offset``) narrowed to the
    source lines of the chunk's own text (1-based, within the recorded span); a chunk
    whose first or last words are not found keeps the span it had.

    :param source: the source file's text (the lines the converter numbered).
    """
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    out = []
    after: dict[tuple, int] = {}  # block span -> the word after the last chunk's text in it
    blocks: dict[tuple, _Words] = {}
    for draft in drafts:
        span = (draft.provenance or {}).get("lines")
        if not span or span[1] <= span[0]:
            out.append(draft)
            continue
        key = tuple(span)
        if key not in blocks:
            blocks[key] = _Words(lines, span[0], min(span[1], len(lines)))
        hay = blocks[key]
        words = _WORD.findall(_body(draft.text).lower())
        first = last = -1
        for size in _RUNS:
            if len(words) >= size and first < 0:
                first = hay.find(words[:size], after.get(key, 0))
        if first >= 0:
            for size in _RUNS:
                if len(words) >= size:
                    at = hay.find(words[-size:], first)
                    if at >= 0:
                        last = at + size - 1
                        break
        if first < 0 or last < 0:
            out.append(draft)
            continue
        after[key] = last + 1  # the next part of the block starts after this one
        narrowed = [hay.line_of[first], hay.line_of[last]]
        provenance = {**draft.provenance, "lines": narrowed}
        if "offset" in provenance:
            provenance["offset"] = starts[narrowed[0] - 1]
        out.append(replace(draft, provenance=provenance))
    return out


def converted_lines(drafts: list[ChunkDraft]) -> list[ChunkDraft]:
    """``drafts`` of a file shown as the text it was converted to (a Word document:
    :func:`domains.sources.converted_text`), each with ``provenance["lines"]``, its
    lines in that text, as the source view counts them."""
    _, spans = converted_text((d.headings, d.text) for d in drafts)
    return [replace(d, provenance={**(d.provenance or {}), "lines": list(span)}) for d, span in zip(drafts, spans)]
