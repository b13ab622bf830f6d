"""Markdown, MyST and Hugo/Jekyll Markdown -> blocks under heading chains.

Parsed with markdown-it-py and the MyST plugins of mdit-py-plugins, so MyST markup never
reaches a chunk as noise: ``(label)=`` targets and ``%`` comments are dropped, roles show
what Sphinx shows (:func:`.myst.render_role`), directive fences keep their content (figures'
captions, code cells; an ``{eval-rst}`` body is read as reST) or vanish (toctree, images,
includes), admonitions lead with their title in bold (``**Note:** ...``), a tab's or
card's label is a heading over its content, ``{csv-table}`` and ``{list-table}`` are tables,
and YAML front matter is read for the title and date instead of being indexed.
"""

from __future__ import annotations

import csv
import re
from dataclasses import replace

import yaml
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

from .base import BlockCollector, ConversionError, ConvertedDocument, line_offsets, table_text
from .myst import (
    ADMONITIONS, ARGUMENT_NOT_TITLE, CODE_DIRECTIVES, DROPPED_DIRECTIVES, LABELLED_PANELS,
    admonition, csv_rows, labels, lead_blocks, list_table_cells, render_role, strip_options,
)
from .rst import convert_rst

_DIRECTIVE_INFO = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<args>.*)$")
_SPACES = re.compile(r"[ \t]+")


# Markup levels (a quote is one, a list and its item two) deeper than this fail the file.
# markdown-it stops reading a file silently at its own limit (maxNesting, 20 in the
# commonmark preset): the rest of the document was lost while the file counted as stored.
MAX_NESTING = 100
# Directives inside directives: each one's body is parsed again on its own, so n levels
# parse the innermost text n times (and 300 levels exhausted Python's stack).
MAX_DIRECTIVE_DEPTH = 20


def _too_deep(state, start_line: int, end_line: int, silent: bool) -> bool:
    """A block rule tried first on every line: refuses a line nested MAX_NESTING deep.

    :raises ConversionError: ``broken``, naming the line."""
    if state.level >= MAX_NESTING:
        raise ConversionError("broken", f"lists or quotes nested too deeply at line {start_line + 1} "
                                        f"(over {MAX_NESTING} levels of markup)")
    return False


def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": True, "maxNesting": MAX_NESTING + 10})
    parser.block.ruler.before(parser.block.ruler.get_all_rules()[0], "klea_too_deep", _too_deep)
    return (
        parser
        .enable("table")
        .enable("strikethrough")
        .use(front_matter_plugin)
        .use(myst_role_plugin)
        .use(myst_block_plugin)
        .use(colon_fence_plugin)
        .use(deflist_plugin)
        .use(dollarmath_plugin)
    )


_MD = _parser()


def _inline(node: SyntaxTreeNode, marks: bool = True) -> str:
    """The text of an inline run; inline code keeps its backticks (Markdown chunk text)
    unless ``marks`` is False (headings are plain text)."""
    parts: list[str] = []
    for child in node.children:
        kind = child.type
        if kind == "code_inline" and marks and "`" not in child.content:
            parts.append(f"`{child.content}`")
        elif kind in ("text", "code_inline", "math_inline"):
            parts.append(child.content)
        elif kind == "myst_role":
            parts.append(render_role(child.meta.get("name", ""), child.content, code=marks))
        elif kind in ("softbreak",):
            parts.append(" ")
        elif kind == "hardbreak":
            parts.append("\n")
        elif kind == "html_inline" or kind == "image":
            continue
        elif child.children:
            parts.append(_inline(child, marks))
    return _SPACES.sub(" ", "".join(parts)).strip()


def _inline_text(text: str, marks: bool = False) -> str:
    """A directive argument or table cell read as inline Markdown (roles, emphasis)."""
    tokens = _MD.parseInline(text)
    return _inline(SyntaxTreeNode(tokens).children[0], marks) if tokens else ""


