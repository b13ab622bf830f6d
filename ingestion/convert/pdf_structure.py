"""Document structure from PDF paragraphs: page furniture, title, section headings.

Model-free rules, measured against the body text (the character-weighted most common
font size):

- furniture: lines in the top or bottom 15 % of a page whose text (digits masked)
  repeats on at least 30 % of the pages (running heads), and lone page numbers;
- title: the largest paragraph of the first page, when clearly larger than the body;
- heading: a short paragraph (at most 3 lines, 160 characters, no final period) that
  is larger than the body (by 12 %; 40 % for sizes guessed from glyph heights; 25 % for
  OCR lines, which have no bold), or entirely bold, or in capitals, or numbered like
  ``2.1 Neurons`` / ``IV. RESULTS`` and bold or larger (for OCR lines, by 12 %); where
  the size is a guess (OCR, glyph heights), its words open with a capital and one has
  four letters or more (a formula OCRed large, "Bes UL", is none);
- list: consecutive body paragraphs that are list items (bulleted, or numbered 1., 2.,
  ... in sequence) under one heading chain are one list block, an item a line, bullets
  written ``- ``, so chunk text holds a Markdown list (docs/ingestion.md, "Chunk text");
- level: from the numbering depth (``2`` -> 1, ``2.1`` -> 2, ``II.`` -> 1, ``A.`` ->
  2); unnumbered headings by style rank (larger, then capitals, then bold first).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from statistics import median

from .base import Block, LineBox
from .pdf_layout import Paragraph, item_number, line_spans, merge_continued, page_paragraphs
from .pdf_lines import Line
from .textclean import BULLET

FURNITURE_ZONE = 0.15
FURNITURE_SHARE = 0.30
LARGER = 1.12
TITLE_LARGER = 1.15
ESTIMATED_LARGER = 1.4  # sizes guessed from glyph heights are noisy
OCR_LARGER = 1.25  # OCR sizes come from several words' heights: steadier, but no bold to help
MAX_HEADING_CHARS = 160
MAX_LEVEL = 4

_PAGE_NUMBER = re.compile(r"^(page\s*)?[\divxlc]+(\s*(of|/)\s*\d+)?$|^[\d\s\-–]+$", re.I)
_NUMBERED = re.compile(r"^(?P<num>(\d+\.)*\d+\.?|[IVXLC]+\.|[A-Z]\.)\s+(?P<rest>\S.*)$")
_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[IVXLC]+\.\s")
_LETTER = re.compile(r"^[A-Z]\.\s")
_CAPTION = re.compile(r"^(table|tab\.|fig\.?|figure|scheme|box|algorithm|listing|plate)\s*[\dIVX]", re.I)
_MATH = re.compile(r"[=≪≫±∑∫→←≤≥<>|{}\[\]^_\\∗∈∀∃√∂]")
_NUMBER = re.compile(r"^(\d+(\.\d+)*|[IVXLC]+)[.:)]?$")  # "Chapter 2", "Part IV"
_WORD = re.compile(r"^[^\W\d_][\w'’-]*[.,:;?!)]?$")
# Section names that end a paper's front matter (authors, affiliations) on page one.
FRONT_MATTER_END = ("abstract", "summary", "introduction", "background", "keywords", "key words", "contents", "preface")


def _mask(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def drop_furniture(
    pages: list[list[Line]], heights: list[float], printed: frozenset[int] = frozenset()
) -> list[list[Line]]:
    """Remove running heads/feet and page numbers from every page. A line set clearly
    larger than the other copies of its text stays: a title that the running heads repeat.

    :param printed: indexes of pages whose zones are measured on the printed area (the
        extent of their lines) instead of the page: scans, where the page image often
        sits with a wide blank border inside the PDF page.
    """
    frames = [
        _printed_frame(lines) if index in printed and lines else (0.0, height)
        for index, (lines, height) in enumerate(zip(pages, heights))
    ]
    counts: Counter = Counter()
    sizes: dict[str, list[float]] = {}
    for lines, frame in zip(pages, frames):
        seen = {}
        for line in lines:
            if _in_margin(line, frame):
                seen.setdefault(_mask(line.text), line.size)
        counts.update(seen.keys())
        for text, size in seen.items():
            sizes.setdefault(text, []).append(size)
    repeated = {
        text: median(sizes[text]) for text, n in counts.items() if n >= max(2, FURNITURE_SHARE * len(pages))
    }

    def furniture(line: Line) -> bool:
        text = _mask(line.text)
        if text in repeated:
            return line.size < repeated[text] * TITLE_LARGER
        return bool(_PAGE_NUMBER.match(line.text.strip()))

    return [
        [line for line in lines if not (_in_margin(line, frame) and furniture(line))]
        for lines, frame in zip(pages, frames)
    ]


def _printed_frame(lines: list[Line]) -> tuple[float, float]:
    return min(line.y0 for line in lines), max(line.y1 for line in lines)


def _in_margin(line: Line, frame: tuple[float, float]) -> bool:
    bottom, top = frame
    zone = FURNITURE_ZONE * (top - bottom)
    return line.y0 > top - zone or line.y1 < bottom + zone


def body_size(pages: list[list[Line]]) -> float:
    """The character-weighted most common font size (0.5 pt steps); 10 without text."""
    sizes: Counter = Counter()
    for lines in pages:
        for line in lines:
            sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def _is_caps(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    return len(letters) >= 4 and sum(ch.isupper() for ch in letters) >= 0.8 * len(letters)


def numbering_level(text: str) -> int | None:
    """``"2.1 Neurons"`` -> 2, ``"IV. RESULTS"`` -> 1, ``"A. Setup"`` -> 2, else None."""
    match = _NUMBERED.match(text)
    if not match:
        return None
    number = match.group("num").rstrip(".")
    if number.isdigit() or "." in number:
        if any(int(part) > 60 for part in number.split(".") if part.isdigit()):
            return None  # "1998 results", "120 patients": a number, not a section
        return min(number.count(".") + 1, MAX_LEVEL)
    if len(number) == 1 and number.isupper() and number not in "IVX":
        return 2
    return 1


def _looks_like_words(text: str) -> bool:
    """Mostly words, no formula symbols, not a caption or an author list."""
    match = _NUMBERED.match(text)
    tokens = (match.group("rest") if match else text).split()
    if not tokens or _MATH.search(text) or _CAPTION.match(text) or text.count(",") >= 2:
        return False
    return sum(bool(_WORD.match(token) or _NUMBER.match(token)) for token in tokens) >= 0.6 * len(tokens)


def _heading_words(text: str) -> bool:
    """Whether an unnumbered line whose size is a guess (OCR, glyph heights) reads as a
    heading's words: it opens with a capital and holds a word of four letters or more. A
    formula or a figure OCRed as large letters ("aft", "Bes UL", "satisfies:"), or a
    formula's glyphs without font sizes ("hLMLSMS jJMJ i YLML(", "O MM Q"), is none, and
    was the heading of every block after it. A section number before the words is left
    out ("2.1 Shared memory"; "1 1 r fini X" is no heading)."""
    match = _NUMBERED.match(text)
    text = match.group("rest") if match else text
    return text[:1].isupper() and any(len(word) >= 4 for word in re.findall(r"[^\W\d_]+", text))


def _level(text: str, roman: bool) -> int | None:
    """:func:`numbering_level`; under Roman section numbers (I., II.; A., B. below them)
    an Arabic ``1.`` is a third level, as in APS and AIP journals."""
    level = numbering_level(text)
    if roman and level is not None and not _ROMAN.match(text) and not _LETTER.match(text):
        return min(level + 2, MAX_LEVEL)
    return level


def _heading_style(paragraph: Paragraph, body: float) -> tuple | None:
    """A style key when ``paragraph`` looks like a heading, else None."""
    text = paragraph.text
    if len(paragraph.lines) > 3 or len(text) > MAX_HEADING_CHARS or _letters(text) < 3:
        return None
    if text.endswith((".", ",", ";")) or not _looks_like_words(text):
        return None
    ocr = all(line.ocr for line in paragraph.lines)
    if paragraph.estimated and not _heading_words(text):
        return None
    larger = paragraph.size >= body * (OCR_LARGER if ocr else ESTIMATED_LARGER if paragraph.estimated else LARGER)
    not_smaller = paragraph.size >= body * 0.9
    caps = _is_caps(text) and len(text.split()) <= 8
    bold = paragraph.bold and len(text.split()) <= 14
    numbered = numbering_level(text) is not None
    larger_numbered = paragraph.size >= body * LARGER if ocr else larger
    if larger or (not_smaller and (bold or caps)) or (numbered and (larger_numbered or bold or caps)):
        return (round(paragraph.size * 2) / 2, caps, paragraph.bold)
    return None


def _title(paragraphs: list[Paragraph], body: float) -> list[Paragraph]:
    """The title paragraphs: the largest text of page one and the paragraphs around it in
    its style (a centred title's lines can read as separate paragraphs)."""
    first_page = [p for p in paragraphs if p.page == paragraphs[0].page and _letters(p.text) >= 4]
    if not first_page:
        return []
    best = max(first_page, key=lambda p: p.size)
    if best.size < body * TITLE_LARGER or len(best.text) > 300:
        return []
    start = end = paragraphs.index(best)
    while start > 0 and _same_style(paragraphs[start - 1], best) and end - start < 2:
        start -= 1
    while end + 1 < len(paragraphs) and _same_style(paragraphs[end + 1], best) and end - start < 2:
        end += 1
    return paragraphs[start : end + 1]


def _same_style(a: Paragraph, b: Paragraph) -> bool:
    # OCR and glyph-height sizes wobble by a point or so between lines of one style.
    tolerance = 0.1 * b.size if a.estimated or b.estimated else 0.5
    return a.page == b.page and abs(a.size - b.size) <= tolerance and a.bold == b.bold


def _demote_front_matter(paragraphs: list[Paragraph], styles: dict, title: list[Paragraph]) -> None:
    """Authors and affiliations are not headings: drop the candidates that come before
    the first Abstract/Introduction-like or numbered heading of the first two pages (or,
    without one, before the title). A letter is no section number here: "G. NIGEL
    MARTIN" is a byline."""
    first = [p for p in paragraphs if p.page <= paragraphs[0].page + 1]
    anchor = next(
        (
            i
            for i, p in enumerate(first)
            if styles.get(id(p)) is not None
            and (
                (numbering_level(p.text) is not None and not _LETTER.match(p.text))
                or _plain(p.text).startswith(FRONT_MATTER_END)
            )
        ),
        None,
    )
    if anchor is None:
        anchor = first.index(title[0]) if title and title[0] in first else 0
    for p in first[:anchor]:
        styles[id(p)] = None


def _plain(text: str) -> str:
    match = _NUMBERED.match(text)
    return (match.group("rest") if match else text).strip().lower()


def _style_levels(unnumbered: list[tuple], numbered: dict[tuple, int]) -> dict[tuple, int]:
    """Levels of unnumbered heading styles: by rank (size, then capitals, then bold);
    beside numbered headings, the level of the numbered style of the same or the next
    smaller size, or one below the deepest numbered level."""
    ranked = sorted(set(unnumbered), key=lambda s: (-s[0], not s[1], not s[2]))
    if not numbered:
        return {style: min(rank + 1, MAX_LEVEL) for rank, style in enumerate(ranked)}
    levels = {}
    deepest = max(numbered.values())
    for style in ranked:
        same_or_smaller = [level for other, level in numbered.items() if other[0] <= style[0]]
        levels[style] = min(same_or_smaller) if same_or_smaller else min(deepest + 1, MAX_LEVEL)
    return levels


def line_boxes(paragraph: Paragraph, widths: list[float], heights: list[float]) -> tuple[LineBox, ...]:
    """The paragraph's lines as :class:`LineBox` es: fractions of their page, top-left origin."""
    boxes = []
    for line, (start, end) in zip(paragraph.lines, line_spans([line.text for line in paragraph.lines])):
        boxes.append(LineBox(start, end, line.page + 1, fraction_box(line, widths[line.page], heights[line.page])))
    return tuple(boxes)


def fraction_box(line: Line, width: float, height: float) -> tuple[float, float, float, float]:
    """``line``'s box as (left, top, right, bottom) fractions of a page ``width`` x ``height``
    points, origin top-left, rounded to 4 places (as stored in provenance)."""
    width, height = width or 1.0, height or 1.0
    box = (line.x0 / width, 1 - line.y1 / height, line.x1 / width, 1 - line.y0 / height)
    return tuple(round(min(max(v, 0.0), 1.0), 4) for v in box)


def _same_list(items: list[Paragraph], paragraph: Paragraph) -> bool:
    """Whether ``paragraph`` is the next item of the list ``items`` (a bullet after
    bullets, ``n + 1.`` after ``n.``)."""
    last, number = item_number(items[-1].text), item_number(paragraph.text)
    return number is not None and last is not None and (number == last == 0 or (last > 0 and number == last + 1))


def _list_block(headings: tuple[str, ...], items: list[Paragraph], widths, heights) -> Block:
    """List items as one block, an item a line (its bullet written ``-``, one visible
    character as the glyph was, so the line boxes keep their character ranges)."""
    texts, boxes, offset = [], [], 0
    for item in items:
        text = item.text
        texts.append("-" + text[1:] if text.startswith(BULLET) else text)
        if widths is not None:
            boxes += [LineBox(b.start + offset, b.end + offset, b.page, b.box) for b in line_boxes(item, widths, heights)]
        offset += sum(1 for ch in text if not ch.isspace())
    return Block(headings, "\n".join(texts), kind="list", boxes=tuple(boxes))


def structure(
    pages: list[list[Line]], heights: list[float], widths: list[float] | None = None,
    printed: frozenset[int] = frozenset(),
) -> tuple[str, list[Block]]:
    """Title and blocks under heading chains for a whole document.

    :param pages: each page's lines (any order); :param heights: page heights in points.
    :param widths: page widths in points; when given, each block carries the boxes of
        its lines (:class:`ingestion.convert.base.LineBox`).
    :param printed: pages whose furniture zones follow their printed area (OCR pages,
        :func:`drop_furniture`).
    :returns: (title or "", blocks in reading order); blocks before the first heading
        have the title as their heading chain.
    """
    pages = drop_furniture(pages, heights, printed)
    body = body_size(pages)
    paragraphs = merge_continued([p for lines in pages for p in page_paragraphs(lines, body)])
    if not paragraphs:
        return "", []
    title = _title(paragraphs, body)
    styles = {id(p): _heading_style(p, body) for p in paragraphs if p not in title}
    _demote_front_matter(paragraphs, styles, title)
    roman = any(styles.get(id(p)) and _ROMAN.match(p.text) for p in paragraphs)
    numbered_styles: dict[tuple, Counter] = {}
    for p in paragraphs:
        style, level = styles.get(id(p)), _level(p.text, roman)
        if style is not None and level is not None:
            numbered_styles.setdefault(style, Counter())[level] += 1
    numbered = {style: counts.most_common(1)[0][0] for style, counts in numbered_styles.items()}
    style_level = _style_levels([s for s in styles.values() if s is not None and s not in numbered], numbered)
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    items: list[Paragraph] = []  # the list being read: consecutive item paragraphs

    def close_list() -> None:
        if len(items) > 1 or (items and item_number(items[0].text) == 0):
            blocks.append(_list_block(tuple(text for _, text in stack), items, widths, heights))
        elif items:
            boxes = line_boxes(items[0], widths, heights) if widths is not None else ()
            blocks.append(Block(tuple(text for _, text in stack), items[0].text, boxes=boxes))
        items.clear()

    for p in paragraphs:
        if p in title:
            continue
        style = styles.get(id(p))
        if style is None:
            if items and _same_list(items, p):
                items.append(p)
                continue
            close_list()
            if item_number(p.text) is not None:
                items.append(p)
                continue
            boxes = line_boxes(p, widths, heights) if widths is not None else ()
            blocks.append(Block(tuple(text for _, text in stack), p.text, boxes=boxes))
            continue
        close_list()
        level = _level(p.text, roman)
        if level is None:
            level = numbered[style] if style in numbered else style_level[style]
        stack = [(lvl, text) for lvl, text in stack if lvl < level] + [(level, p.text)]
    close_list()
    title_text = " ".join(p.text for p in title)
    if title_text:  # the front matter (an abstract without its own heading) sits under the title
        blocks = [b if b.headings else replace(b, headings=(title_text,)) for b in blocks]
    return title_text, blocks
