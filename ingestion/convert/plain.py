"""Plain text -> one block per paragraph (blank-line separated), no headings.

Hard-wrapped lines of a paragraph are joined with single spaces (a sentence must not
keep a line break, or an extractive answer quotes half of it); list items (``- ``,
``* ``, ``1. ``) and indented lines keep their own lines.
"""

from __future__ import annotations

import re

from .base import Block, ConvertedDocument

_PARAGRAPH = re.compile(r"\n\s*\n")
_LIST_ITEM = re.compile(r"(?:[-*+\u2022]|\d{1,3}[.)])\s")


def _own_line(line: str) -> bool:
    return line[:1] in (" ", "\t") or bool(_LIST_ITEM.match(line))


def _unwrap(paragraph: str) -> str:
    lines: list[str] = []
    for line in paragraph.split("\n"):
        line = line.rstrip()
        if not line:
            continue
        if lines and not _own_line(line) and lines[-1][:1] not in (" ", "\t"):
            lines[-1] = f"{lines[-1]} {line}"
        else:
            lines.append(line)
    return "\n".join(lines).strip()


def convert_plain(text: str) -> ConvertedDocument:
    blocks = [Block((), _unwrap(p)) for p in _PARAGRAPH.split(text) if p.strip()]
    first_line = text.strip().split("\n", 1)[0].strip() if text.strip() else ""
    title = first_line if 0 < len(first_line) <= 120 else ""
    return ConvertedDocument(blocks=blocks, title=title, converter="plain text")
