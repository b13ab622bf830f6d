"""The shape every converter returns: a title and a flat list of blocks under headings."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# OCR for PDFs: auto (only those the pre-check says need it), on (every PDF), off.
OCR_MODES = ("auto", "on", "off")


class ConversionError(ValueError):
    """A file that cannot be converted. ``reason`` is a short code (``binary``,
    ``not_utf8``, ``unsupported``, ``empty``, ``encrypted``, ...); the message is one line
    naming the problem."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class LineBox:
    """A printed line under part of a block's text (PDF provenance, docs/ingestion.md).

    ``start``, ``end``: the block text's characters it holds, counted without white
    space (so a chunk that splits the block at any white space still finds its lines).
    ``page``: 1-based, as a PDF viewer numbers pages. ``box``: (left, top, right, bottom)
    as fractions of the page's width and height, origin top-left (as the page is shown).
    """

    start: int
    end: int
    page: int
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class Block:
    """One paragraph, list, table or code listing under its heading chain.

    ``headings``: the chain from the top heading down, e.g. ("Get NeuroML", "What you need").
    ``kind``: "text" | "code" | "list" | "table".
    Provenance (docs/ingestion.md, "Provenance"): ``boxes`` the PDF lines the text came
    from; ``lines`` the (first, last) 1-based source lines of a text source, ``offset``
    the character offset of the first of them, ``anchor`` the heading anchor of its section.
    """

    headings: tuple[str, ...]
    text: str
    kind: str = "text"
    # Provenance is where the text came from, not what it is: left out of equality.
    boxes: tuple[LineBox, ...] = field(default=(), compare=False)
    lines: tuple[int, int] | None = field(default=None, compare=False)
    offset: int | None = field(default=None, compare=False)
    anchor: str = field(default="", compare=False)


class BlockCollector:
    """Blocks gathered by a converter's tree walk, each under the heading chain open when
    it was added. ``stack``: (level, heading text) pairs, outermost first."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.stack: list[tuple[int, str]] = []
        self.anchors: list[str] = []  # the anchor of each open heading (parallel to stack)
        self.source_lines: tuple[int, int] | None = None  # set by the walker before add()
        self.line_offsets: list[int] | None = None  # character offset of each source line

    @property
    def headings(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.stack if text)

    @property
    def anchor(self) -> str:
        return next((a for a in reversed(self.anchors) if a), "")

    def enter_heading(self, level: int, text: str, anchor: str = "") -> None:
        """Close the headings at ``level`` and deeper, then open ``text`` (its ``anchor``:
        an explicit label, else the slug of ``text``)."""
        kept = [i for i, (lvl, _) in enumerate(self.stack) if lvl < level]
        self.anchors = [self.anchors[i] if i < len(self.anchors) else "" for i in kept] + [anchor or slug(text)]
        self.stack = [self.stack[i] for i in kept] + [(level, text)]

    def add(self, text: str, kind: str = "text") -> None:
        text = text.strip()
        if text:
            lines = self.source_lines
            offset = None
            if lines is not None and self.line_offsets is not None and lines[0] - 1 < len(self.line_offsets):
                offset = self.line_offsets[lines[0] - 1]
            self.blocks.append(Block(self.headings, text, kind, lines=lines, offset=offset, anchor=self.anchor))


_SLUG_DROP = re.compile(r"[^\w\- ]", re.UNICODE)


def slug(heading: str) -> str:
    """The anchor of a heading as Sphinx, MyST and GitHub make it: lower case, punctuation
    dropped, spaces as ``-`` (``"2.1 What you need"`` -> ``"21-what-you-need"``)."""
    return "-".join(_SLUG_DROP.sub("", heading.strip().lower()).split())


_BARE_BAR = re.compile(r"(?<!\\)\|")


def table_text(rows: Iterable[Iterable[str]]) -> str:
    """The text of a table block: one line per row, its cells joined by ``" | "``.

    A ``|`` inside a cell is written ``\\|`` (unless it is already), as a Markdown pipe
    table escapes it, so that no cell reads as two (a header cell ``a|b`` made its row one
    cell wider than the separator row, and the table showed as raw pipes). A row without
    text is left out.
    Empty cells stay: they keep the other cells under their own column.
    """
    lines = []
    for row in rows:
        cells = [_BARE_BAR.sub(r"\\|", cell) for cell in row]
        if any(cell.strip() for cell in cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def line_offsets(text: str) -> list[int]:
    """The character offset at which each line of ``text`` starts (line n at index n - 1)."""
    offsets = [0]
    for index, ch in enumerate(text):
        if ch == "\n":
            offsets.append(index + 1)
    return offsets


@dataclass
class ConvertedDocument:
    """A converted file. ``converter`` names the path that ran (for logs and the admin);
    ``warnings``: one line each about parts that were lost (a page whose OCR failed)."""

    blocks: list[Block] = field(default_factory=list)
    title: str = ""
    metadata: dict = field(default_factory=dict)
    pages: int | None = None
    converter: str = ""
    warnings: list[str] = field(default_factory=list)

    def first_heading(self) -> str:
        """The first heading that is not a banner (a badge line, a lone symbol)."""
        for block in self.blocks:
            for heading in block.headings:
                if sum(ch.isalpha() for ch in heading) >= 2:
                    return heading
        return ""