class _Walker(BlockCollector):
    def __init__(self, depth: int = 0) -> None:
        super().__init__()
        self.depth = depth  # directives around this walker's text
        self.first_h1 = ""
        self.label = ""  # a MyST target "(label)=" waiting for the heading it names

    def walk(self, nodes) -> None:
        for node in nodes:
            handler = getattr(self, f"on_{node.type}", None)
            if node.map and self.line_offsets is not None:
                # markdown-it maps are 0-based [first, end): as 1-based inclusive lines
                self.source_lines = (node.map[0] + 1, max(node.map[0] + 1, node.map[1]))
            if handler is not None:
                handler(node)
            elif node.children:
                self.walk(node.children)

    def on_heading(self, node: SyntaxTreeNode) -> None:
        level = int(node.tag[1])
        text = _inline(node.children[0], marks=False) if node.children else ""
        if level == 1 and not self.first_h1:
            self.first_h1 = text
        self.enter_heading(level, text, self.label)
        self.label = ""

    def on_myst_target(self, node) -> None:
        self.label = node.content.strip()

    def on_paragraph(self, node: SyntaxTreeNode) -> None:
        self.add(_inline(node.children[0]) if node.children else "")

    def on_bullet_list(self, node: SyntaxTreeNode) -> None:
        self.add(self._list_text(node, 0), "list")

    on_ordered_list = on_bullet_list

    def _list_text(self, node: SyntaxTreeNode, depth: int) -> str:
        lines = []
        ordered = node.type == "ordered_list"
        for number, item in enumerate(node.children, start=1):
            # An ordered item keeps the number its source wrote ("3." of a list resumed
            # after a note, "1." repeated): a quoted step then reads, and is found in
            # the file, as written.
            marker = (f"{item.info}{item.markup}" if item.info else f"{number}.") if ordered else "-"
            texts, nested = [], []
            for child in item.children:
                if child.type in ("bullet_list", "ordered_list"):
                    nested.append(self._list_text(child, depth + 1))
                elif child.type == "paragraph":
                    texts.append(_inline(child.children[0]) if child.children else "")
                elif child.type in ("fence", "code_block"):
                    texts.append(child.content.rstrip())
            lines.append("  " * depth + f"{marker} " + " ".join(t for t in texts if t))
            lines.extend(nested)
        return "\n".join(line for line in lines if line.strip() not in ("-", ""))

    def on_table(self, node: SyntaxTreeNode) -> None:
        rows = []
        for section in node.children:
            for row in section.children:
                rows.append([_inline(cell.children[0]) if cell.children else "" for cell in row.children])
        self.add(table_text(rows), "table")

    def on_fence(self, node: SyntaxTreeNode) -> None:
        info = (node.info or "").strip()
        match = _DIRECTIVE_INFO.match(info)
        if not match:
            self.add(node.content.rstrip(), "code")
            return
        self.directive(match.group("name"), match.group("args").strip(), node.content)

    on_colon_fence = on_fence

    def on_code_block(self, node: SyntaxTreeNode) -> None:
        self.add(node.content.rstrip(), "code")

    def on_math_block(self, node: SyntaxTreeNode) -> None:
        self.add(node.content.strip(), "code")

    def on_html_block(self, node: SyntaxTreeNode) -> None:
        soup = BeautifulSoup(node.content, "html.parser")
        for tag in soup(["script", "style"]):
            tag.decompose()
        self.add(_SPACES.sub(" ", soup.get_text(" ")).strip())

    def on_dl(self, node: SyntaxTreeNode) -> None:
        lines = []
        for child in node.children:
            if child.type == "dt":
                lines.append(_inline(child.children[0]) if child.children else "")
            elif child.type == "dd":
                inner = _Walker(self.depth)
                inner.walk(child.children)
                lines.append("  " + " ".join(b.text for b in inner.blocks))
        self.add("\n".join(lines), "list")

    def directive(self, name: str, args: str, content: str) -> None:
        if name in DROPPED_DIRECTIVES:
            return
        if self.depth >= MAX_DIRECTIVE_DEPTH:
            raise ConversionError("broken", f"directives nested too deeply at line {self._line()} "
                                            f"(over {MAX_DIRECTIVE_DEPTH} levels)")
        body = strip_options(content)
        if name in CODE_DIRECTIVES:
            self.add(body.rstrip(), "code")
            return
        if name == "eval-rst":
            self._rst(body)
            return
        if name == "csv-table":
            try:
                rows = csv_rows(content, body)
            except csv.Error as exc:
                raise ConversionError("broken", f"{{csv-table}} at line {self._line()}: {exc}") from None
            self._table(args, [[_inline_text(cell, marks=True) for cell in row] for row in rows])
            return
        if name == "list-table":
            self._table(args, [[self._cell_text(cell) for cell in row]
                               for row in list_table_cells(SyntaxTreeNode(_MD.parse(body)))])
            return
        lead, label = "", ""
        if name in ADMONITIONS or name == "admonition":
            lead, body = admonition(name, args, body)
        elif name in LABELLED_PANELS:
            label = args
        elif args and name not in ARGUMENT_NOT_TITLE:
            self.add(args)
        inner = _Walker(self.depth + 1)
        inner.stack, inner.anchors = list(self.stack), list(self.anchors)
        inner.source_lines = self.source_lines  # the body's own lines are not the file's
        if label:
            # Deeper than any Markdown heading: a heading inside the panel nests under it.
            inner.enter_heading(7 + len(self.stack), _inline_text(label), self.anchor)
        inner.walk(SyntaxTreeNode(_MD.parse(body)).children)
        blocks = inner.blocks
        if lead:
            blocks = lead_blocks(blocks, _inline_text(lead), self.headings)
        # The directive's body was parsed on its own: its blocks point at the whole directive.
        where = {"lines": self.source_lines, "offset": self._offset()}
        self.blocks.extend(replace(block, **where) if self.line_offsets is not None else block for block in blocks)

    def _table(self, args: str, rows: list[list[str]]) -> None:
        """A ``{csv-table}`` or ``{list-table}``: its title a paragraph, then the rows."""
        if args:
            self.add(_inline_text(args, marks=True))
        self.add(table_text(rows), "table")

    def _cell_text(self, nodes: list[SyntaxTreeNode]) -> str:
        inner = _Walker(self.depth + 1)  # the table's body was parsed again
        inner.walk(nodes)
        return " ".join(b.text.replace("\n", " ") for b in inner.blocks)

    def _rst(self, body: str) -> None:
        """An ``{eval-rst}`` body is reStructuredText (``.. autosummary::``, ``:py:meth:``
        roles): converted as such, its blocks under the current headings (read as Markdown,
        its directives would reach the chunks as raw ``.. currentmodule::`` lines)."""
        where = {"lines": self.source_lines, "offset": self._offset()} if self.line_offsets is not None else {}
        for block in convert_rst(body).blocks:
            self.blocks.append(replace(block, headings=self.headings + block.headings, anchor=self.anchor, **where))

    def _line(self) -> int | str:
        """The file's line this walker is at (an inner walker's: its outermost directive's)."""
        return self.source_lines[0] if self.source_lines else "?"

    def _offset(self) -> int | None:
        if self.source_lines is None or self.line_offsets is None:
            return None
        return self.line_offsets[min(self.source_lines[0], len(self.line_offsets)) - 1]

    # Dropped outright: comments, block breaks, rules, front matter.
    def on_myst_line_comment(self, node) -> None: ...
    def on_myst_block_break(self, node) -> None: ...
    def on_hr(self, node) -> None: ...
    def on_front_matter(self, node) -> None: ...


