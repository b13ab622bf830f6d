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
from dataclasses import replace

from .chunker import ChunkDraft

_WORD = re.compile(r"\w+")
# Words matched at each end of a chunk, fewest last: Markdown and its source differ in
# markup (roles, links), so a shorter run is tried when a longer one is not found.
_RUNS = (4, 3, 2)


def _find(hay: list[str], needle: list[str], start: int, stop: int) -> int:
    """First index i in [start, stop) with hay[i:i+len(needle)] == needle, else -1."""
    size = len(needle)
    for i in range(max(start, 0), min(stop, len(hay) - size + 1)):
        if hay[i : i + size] == needle:
            return i
    return -1


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
    for draft in drafts:
        span = (draft.provenance or {}).get("lines")
        if not span or span[1] <= span[0]:
            out.append(draft)
            continue
        hay: list[str] = []
        line_of: list[int] = []
        for number in range(span[0], min(span[1], len(lines)) + 1):
            for word in _WORD.findall(lines[number - 1].lower()):
                hay.append(word)
                line_of.append(number)
        words = _WORD.findall(_body(draft.text).lower())
        first = last = -1
        for size in _RUNS:
            if len(words) >= size and first < 0:
                first = _find(hay, words[:size], after.get(tuple(span), 0), len(hay))
        if first >= 0:
            for size in _RUNS:
                if len(words) >= size:
                    at = _find(hay, words[-size:], first, len(hay))
                    if at >= 0:
                        last = at + size - 1
                        break
        if first < 0 or last < 0:
            out.append(draft)
            continue
        after[tuple(span)] = last + 1  # the next part of the block starts after this one
        narrowed = [line_of[first], line_of[last]]
        provenance = {**draft.provenance, "lines": narrowed}
        if "offset" in provenance:
            provenance["offset"] = starts[narrowed[0] - 1]
        out.append(replace(draft, provenance=provenance))
    return out
