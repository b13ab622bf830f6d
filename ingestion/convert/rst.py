"""reStructuredText (Sphinx flavoured) -> blocks under heading chains, through docutils.

Plain docutils does not know Sphinx's roles and directives. Before parsing, every role
and directive name the source uses that docutils lacks is registered with a generic
handler: roles keep their text (``:py:meth:`~Dataset.sel``` -> ``Dataset.sel``),
directives keep their content as prose (``note``, ``tab``), as code (``code-block``,
``ipython``), as a list of names (``autosummary``) or vanish (``toctree``, ``include``).
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.utils import unescape

from .base import Block, ConversionError, ConvertedDocument, line_offsets, table_text
from .myst import ADMONITIONS, CODE_DIRECTIVES, LABELLED_PANELS, lead_blocks, render_role

# A role name's characters; a name starts with a letter after a ':' and ends at ':`'.
_ROLE_CHARS = re.compile(r"[\w:.+-]*")
_ROLE_START = re.compile(r":[A-Za-z]")
# On one line: "\s" crossed newlines, so each of n blank lines was a start scanning all the
# rest (20,000 blank lines: 7 s).
_DIRECTIVE_USE = re.compile(r"^[ \t]*\.\.[ \t]+(?P<name>[A-Za-z][\w:.+-]*)::", re.M)
_SPACES = re.compile(r"\s+")

# Sphinx directives with nothing a reader needs; autosummary is kept (a list of API names).
DROPPED = {
    "toctree", "include", "literalinclude", "currentmodule", "module", "highlight", "index",
    "only", "tabularcolumns", "mermaid", "graphviz", "bibliography", "automodule", "autoclass",
    "autofunction", "automethod", "autoattribute", "autodata", "autoexception", "raw", "image",
    "contents",
}
DOCUTILS_SETTINGS = {
    "report_level": 5,
    "halt_level": 5,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "doctitle_xform": False,
    "sectsubtitle_xform": False,
    "warning_stream": False,
}


def _generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    rendered = render_role(name, unescape(text))
    return ([nodes.Text(rendered)] if rendered else []), []


class _GenericDirective(Directive):
    """Content kept as prose, code or a list of names; see the module docstring."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = None  # accept any option

    def run(self):
        name = self.name
        if name in DROPPED:
            return []
        text = "\n".join(self.content)
        if name in CODE_DIRECTIVES:
            return [nodes.literal_block(text, text)]
        if name == "autosummary":
            names = [
                line.strip()
                for line in self.content
                if line.strip() and not line.strip().startswith((":", ".."))
            ]
            return [nodes.paragraph(text=", ".join(names))] if names else []
        if name in LABELLED_PANELS and self.arguments:
            # A tab's or card's label is a heading over its content, as in MyST.
            container = nodes.section()
            container += nodes.title(text=self.arguments[0])
            self.state.nested_parse(self.content, self.content_offset, container)
            return [container]
        container = nodes.container()
        if self.arguments and name not in {"figure", "tab-set", "grid"}:
            container += nodes.paragraph(text=self.arguments[0])
        self.state.nested_parse(self.content, self.content_offset, container)
        return [container]


# option_spec None makes docutils reject options; a dict that accepts anything keeps them out.
class _AnyOptions(dict):
    def __contains__(self, key):
        return True

    def __bool__(self):
        # Empty, the dict is false and docutils would read the option lines as the
        # argument ("Get started! :img-top: _static/..." reached xarray's chunks).
        return True

    def __getitem__(self, key):
        return directives.unchanged


_GenericDirective.option_spec = _AnyOptions()


# docutils' own directives and roles that render well as they are.
NATIVE_DIRECTIVES = {
    "note", "warning", "tip", "important", "hint", "attention", "caution", "danger", "error",
    "admonition", "topic", "sidebar", "rubric", "epigraph", "highlights", "pull-quote",
    "compound", "container", "table", "csv-table", "list-table", "math", "line-block",
}
NATIVE_ROLES = {
    "emphasis", "strong", "literal", "math", "sub", "sup", "subscript", "superscript",
    "abbreviation", "acronym", "title-reference", "title", "t",
}


def _role_names(source: str) -> set[str]:
    """The role names ``source`` uses: ``py:meth`` of ``:py:meth:`x```.

    Found from each ``:``` back to the start of its run of name characters, so every
    character is read once (a regex trying each ':' as a start rescanned the run after it:
    20,000 ':a' took 90 s)."""
    names, backwards = set(), source[::-1]
    end = source.find(":`")
    while end >= 0:
        length = _ROLE_CHARS.match(backwards, len(source) - end).end() - (len(source) - end)
        start = _ROLE_START.search(source, end - length, end)  # the first ':' + letter of the run
        if start is not None:
            names.add(source[start.start() + 1 : end])
        end = source.find(":`", end + 2)
    return names


def _register_handlers(source: str) -> None:
    """Give every Sphinx role/directive used in ``source`` the generic handler."""
    for name in _role_names(source) - NATIVE_ROLES:
        roles.register_local_role(name, _generic_role)
    for name in set(_DIRECTIVE_USE.findall(source)) - NATIVE_DIRECTIVES:
        directives.register_directive(name, _GenericDirective)


