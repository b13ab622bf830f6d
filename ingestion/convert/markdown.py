"""Markdown, MyST and Hugo/Jekyll Markdown -> blocks under heading chains.

Parsed with markdown-it-py and the MyST plugins of mdit-py-plugins, so MyST markup never
reaches a chunk as noise: ``(label)=`` targets and ``%`` comments are dropped, roles show
what Sphinx shows (:func:`render_role`), directive fences keep their content (figures'
captions, code cells; an ``{eval-rst}`` body is read as reST) or vanish (toctree, images,
includes), admonitions lead with their title in bold (``**Note:** ...``), a tab's or
card's label is a heading over its content, ``{csv-table}`` and ``{list-table}`` are tables,
and YAML front matter is read for the title and date instead of being indexed.
"""

from __future__ import annotations

import csv
import re
from contextvars import ContextVar
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

from .base import Block, BlockCollector, ConversionError, ConvertedDocument, line_offsets

# Directives whose content is not prose a reader would want in an answer.
DROPPED_DIRECTIVES = {
    "toctree", "contents", "image", "bibliography", "literalinclude", "include", "raw",
    "glue", "glue:figure", "mermaid", "graphviz", "tableofcontents", "footbibliography",
    "currentmodule", "module", "autosummary", "only", "highlight", "index",
}
# Directives whose content is code or a formula, kept verbatim.
CODE_DIRECTIVES = {
    "code-cell", "code-block", "code", "sourcecode", "ipython", "jupyter-execute",
    "doctest", "testcode", "math", "prompt", "parsed-literal",
}
# Directives whose argument is an image path or a label rather than a title.
ARGUMENT_NOT_TITLE = {"figure", "eval-rst", "div", "container", "tab-set", "grid"}
# Admonitions and the bold lead Sphinx titles them with; ``admonition`` takes its title
# from the argument, the others read an argument as the first line of their body.
ADMONITIONS = {
    "note": "Note", "warning": "Warning", "tip": "Tip", "important": "Important", "hint": "Hint",
    "caution": "Caution", "attention": "Attention", "danger": "Danger", "error": "Error",
    "seealso": "See also", "todo": "Todo", "versionadded": "New in version",
    "versionchanged": "Changed in version", "deprecated": "Deprecated since version",
}
# Directives whose argument labels a panel shown one at a time or side by side (sphinx-design):
# the label is a heading over the panel's content, so a table under a "Parameters" tab is
# found, and quoted, as the parameters of the section it is in.
LABELLED_PANELS = {"tab-item", "grid-item-card", "card", "dropdown", "tab"}
# Python-domain roles: shown as inline code, as Sphinx shows them.
_CODE_ROLE = re.compile(r"^(py|any):|^(func|meth|class|attr|mod|obj|data|exc|const|property|code|samp)$")
# Roles whose content is a citation key, not prose.
DROPPED_ROLES = {"cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "footcite", "footcite:t"}

_ROLE_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
_OPTION_LINE = re.compile(r"^:[\w-]+:.*$")
_DIRECTIVE_INFO = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<args>.*)$")
_SPACES = re.compile(r"[ \t]+")
_CSV_DELIMITERS = {"tab": "\t", "space": " "}

# The document's MyST labels -> the text of the heading each names (set by convert_markdown).
_LABELS: ContextVar[dict[str, str]] = ContextVar("klea_myst_labels", default={})


# Markup levels (a quote is one, a list and its item two) deeper than this fail the file.
# markdown-it stops reading a file silently at its own limit (maxNesting, 20 in the
# commonmark preset): the rest of the document was lost while the file counted as stored.
MAX_NESTING = 100


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