class _FrontMatterLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without aliases. An alias (``*name``) repeats the value it names
    without copying it, so nine lines of front matter held 387 million strings when
    written out for the database (a MemoryError in the ingesting process, which stopped
    the whole run); Hugo and Jekyll pages have no use for them."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "a YAML alias (*name)",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)


# YAML's messages quote the text (a tag of 500 characters): at most this many of them
# go into the converter line (StagedFile.converter holds 300).
MAX_PROBLEM_CHARS = 120


def _cut(problem: str) -> str:
    return problem if len(problem) <= MAX_PROBLEM_CHARS else problem[:MAX_PROBLEM_CHARS - 3] + "..."


def _front_matter(tokens) -> tuple[dict, str]:
    """The front matter as a dict ({} when there is none or it cannot be read) and why it
    was not read ("" when it was): malformed YAML, an alias, nesting past Python's stack.
    The page is converted either way."""
    for token in tokens:
        if token.type == "front_matter":
            try:
                data = yaml.load(token.content, Loader=_FrontMatterLoader)  # safe: a SafeLoader
            except yaml.MarkedYAMLError as exc:
                mark = exc.problem_mark or exc.context_mark
                where = f" at line {mark.line + 2}" if mark else ""  # line 1 is the opening ---
                return {}, f"front matter not read: {_cut(exc.problem or exc.context)}{where}"
            except yaml.YAMLError as exc:
                return {}, f"front matter not read: {_cut(str(exc).splitlines()[0])}"
            except RecursionError:
                return {}, "front matter not read: nested too deeply"
            return (data, "") if isinstance(data, dict) else ({}, "")
    return {}, ""


def _heading_labels(tree: SyntaxTreeNode) -> dict[str, str]:
    """``(label)=`` targets -> the text of the heading right after each (what ``{ref}`label```
    shows in Sphinx)."""
    labels, label = {}, ""
    for node in tree.children:
        if node.type == "myst_target":
            label = node.content.strip()
            continue
        if node.type == "heading" and label and node.children:
            labels[label] = _inline(node.children[0], marks=False)
        label = ""
    return labels


def convert_markdown(text: str) -> ConvertedDocument:
    """Convert Markdown/MyST source to blocks.

    :returns: ConvertedDocument with ``title`` from front matter ``title`` or the first
        H1, and ``metadata`` holding front-matter ``date``/``tags``/``author`` when present.
    """
    tokens = _MD.parse(text)
    front, unread = _front_matter(tokens)
    walker = _Walker()
    walker.line_offsets = line_offsets(text)
    has_h1 = any(t.type == "heading_open" and t.tag == "h1" for t in tokens)
    if front.get("title") and not has_h1:
        # Hugo-style pages carry the title only in front matter: make it the top heading
        # so chunks read "Okonomiyaki > Ingredients", not just "Ingredients".
        walker.stack = [(0, str(front["title"]).strip())]
    tree = SyntaxTreeNode(tokens)
    with labels(_heading_labels(tree)):
        try:
            walker.walk(tree.children)
        except RecursionError:  # markup our limits above let through, nested past Python's stack
            raise ConversionError("broken", "markup nested too deeply for Python's stack") from None
    metadata = {}
    for key in ("date", "tags", "author", "authors", "description"):
        if front.get(key):
            metadata[key] = front[key] if isinstance(front[key], (list, str, int, float)) else str(front[key])
    title = str(front.get("title") or walker.first_h1 or "").strip()
    converter = "markdown-it (MyST)" + (f"; {unread}" if unread else "")
    return ConvertedDocument(blocks=walker.blocks, title=title, metadata=metadata, converter=converter)
