"""The Sphinx/MyST vocabulary both text converters share: which directives are dropped,
kept as code, read as admonitions or as labelled panels; how a role reads as chunk text;
a directive's options; the rows of a ``csv-table`` and a ``list-table``.

Pure functions over strings (and, for ``list-table``, markdown-it syntax trees): the
walkers in :mod:`.markdown` and :mod:`.rst` decide where their output goes.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from markdown_it.tree import SyntaxTreeNode

from .base import Block

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
# Roles whose content is shown as written.
_VERBATIM_ROLES = {"math", "abbr", "sub", "sup", "kbd", "guilabel", "menuselection", "samp"}

_OPTION_LINE = re.compile(r"^:[\w-]+:.*$")
_CSV_DELIMITERS = {"tab": "\t", "space": " "}

# The document's MyST labels -> the text of the heading each names (set by :func:`labels`).
_LABELS: ContextVar[dict[str, str]] = ContextVar("klea_myst_labels", default={})


@contextmanager
def labels(headings: dict[str, str]) -> Iterator[None]:
    """Within the block, ``{ref}`label``` renders as the heading ``headings[label]`` names."""
    reset = _LABELS.set(headings)
    try:
        yield
    finally:
        _LABELS.reset(reset)


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
    if name in _VERBATIM_ROLES:
        return content
    shown = _role_text(content)
    if shown:
        text = shown
    elif name in ("ref", "numref", "doc"):
        target = content.lstrip("~!")
        text = _LABELS.get().get(target) or label_text(target)
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


def _role_text(content: str) -> str:
    """The text of a role written ``text <target>`` (``""`` without one). The target is
    what follows the last ``<``; a regex (``(.*?)\\s*<([^<>]+)>$``) tried every ``<`` and
    space run: a role of 8,000 spaces took 0.6 s and 200,000 minutes."""
    body = content[:-1] if content.endswith("\n") else content  # "$" allowed one newline
    start = body.rfind("<")
    if start < 0 or not body.endswith(">") or start == len(body) - 2 or ">" in body[start + 1 : -1]:
        return ""
    return body[:start].rstrip()


def label_text(target: str) -> str:
    """A label not defined in the document: its last part reads best ("schema:cell" ->
    "cell", "userdocs:get_neuroml" -> "get neuroml", "/getting-started/installing" -> "installing")."""
    last = re.split(r"[:/]", target.rstrip("/"))[-1]
    return last.replace("_", " ").replace("-", " ").strip()


def options(content: str) -> dict[str, str]:
    """A directive's leading ``:option: value`` lines, by name."""
    found = {}
    for line in content.split("\n"):
        if not _OPTION_LINE.match(line.strip()):
            break
        name, _, value = line.strip()[1:].partition(":")
        found[name] = value.strip()
    return found


def strip_options(content: str) -> str:
    """A directive's content without its leading ``:option: value`` lines or ``---`` YAML block."""
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


def admonition(name: str, args: str, body: str) -> tuple[str, str]:
    """An admonition's bold lead and its body: ``admonition`` is titled by its argument,
    ``versionadded 2.1`` leads with "New in version 2.1", and any other admonition reads its
    argument as the first line of its body.

    :returns: ``(lead, body)``; ``lead`` is ``""`` for a directive that is no admonition."""
    if name == "admonition":
        return args, body
    if name not in ADMONITIONS:
        return "", body
    if name.startswith(("version", "deprecated")):
        return ADMONITIONS[name] + (f" {args}" if args else ""), body
    return ADMONITIONS[name], (f"{args}\n{body}" if args else body)


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


def csv_rows(content: str, body: str) -> list[list[str]]:
    """A ``csv-table``'s rows of raw cell text, split as docutils does (``:delim:``, quotes);
    a ``:header:`` option is the first row.

    :param content: the directive's content with its options; ``body`` without them.
    :raises csv.Error: a cell over csv's ``field_size_limit`` (128 KiB)."""
    found = options(content)
    delimiter = found.get("delim", ",")
    delimiter = _CSV_DELIMITERS.get(delimiter, delimiter[:1] or ",")
    rows = []
    if found.get("header"):
        rows.extend(csv.reader([found["header"]], delimiter=",", skipinitialspace=True))
    rows.extend(row for row in csv.reader(body.splitlines(), delimiter=delimiter, skipinitialspace=True) if row)
    return [[cell.strip() for cell in row] for row in rows]


def list_table_cells(tree: SyntaxTreeNode) -> Iterator[list[list[SyntaxTreeNode]]]:
    """A ``list-table`` body's rows, each a list of cells, each cell its child nodes: a list
    of rows, each row a list of cells; items without a nested list are skipped."""
    for outer in tree.children:
        if outer.type != "bullet_list":
            continue
        for item in outer.children:
            cells = next((c for c in item.children if c.type == "bullet_list"), None)
            if cells is not None:
                yield [list(cell.children) for cell in cells.children]