def _text(node: nodes.Node) -> str:
    return _SPACES.sub(" ", node.astext()).strip()


def _span(node: nodes.Node) -> tuple[int, int] | None:
    """The 1-based (first, last) source lines of ``node`` (docutils records each
    element's first line; the last is the furthest line any part of it reaches)."""
    first = last = None
    for part in node.findall(nodes.Element):
        if part.line is None:
            continue
        end = part.line + max(part.rawsource.count("\n"), part.astext().count("\n") if part is node else 0)
        first = part.line if first is None else min(first, part.line)
        last = end if last is None else max(last, end)
    return None if first is None else (first, last)


class _Walker:
    def __init__(self, offsets: list[int]) -> None:
        self.blocks: list[Block] = []
        self.headings: list[str] = []
        self.anchors: list[str] = []
        self.offsets = offsets
        self.node: nodes.Node | None = None

    def add(self, text: str, kind: str = "text") -> None:
        if text.strip():
            lines = _span(self.node) if self.node is not None else None
            offset = self.offsets[lines[0] - 1] if lines and lines[0] <= len(self.offsets) else None
            anchor = next((a for a in reversed(self.anchors) if a), "")
            self.blocks.append(Block(tuple(self.headings), text.strip(), kind, lines=lines, offset=offset, anchor=anchor))

    def walk(self, node: nodes.Node) -> None:
        for child in node.children:
            self.visit(child)

    def visit(self, node: nodes.Node) -> None:
        self.node = node
        if isinstance(node, nodes.section):
            title = next((c for c in node.children if isinstance(c, nodes.title)), None)
            self.headings.append(_text(title) if title is not None else "")
            # docutils' own ids: an explicit target (".. _label:") first, then the title's slug
            ids = node.get("ids") or []
            self.anchors.append(ids[-1] if ids else "")
            self.walk(node)
            self.headings.pop()
            self.anchors.pop()
        elif isinstance(node, (nodes.title, nodes.comment, nodes.target, nodes.system_message,
                               nodes.substitution_definition, nodes.raw, nodes.image)):
            return
        elif isinstance(node, nodes.Admonition):
            # Led by its title in bold, as in Markdown: "**Note:** Labels must be unique."
            title = next((c for c in node.children if isinstance(c, nodes.title)), None)
            lead = _text(title) if title is not None else ADMONITIONS.get(node.tagname, "")
            first = len(self.blocks)
            self.walk(node)
            self.blocks[first:] = lead_blocks(self.blocks[first:], lead, tuple(self.headings))
        elif isinstance(node, nodes.paragraph):
            self.add(_text(node))
        elif isinstance(node, (nodes.literal_block, nodes.doctest_block, nodes.math_block)):
            self.add(node.astext().rstrip(), "code")
        elif isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            self.add(self._list(node), "list")
        elif isinstance(node, nodes.definition_list):
            lines = []
            for item in node.children:
                term = next((c for c in item.children if isinstance(c, nodes.term)), None)
                definition = next((c for c in item.children if isinstance(c, nodes.definition)), None)
                lines.append((_text(term) if term else "") + ": " + (_text(definition) if definition else ""))
            self.add("\n".join(lines), "list")
        elif isinstance(node, nodes.table):
            self.add(table_text([_text(entry) for entry in row.children] for row in node.findall(nodes.row)), "table")
        elif isinstance(node, nodes.field_list):
            lines = [f"{_text(f.children[0])}: {_text(f.children[1])}" for f in node.children if len(f.children) == 2]
            self.add("\n".join(lines))
        else:
            self.walk(node)

    def _list(self, node: nodes.Element, depth: int = 0) -> str:
        lines = []
        for item in node.children:
            own = [_text(c) for c in item.children if not isinstance(c, (nodes.bullet_list, nodes.enumerated_list))]
            lines.append("  " * depth + "- " + " ".join(t for t in own if t))
            for nested in item.children:
                if isinstance(nested, (nodes.bullet_list, nodes.enumerated_list)):
                    lines.append(self._list(nested, depth + 1))
        return "\n".join(lines)


def convert_rst(text: str, source_name: str = "<rst>") -> ConvertedDocument:
    """Convert reStructuredText source. :returns: blocks; title = the first section title."""
    _register_handlers(text)
    try:
        doctree = publish_doctree(text, source_path=source_name, settings_overrides=DOCUTILS_SETTINGS)
    except RecursionError:  # docutils recurses once per level of indentation or directive
        raise ConversionError("broken", "block quotes or directives nested too deeply "
                                        "for Python's stack") from None
    # Diagnostics ("(INFO/1) Duplicate name ...") are attached inside lists and definitions
    # too, where the walker reads whole items as text: drop them from the tree.
    for message in list(doctree.findall(nodes.system_message)):
        message.parent.remove(message)
    walker = _Walker(line_offsets(text))
    walker.walk(doctree)
    title = next((_text(t) for t in doctree.findall(nodes.title)), "")
    return ConvertedDocument(blocks=walker.blocks, title=title, converter="docutils")
