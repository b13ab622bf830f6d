"""Where a passage an answer quotes is printed on a PDF page: the quote locator of the
source view (docs/api.md, "The source view").

The chunk's stored line boxes are laid over the page's text layer
(:func:`domains.sources.text_layer`), the glyphs under each box make that line's words,
and the quoted words are found among them; the answer's quote is then highlighted glyph
to glyph instead of the whole chunk.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ingestion.convert.pdf_lines import PDFIUM_HYPHEN

from .models import Chunk
from .sources import text_layer, verified_file

# Quoted text and the text layer are compared word by word, lower-cased: punctuation,
# Markdown marks and line breaks aside.
_WORD = re.compile(r"[^\W_]+")
# Punctuation that closes a quoted word: highlighted with it.
_CLOSING = set(".,;:!?)]}\"'\u201d\u2019%")
# A glyph is under a stored line box when its centre is inside it, give or take this
# (fractions of the page; stored boxes are rounded to 4 places).
BOX_TOLERANCE = 0.0002
# A passage found only by its first and last words may span at most this many words
# more than twice its own (as the text view's rule in source.js).
ANCHOR_SLACK = 20


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


@dataclass
class _Word:
    """A word of the text layer: its text and, per line it is printed on (two for a word
    hyphenated at a line end), (line index, left, right) as fractions of the page width."""

    text: str
    spans: list[tuple[int, float, float]]
    hyphenated: bool = False  # the line breaks inside it: it may read as this + the next


@dataclass(frozen=True)
class _Layer:
    """A page's text layer ready for finding the glyphs under a line box: per glyph, in
    content order, its character, its left and right edge and centre (fractions of the
    page width) and how many spaces or line breaks come before it; and the glyphs'
    indexes by the height of their centres (fractions of the page from the top).

    ``_Layer.of(*text_layer(path, page)).glyphs(box)``
    """

    text: str
    left: array
    right: array
    centre: array
    breaks: array
    by_height: array
    heights: array

    @classmethod
    def of(cls, chars: list, width: float, height: float) -> _Layer:
        """:param chars, width, height: as :func:`~ingestion.convert.pdf_lines.upright_chars`
        gives them (points)."""
        text, left, right, centre, breaks, ys = [], array("d"), array("d"), array("d"), array("l"), []
        spaces = 0
        for item in chars:
            if isinstance(item, str):
                spaces += 1
                continue
            ch, x0, x1, y0, y1 = item
            text.append(ch)
            left.append(x0 / width)
            right.append(x1 / width)
            centre.append((x0 + x1) / 2 / width)
            breaks.append(spaces)
            ys.append(1 - (y0 + y1) / 2 / height)
        by_height = sorted(range(len(ys)), key=ys.__getitem__)
        return cls("".join(text), left, right, centre, breaks, array("l", by_height),
                   array("d", (ys[index] for index in by_height)))

    def glyphs(self, box: list) -> list[tuple[str, float, float] | None]:
        """The glyphs whose centres lie in the line ``box`` ([left, top, right, bottom],
        fractions, top-left origin), in content order, as (character, left, right) in
        fractions of the width; None where a space or a line break comes between two."""
        left, top, right, bottom = box
        first = bisect_left(self.heights, top - BOX_TOLERANCE)
        end = bisect_right(self.heights, bottom + BOX_TOLERANCE)
        inside = sorted(index for index in self.by_height[first:end]
                        if left - BOX_TOLERANCE <= self.centre[index] <= right + BOX_TOLERANCE)
        glyphs: list = []
        for index in inside:
            if glyphs and self.breaks[index] > self.breaks[previous]:
                glyphs.append(None)
            glyphs.append((self.text[index], self.left[index], self.right[index]))
            previous = index
        return glyphs


# Pages whose text layer is kept per process, ready for finding quotes: about 50 bytes a
# glyph, so at most about 11 MB of dense pages (7,000 glyphs).
LAYER_CACHE_PAGES = 32


@lru_cache(maxsize=LAYER_CACHE_PAGES)
def _cached_layer(content_hash: str, path: Path, page: int) -> _Layer | None:
    """:func:`_page_layer` of a file whose bytes hash to ``content_hash`` (the key)."""
    return _page_layer(path, page)


def _page_layer(path: Path, page: int) -> _Layer | None:
    layer = text_layer(path, page)
    return None if layer is None else _Layer.of(*layer)


def _layer_words(lines: list[list]) -> list[_Word]:
    """The words of the chunk's lines (each a :meth:`_Layer.glyphs` list), in order."""
    words = []
    for index, glyphs in enumerate(lines):
        text, where = "", []
        for glyph in glyphs:
            piece = " " if glyph is None else unicodedata.normalize("NFKC", glyph[0].replace(PDFIUM_HYPHEN, "-"))
            text += piece
            where += [glyph] * len(piece)
        found = []
        for match in _WORD.finditer(text):
            end = match.end()
            while end < len(text) and text[end] in _CLOSING and where[end] is not None:
                end += 1  # "cortex." and "(Fig. 2)." are highlighted with their stops and brackets
            found.append(_Word(match.group().lower(), [(index, where[match.start()][1], where[end - 1][2])]))
        if found and text.rstrip().endswith("-"):
            found[-1].hyphenated = True
        words += found
    return words