def render_role(name: str, content: str, code: bool = False) -> str:
    """A role as Sphinx displays it, as chunk text.

    ``{ref}`pyNeuroML <pyneuroml>``` -> ``pyNeuroML``; ``{ref}`schema:baseiaf``` -> the
    heading that label names in the same document (``baseIaf``), else the label's last part
    (``baseiaf``); ``{math}`x^2``` -> ``x^2``; citation roles -> ``""``. Python-domain roles
    (``{py:meth}``, ``{func}``, ...) keep the target as written, or with ``~`` its last part
    qualified by its class (``~xarray.DataArray.ffill`` -> ``DataArray.ffill``: Sphinx shows
    ``ffill`` alone, but PostgreSQL reads a dotted name as one search word, and users write
    the class-qualified form), in backticks when ``code`` (Markdown chunk text)."""
    if name in DROPPED_ROLES:
        return ""
    if name in {"math", "abbr", "sub", "sup", "kbd", "guilabel", "menuselection", "samp"}:
        return content
    match = _ROLE_TARGET.match(content)
    if match and match.group("text"):
        text = match.group("text")
    elif name in ("ref", "numref", "doc"):
        target = content.lstrip("~!")
        text = _LABELS.get().get(target) or _label_text(target)
    else:
        target = content.lstrip("!")
        if target.startswith("~"):
            parts = target[1:].split(".")
            # A member keeps its class ("DataArray.ffill"); a module-level name stands alone.
            keep = 2 if len(parts) > 1 and parts[-2][:1].isupper() else 1
            target = ".".join(parts[-keep:])
        text = target
    if code and _CODE_ROLE.search(name) and text and "`" not in text:
        return f"`{text}`"
    return text


def _label_text(target: str) -> str:
    """A label not defined in the document: its last part reads best ("schema:cell" ->
    "cell", "userdocs:get_neuroml" -> "get neuroml", "/getting-started/installing" -> "installing")."""
    last = re.split(r"[:/]", target.rstrip("/"))[-1]
    return last.replace("_", " ").replace("-", " ").strip()


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


def _options(content: str) -> dict[str, str]:
    """A directive's leading ``:option: value`` lines, by name."""
    options = {}
    for line in content.split("\n"):
        match = _OPTION_LINE.match(line.strip())
        if not match:
            break
        name, _, value = line.strip()[1:].partition(":")
        options[name] = value.strip()
    return options


def lead_blocks(blocks: list[Block], lead: str, outer: tuple[str, ...]) -> list[Block]:
    """An admonition's blocks led by its title in bold: ``**Note:** `` before the first
    paragraph, or a paragraph of its own before a list, table or code."""
    if not lead:
        return blocks
    bold = f"**{lead.rstrip(':')}:**"
    if blocks and blocks[0].kind == "text":
        return [replace(blocks[0], text=f"{bold} {blocks[0].text}")] + blocks[1:]
    first = blocks[0] if blocks else Block(outer, "")
    return [replace(first, text=bold, kind="text")] + blocks


def _strip_options(content: str) -> str:
    """Drop a directive's leading ``:option: value`` lines or ``---`` YAML block."""
    lines = content.split("\n")
    if lines and lines[0].strip() == "---":
        try:
            end = lines.index("---", 1)
            lines = lines[end + 1 :]
        except ValueError:
            pass
    while lines and _OPTION_LINE.match(lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines).strip("\n")


