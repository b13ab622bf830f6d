"""The shape every converter returns: a title and a flat list of blocks under headings."""

from __future__ import annotations

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
class Block:
    """One paragraph, list, table or code listing under its heading chain.

    ``headings``: the chain from the top heading down, e.g. ("Get NeuroML", "What you need").
    ``kind``: "text" | "code" | "list" | "table".
    """

    headings: tuple[str, ...]
    text: str
    kind: str = "text"


class BlockCollector:
    """Blocks gathered by a converter's tree walk, each under the heading chain open when
    it was added. ``stack``: (level, heading text) pairs, outermost first."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.stack: list[tuple[int, str]] = []

    @property
    def headings(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.stack if text)

    def enter_heading(self, level: int, text: str) -> None:
        """Close the headings at ``level`` and deeper, then open ``text``."""
        self.stack = [(lvl, t) for lvl, t in self.stack if lvl < level] + [(level, text)]

    def add(self, text: str, kind: str = "text") -> None:
        text = text.strip()
        if text:
            self.blocks.append(Block(self.headings, text, kind))


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
