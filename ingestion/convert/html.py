"""HTML -> blocks under heading chains (BeautifulSoup; scripts, styles and page chrome dropped)."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, NavigableString, Tag

from .base import BlockCollector, ConversionError, ConvertedDocument, line_offsets, table_text
from .textclean import SPACE_BEFORE_PUNCTUATION

CHROME = ["script", "style", "noscript", "nav", "header", "footer", "aside", "form", "svg", "template"]
BLOCK_TAGS = {"p", "pre", "ul", "ol", "dl", "table", "blockquote", "figcaption"}
HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SPACES = re.compile(r"\s+")
# Elements nested deeper than this fail the file (as Markdown's MAX_NESTING does): the walk
# takes a stack frame per level, and Python's limit (1,000 frames) ended it with a bare
# RecursionError. Real pages nest a few dozen levels.
MAX_NESTING = 500


def _text(tag: Tag) -> str:
    # " " keeps words of adjacent elements apart; it must not split "bold</b>." though.
    return SPACE_BEFORE_PUNCTUATION.sub("", _SPACES.sub(" ", tag.get_text(" "))).strip()


def _children(tag: Tag, names: tuple[str, ...]) -> list[Tag]:
    return [child for child in tag.children if isinstance(child, Tag) and child.name in names]


def _rows(table: Tag) -> list[Tag]:
    """The table's own rows, not those of a table inside one of its cells (whose text
    holds them): read with every nested table's, n tables nested in one another made
    n^2 cells of up to n tables' text each (600 nested tables, 9 KB: minutes)."""
    rows = []
    for child in _children(table, ("tr", "thead", "tbody", "tfoot")):
        rows += [child] if child.name == "tr" else _children(child, ("tr",))
    return rows


class _Walker(BlockCollector):
    def __init__(self, offsets: list[int]) -> None:
        super().__init__()
        self.loose: list[str] = []
        self.loose_lines: list[int] = []
        self.line_offsets = offsets

    def flush(self) -> None:
        self.source_lines = (min(self.loose_lines), max(self.loose_lines)) if self.loose_lines else None
        self.add(_SPACES.sub(" ", " ".join(self.loose)))
        self.loose, self.loose_lines = [], []

    def at(self, tag: Tag) -> None:
        """Blocks added next come from ``tag``: its first line to the last line its text reaches."""
        if tag.sourceline is not None:
            self.source_lines = (tag.sourceline, tag.sourceline + str(tag).count("\n"))

    def walk(self, node: Tag, depth: int = 0) -> None:
        """Blocks of ``node``'s children. :raises ConversionError: ``broken``, elements nested
        over MAX_NESTING levels, naming the line."""
        for child in node.children:
            if isinstance(child, NavigableString):
                if child.strip() and child.__class__ is NavigableString:
                    self.loose.append(str(child))
                    if node.sourceline is not None:
                        self.loose_lines.append(node.sourceline)
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name
            if name in HEADINGS:
                self.flush()
                level = HEADINGS[name]
                self.enter_heading(level, _text(child), child.get("id") or "")
            elif name in BLOCK_TAGS:
                self.flush()
                self.at(child)
                if name == "pre":
                    self.add(child.get_text().rstrip(), "code")
                elif name in ("ul", "ol"):
                    items = [_text(li) for li in child.find_all("li", recursive=False)]
                    self.add("\n".join(f"- {i}" for i in items if i), "list")
                elif name == "table":
                    rows = [[_text(c) for c in _children(tr, ("td", "th"))] for tr in _rows(child)]
                    self.add(table_text(rows), "table")
                else:
                    self.add(_text(child))
            elif name == "br":
                self.loose.append("\n")
            elif depth >= MAX_NESTING:
                raise ConversionError("broken", f"elements nested too deeply at line {child.sourceline} "
                                                f"(over {MAX_NESTING} levels)")
            else:
                self.walk(child, depth + 1)


def convert_html(text: str) -> ConvertedDocument:
    """Convert an HTML page. :returns: blocks; title from ``<title>`` or the first ``<h1>``.

    :raises ConversionError: ``broken``, elements nested over MAX_NESTING levels."""
    # html.parser (not lxml) records each element's source line, for provenance.
    soup = BeautifulSoup(text, "html.parser")
    for tag in soup(CHROME):
        tag.decompose()
    title_tag = soup.find("title")
    h1 = soup.find("h1")
    title = _text(title_tag) if title_tag else (_text(h1) if h1 else "")
    walker = _Walker(line_offsets(text))
    walker.walk(soup.body or soup)
    walker.flush()
    return ConvertedDocument(blocks=walker.blocks, title=title, converter="beautifulsoup")