class _Walker(BlockCollector):
    def __init__(self) -> None:
        super().__init__()
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
                cells = [_inline(cell.children[0]) if cell.children else "" for cell in row.children]
                rows.append(" | ".join(cells))
        self.add("\n".join(rows), "table")

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
                inner = _Walker()
                inner.walk(child.children)
                lines.append("  " + " ".join(b.text for b in inner.blocks))
        self.add("\n".join(lines), "list")

    def directive(self, name: str, args: str, content: str) -> None:
        if name in DROPPED_DIRECTIVES:
            return
        body = _strip_options(content)
        if name in CODE_DIRECTIVES:
            self.add(body.rstrip(), "code")
            return
        if name == "eval-rst":
            self._rst(body)
            return
        if name == "csv-table":
            self._csv_table(args, content, body)
            return
        if name == "list-table":
            self._list_table(args, content, body)
            return
        lead, label = "", ""
        if name in ADMONITIONS or name == "admonition":
            if name == "admonition":
                lead = args
            else:
                lead = ADMONITIONS[name] + (f" {args}" if name.startswith(("version", "deprecated")) and args else "")
                if args and not name.startswith(("version", "deprecated")):
                    body = f"{args}\n{body}"
        elif name in LABELLED_PANELS:
            label = args
        elif args and name not in ARGUMENT_NOT_TITLE:
            self.add(args)
        inner = _Walker()
        inner.stack, inner.anchors = list(self.stack), list(self.anchors)
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

    def _csv_table(self, args: str, content: str, body: str) -> None:
        """``{csv-table}``: rows split as docutils does (``:delim:``, quotes), each cell read
        as inline Markdown; a ``:header:`` option is the first row. The title is a paragraph."""
        options = _options(content)
        delimiter = options.get("delim", ",")
        delimiter = _CSV_DELIMITERS.get(delimiter, delimiter[:1] or ",")
        rows = []
        if options.get("header"):
            rows.extend(csv.reader([options["header"]], delimiter=",", skipinitialspace=True))
        rows.extend(row for row in csv.reader(body.splitlines(), delimiter=delimiter, skipinitialspace=True) if row)
        if args:
            self.add(_inline_text(args, marks=True))
        self.add("\n".join(" | ".join(_inline_text(cell.strip(), marks=True) for cell in row) for row in rows), "table")

    def _list_table(self, args: str, content: str, body: str) -> None:
        """``{list-table}``: a list of rows, each a list of cells."""
        rows = []
        for row in SyntaxTreeNode(_MD.parse(body)).children:
            if row.type != "bullet_list":
                continue
            for item in row.children:
                cells = next((c for c in item.children if c.type == "bullet_list"), None)
                if cells is None:
                    continue
                texts = []
                for cell in cells.children:
                    inner = _Walker()
                    inner.walk(cell.children)
                    texts.append(" ".join(b.text.replace("\n", " ") for b in inner.blocks))
                rows.append(" | ".join(texts))
        if args:
            self.add(_inline_text(args, marks=True))
        self.add("\n".join(rows), "table")

    def _rst(self, body: str) -> None:
        """An ``{eval-rst}`` body is reStructuredText (``.. autosummary::``, ``:py:meth:``
        roles): converted as such, its blocks under the current headings (read as Markdown,
        its directives would reach the chunks as raw ``.. currentmodule::`` lines)."""
        from .rst import convert_rst  # rst imports this module's role and code rules

        where = {"lines": self.source_lines, "offset": self._offset()} if self.line_offsets is not None else {}
        for block in convert_rst(body).blocks:
            self.blocks.append(replace(block, headings=self.headings + block.headings, anchor=self.anchor, **where))

    def _offset(self) -> int | None:
        if self.source_lines is None or self.line_offsets is None:
            return None
        return self.line_offsets[min(self.source_lines[0], len(self.line_offsets)) - 1]

    # Dropped outright: comments, block breaks, rules, front matter.
    def on_myst_line_comment(self, node) -> None: ...
    def on_myst_block_break(self, node) -> None: ...
    def on_hr(self, node) -> None: ...
    def on_front_matter(self, node) -> None: ...


def _front_matter(tokens) -> dict:
    for token in tokens:
        if token.type == "front_matter":
            try:
                data = yaml.safe_load(token.content)
            except yaml.YAMLError:
                return {}
            return data if isinstance(data, dict) else {}
    return {}


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
    front = _front_matter(tokens)
    walker = _Walker()
    walker.line_offsets = line_offsets(text)
    has_h1 = any(t.type == "heading_open" and t.tag == "h1" for t in tokens)
    if front.get("title") and not has_h1:
        # Hugo-style pages carry the title only in front matter: make it the top heading
        # so chunks read "Okonomiyaki > Ingredients", not just "Ingredients".
        walker.stack = [(0, str(front["title"]).strip())]
    tree = SyntaxTreeNode(tokens)
    reset = _LABELS.set(_heading_labels(tree))
    try:
        walker.walk(tree.children)
    finally:
        _LABELS.reset(reset)
    metadata = {}
    for key in ("date", "tags", "author", "authors", "description"):
        if front.get(key):
            metadata[key] = front[key] if isinstance(front[key], (list, str, int, float)) else str(front[key])
    title = str(front.get("title") or walker.first_h1 or "").strip()
    return ConvertedDocument(blocks=walker.blocks, title=title, metadata=metadata, converter="markdown-it (MyST)")
