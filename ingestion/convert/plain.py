"""Plain text -> one block per paragraph (blank-line separated), no headings."""

from __future__ import annotations

import re

from .base import Block, ConvertedDocument

_PARAGRAPH = re.compile(r"\n\s*\n")


def convert_plain(text: str) -> ConvertedDocument:
    blocks = [Block((), p.strip()) for p in _PARAGRAPH.split(text) if p.strip()]
    first_line = text.strip().split("\n", 1)[0].strip() if text.strip() else ""
    title = first_line if 0 < len(first_line) <= 120 else ""
    return ConvertedDocument(blocks=blocks, title=title, converter="plain text")
