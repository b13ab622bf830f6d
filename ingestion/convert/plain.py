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
    # Lines are gathered as lists and joined once: joining into a growing string is
    # quadratic on a file without blank lines (one paragraph of 100,000 lines).
    lines: list[list[str]] = []
    for line in paragraph.split("\n"):
        line = line.rstrip()
        if not line:
            continue
        if lines and not _own_line(line) and lines[-1][0][:1] not in (" ", "\t"):
            lines[-1].append(line)
        else:
            lines.append([line])
    return "\n".join(" ".join(parts) for parts in lines).strip()


def _paragraphs(text: str):
    """(paragraph, first line, last line, offset) per non-blank paragraph, lines 1-based."""
    breaks = list(_PARAGRAPH.finditer(text))
    starts = [0] + [m.end() for m in breaks]
    ends = [m.start() for m in breaks] + [len(text)]
    # Line numbers are counted on from the previous paragraph, never from the start
    # (counting from the start is quadratic in the number of paragraphs).
    line, counted = 1, 0
    for start, end in zip(starts, ends):
        paragraph = text[start:end]
        if not paragraph.strip():
            continue
        offset = start + len(paragraph) - len(paragraph.lstrip())
        line += text.count("\n", counted, offset)
        counted = offset
        yield paragraph, line, line + paragraph.strip().count("\n"), offset


def convert_plain(text: str) -> ConvertedDocument:
    blocks = [
        Block((), _unwrap(p), lines=(first, last), offset=offset) for p, first, last, offset in _paragraphs(text)
    ]
    first_line = text.strip().split("\n", 1)[0].strip() if text.strip() else ""
    title = first_line if 0 < len(first_line) <= 120 else ""
    return ConvertedDocument(blocks=blocks, title=title, converter="plain text")