def _match(hay: list[_Word], needle: list[str], start: int) -> int | None:
    """The index after the last hay word when ``needle`` reads on from ``hay[start]``
    (a hyphenated word matches itself or itself joined to the next), else None."""
    at = start
    for word in needle:
        if at < len(hay) and hay[at].text == word:
            at += 1
        elif at + 1 < len(hay) and hay[at].hyphenated and hay[at].text + hay[at + 1].text == word:
            at += 2
        else:
            return None
    return at


def _find(hay: list[_Word], needle: list[str]) -> tuple[int, int] | None:
    """The hay words ``[first, end)`` that read as ``needle``: the whole of it, else its
    first and last four words not far apart (a formula or a footnote mark between them
    reads differently on the text layer)."""
    for start in range(len(hay)):
        end = _match(hay, needle, start)
        if end is not None:
            return start, end
    size = min(4, len(needle))
    for start in range(len(hay)):
        head = _match(hay, needle[:size], start)
        if head is None:
            continue
        for last in range(start + 1, min(len(hay), start + 2 * len(needle) + ANCHOR_SLACK)):
            end = _match(hay, needle[-size:], last)
            if end is not None:
                return start, end
    return None


def quoted_boxes(chunk: Chunk, passages: Sequence[str]) -> list[list]:
    """The boxes of the quoted ``passages`` of a PDF chunk on its pages, for a highlight
    of what an answer quotes instead of the whole chunk.

    The page's text layer is read again as ingestion read it
    (:func:`domains.sources.text_layer`; the LAYER_CACHE_PAGES pages used last are kept);
    the glyphs under each stored line box of the chunk make that line's words, and each
    passage is found in those words in chunk order (a word hyphenated across two lines matches both halves). Every line the
    passage covers gives a box, one it starts or ends in cut at that glyph's edge.

    :returns: ``[[page, left, top, right, bottom], ...]`` as the chunk's ``boxes``
        (fractions of the page, origin top-left), one per line, in chunk order; ``[]`` when there is
        no passage with words, the chunk records no boxes, a box is not a line of the
        text layer (an OCR page, docling's item boxes) or a passage is not found: the
        chunk is highlighted then.
    :raises SourceUnavailable: the file is missing or changed since ingestion.
    """
    stored = (chunk.provenance or {}).get("boxes") or []
    needles = [words for words in (_words(p) for p in passages) if words]
    if not stored or not needles:
        return []
    document = chunk.document
    path = verified_file(document)  # also when the page is cached: a changed file is said so
    pages = {number: _cached_layer(document.content_hash, path, number) if document.content_hash
             else _page_layer(path, number) for number in {box[0] for box in stored}}
    if None in pages.values():
        return []
    lines = [pages[page].glyphs(box) for page, *box in stored]
    if not all(lines):
        return []  # a box with no glyph of the text layer under it: OCR, an image
    hay = _layer_words(lines)
    covered: dict[int, tuple[float, float]] = {}  # line index -> (left, right)
    for needle in needles:
        span = _find(hay, needle)
        if span is None:
            return []
        first, last = hay[span[0]].spans[0], hay[span[1] - 1].spans[-1]
        for index in range(first[0], last[0] + 1):
            _, left, _, right, _ = stored[index]
            left = first[1] if index == first[0] else left
            right = last[2] if index == last[0] else right
            known = covered.get(index)
            covered[index] = (min(left, known[0]), max(right, known[1])) if known else (left, right)
    return [[stored[index][0], round(left, 4), stored[index][2], round(right, 4), stored[index][4]]
            for index, (left, right) in sorted(covered.items())]
