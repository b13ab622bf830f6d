"""Conversion of text formats to blocks under heading chains (bad files:
test_convert_bad_files.py)."""

from pathlib import Path

import pytest

from ingestion.convert import convert_file
from ingestion.convert.base import Block
from ingestion.convert.html import convert_html
from ingestion.convert.markdown import convert_markdown, render_role
from ingestion.convert.plain import convert_plain
from ingestion.convert.rst import convert_rst


MYST = """---
title: Ignored because an H1 exists
date: 2021-04-06
tags: [quick, japanese]
---
(userdocs:getting_started)=
# Getting started
% a MyST comment that must vanish

Install {ref}`pyNeuroML <pyneuroml>` and read {py:class}`~pandas.Series` and {ref}`userdocs:paths`.
See {cite}`Gleeson2010` for details.

```{admonition} Validate first
:class: tip
Always validate your files.
```

:::{note}
Colon fences work too.
:::

```{toctree}
:maxdepth: 2
Userdocs/Paths
```

```{figure} ../images/cell.png
:alt: a cell
A detailed cell morphology.
```

## Install

```{code-block} console
pip install pyneuroml
```

- first item with [a link](https://example.org)
- second item
  - nested item

| Tool | Language |
|------|----------|
| jnml | Java |
"""


def test_markdown_myst_markup_never_reaches_blocks():
    doc = convert_markdown(MYST)
    assert doc.title == "Ignored because an H1 exists"
    assert doc.metadata == {"date": "2021-04-06", "tags": ["quick", "japanese"]}
    assert doc.blocks == [
        Block(("Getting started",), "Install pyNeuroML and read `Series` and paths. See for details."),
        Block(("Getting started",), "**Validate first:** Always validate your files."),
        Block(("Getting started",), "**Note:** Colon fences work too."),
        Block(("Getting started",), "A detailed cell morphology."),
        Block(("Getting started", "Install"), "pip install pyneuroml", "code"),
        Block(("Getting started", "Install"), "- first item with a link\n- second item\n  - nested item", "list"),
        Block(("Getting started", "Install"), "Tool | Language\njnml | Java", "table"),
    ]


def test_myst_eval_rst_body_is_read_as_rst():
    # xarray's MyST pages wrap autosummary lists in {eval-rst}: read as Markdown, the
    # directives reached 23 of its chunks as raw ".. currentmodule:: xarray" lines.
    text = (
        "# Testing\n\n## Strategies\n\nThe module provides\n\n```{eval-rst}\n.. currentmodule:: xarray\n\n"
        ".. autosummary::\n\n   testing.strategies.names\n   testing.strategies.attrs\n\n"
        "See :py:meth:`~Dataset.rename` and ``keep_attrs``.\n```\n\nAfter.\n"
    )
    doc = convert_markdown(text)
    assert [(b.headings, b.kind, b.text) for b in doc.blocks] == [
        (("Testing", "Strategies"), "text", "The module provides"),
        (("Testing", "Strategies"), "text", "testing.strategies.names, testing.strategies.attrs"),
        (("Testing", "Strategies"), "text", "See Dataset.rename and keep_attrs."),
        (("Testing", "Strategies"), "text", "After."),
    ]
    assert [b.lines for b in doc.blocks] == [(5, 5), (7, 16), (7, 16), (18, 18)]
    assert {b.anchor for b in doc.blocks} == {"strategies"}


def test_ordered_list_items_keep_the_numbers_their_source_wrote():
    """A list resumed at 3 after a note, "1." written twice and ")" markers are quoted as
    written (they were renumbered from 1, so a quoted step 3 read as step 1 and was not
    found in the file)."""
    doc = convert_markdown("# Bread\n\n1. Mix.\n1. Knead.\n2. Rest.\n\nNote: flour.\n\n3. Shape.\n4. Bake.\n\n"
                           "7) Cool.\n- loose item\n")
    assert [b.text for b in doc.blocks] == [
        "1. Mix.\n1. Knead.\n2. Rest.", "Note: flour.", "3. Shape.\n4. Bake.", "7) Cool.", "- loose item"]


def test_hugo_front_matter_title_becomes_the_top_heading():
    doc = convert_markdown("---\ntitle: Okonomiyaki\ndate: 2021-04-06\n---\n\nA pancake.\n\n## Ingredients\n\n- flour\n")
    assert doc.title == "Okonomiyaki"
    assert doc.blocks == [
        Block(("Okonomiyaki",), "A pancake."),
        Block(("Okonomiyaki", "Ingredients"), "- flour", "list"),
    ]


def test_front_matter_with_aliases_or_past_the_stack_is_not_read_and_the_page_converts():
    """Nine lines of aliases held 387 million strings once written out for the database:
    a MemoryError in the ingesting process stopped the whole run."""
    bomb = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    bomb += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    page = "\n# Page\n\nText about axons.\n"
    for front, why in [
        ("\n".join([*bomb, "authors: [*l8]", "title: Bomb"]), "a YAML alias (*name) at line 3"),
        ("tags: " + "[" * 5_000 + "]" * 5_000, "nested too deeply"),
        ("title: [unclosed", "expected ',' or ']', but got '<stream end>' at line 2"),
        # YAML quotes the tag: cut, as StagedFile.converter holds 300 characters
        ("title: !" + "a" * 500 + " x", "could not determine a constructor for the tag '!" + "a" * 69 + "... at line 2"),
    ]:
        doc = convert_markdown(f"---\n{front}\n---\n{page}")
        assert (doc.title, doc.metadata, doc.blocks, doc.converter) == (
            "Page", {}, [Block(("Page",), "Text about axons.")], f"markdown-it (MyST); front matter not read: {why}")


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("ref", "pyNeuroML <pyneuroml>", "pyNeuroML"),
        ("ref", "userdocs:get_neuroml", "get neuroml"),
        ("py:meth", "~xarray.Dataset.sel", "Dataset.sel"),
        ("py:func", "~xarray.open_dataset", "open_dataset"),
        ("py:class", "xarray.DataArray", "xarray.DataArray"),
        ("ref", "lemsschema:children_", "children"),
        ("doc", "/getting-started-guide/installing", "installing"),
        ("math", "V_{m}", "V_{m}"),
        ("cite:p", "Gleeson2010", ""),
        ("doc", "the paths page <Userdocs/Paths>", "the paths page"),
        ("ref", "a <b> <c>", "a <b>"),
        ("ref", "<only-a-target>", "<only a target>"),
        ("ref", "text <>", "text <>"),
        ("ref", "text <a>b>", "text <a>b>"),
        ("ref", "text\t\n <target>\n", "text"),
        # a regex read the target by trying every space run before a '<': 8,000 spaces 0.6 s
        ("ref", "a" + " " * 200_000 + "<b", "a" + " " * 200_000 + "<b"),
    ],
)
def test_render_role(name, content, expected):
    assert render_role(name, content) == expected


def test_python_roles_are_inline_code_in_markdown():
    doc = convert_markdown(
        "# Missing values\n\n{py:meth}`~xarray.DataArray.ffill` fills forward; see "
        "{py:func}`xarray.merge` and {math}`x^2`.\n\n## {py:class}`~xarray.Dataset` methods\n\nText.\n"
    )
    assert [(b.headings, b.text) for b in doc.blocks] == [
        (("Missing values",), "`DataArray.ffill` fills forward; see `xarray.merge` and x^2."),
        (("Missing values", "Dataset methods"), "Text."),
    ]


SCHEMA = """(schema:baseiaf)=
## baseIaf

Base type.

(schema:iaftaucell)=
## iafTauCell

extends *{ref}`schema:baseiaf`*

`````{tab-set}
````{tab-item} Parameters
```{csv-table}
:widths: 1, 7, 2
:delim: $

**reset**$ Reset value *(from {ref}`schema:baseiaf`)* ${ref}`schema:dimensions:voltage`
**tau**$  ${ref}`schema:dimensions:time`
```
````
````{tab-item} Usage: XML
```{code-block} xml
<iafTauCell id="a" tau="30ms"/>
```
````
`````
"""


def test_myst_tabs_are_headings_and_csv_tables_are_tables():
    # NeuroML's schema pages: a csv-table with a "$" delimiter was read as Markdown, so
    # the dollar pairs became formulas and their {ref} roles reached the chunks raw.
    doc = convert_markdown(SCHEMA)
    assert [(b.headings, b.kind, b.text) for b in doc.blocks] == [
        (("baseIaf",), "text", "Base type."),
        (("iafTauCell",), "text", "extends baseIaf"),
        (("iafTauCell", "Parameters"), "table", "reset | Reset value (from baseIaf) | voltage\ntau |  | time"),
        (("iafTauCell", "Usage: XML"), "code", '<iafTauCell id="a" tau="30ms"/>'),
    ]
    assert [b.anchor for b in doc.blocks] == ["schema:baseiaf", "schema:iaftaucell", "schema:iaftaucell",
                                             "schema:iaftaucell"]


def test_myst_csv_header_list_table_and_admonitions():
    text = (
        "# T\n\n```{csv-table} Sizes\n:header: \"Name\", \"Size, in mm\"\n\n"
        "pot, \"20, 30\"\n`pan`, 25\n```\n\n"
        "```{list-table}\n:header-rows: 1\n\n* - Key\n  - Value\n* - `a`\n  - {py:attr}`~x.Y.z`\n```\n\n"
        "```{warning} Hot.\nUse gloves.\n```\n\n"
        ":::{seealso}\n- one\n- two\n:::\n\n"
        "```{versionadded} 2024.1\nThe flag.\n```\n"
    )
    assert [(b.kind, b.text) for b in convert_markdown(text).blocks] == [
        ("text", "Sizes"),
        ("table", "Name | Size, in mm\npot | 20, 30\n`pan` | 25"),
        ("table", "Key | Value\n`a` | `Y.z`"),
        ("text", "**Warning:** Hot. Use gloves."),
        ("text", "**See also:**"),
        ("list", "- one\n- two"),
        ("text", "**New in version 2024.1:** The flag."),
    ]


def test_rst_admonitions_lead_with_their_title():
    text = "T\n=\n\n.. admonition:: Before you start\n\n   - a\n   - b\n\n.. warning:: Careful.\n"
    assert [(b.kind, b.text) for b in convert_rst(text).blocks] == [
        ("text", "**Before you start:**"),
        ("list", "- a\n- b"),
        ("text", "**Warning:** Careful."),
    ]


RST = """
.. _indexing:

Indexing and selecting
======================

.. currentmodule:: xarray

Use :py:meth:`~Dataset.sel` for labels and :ref:`positional <pos>` indexing.

.. note::

   Labels must be unique.

.. ipython:: python

    ds.sel(x=1)

.. autosummary::
   :toctree: generated/

   Dataset.sel
   Dataset.isel

Subsection
----------

* one
* two

.. toctree::

   other
"""


def test_rst_diagnostics_never_reach_the_text():
    # docutils attaches an INFO message to a repeated link name inside the list item or
    # definition that holds it (seen in xarray's installing.rst)
    text = (
        "Policy\n======\n\n"
        "- **Python:** 30 months\n  (`NEP-29 <https://numpy.org/neps/nep-0029.html>`_)\n"
        "- **numpy:** 18 months\n  (`NEP-29 <https://numpy.org/neps/nep-0029.html>`_)\n\n"
        "Term\n   `x <https://a.org>`_ and `x <https://a.org>`_\n"
    )
    blocks = convert_rst(text, "policy.rst").blocks
    assert [(b.kind, b.text) for b in blocks] == [
        ("list", "- Python: 30 months (NEP-29)\n- numpy: 18 months (NEP-29)"),
        ("list", "Term: x and x"),
    ]


def test_rst_sphinx_roles_and_directives():
    doc = convert_rst(RST)
    assert doc.title == "Indexing and selecting"
    assert doc.blocks == [
        Block(("Indexing and selecting",), "Use Dataset.sel for labels and positional indexing."),
        Block(("Indexing and selecting",), "**Note:** Labels must be unique."),
        Block(("Indexing and selecting",), "ds.sel(x=1)", "code"),
        Block(("Indexing and selecting",), "Dataset.sel, Dataset.isel"),
        Block(("Indexing and selecting", "Subsection"), "- one\n- two", "list"),
    ]


def test_html_headings_and_chrome():
    html = """<html><head><title>Page</title><script>var x = 1;</script></head><body>
    <nav>menu</nav><h1>Top</h1><p>Intro <b>bold</b>.</p><h2>Part</h2><ul><li>a</li><li>b</li></ul>
    <pre>code()</pre><footer>footer</footer></body></html>"""
    doc = convert_html(html)
    assert doc.title == "Page"
    assert doc.blocks == [
        Block(("Top",), "Intro bold."),
        Block(("Top", "Part"), "- a\n- b", "list"),
        Block(("Top", "Part"), "code()", "code"),
    ]


def test_a_pipe_inside_a_table_cell_stays_escaped_in_every_converter():
    # Unescaped, the cell read as two in the chunk's Markdown table.
    assert convert_markdown("| x | y |\n|---|---|\n| a \\| b | c |\n").blocks == [Block((), "x | y\na \\| b | c", "table")]
    assert convert_html("<table><tr><th>x</th><th>y</th></tr><tr><td>a | b</td><td>c</td></tr></table>").blocks == [
        Block((), "x | y\na \\| b | c", "table")]


def test_html_table_rows_are_its_own_and_nested_tables_read_once():
    """Every row and cell of the tables nested in a cell were read again as the outer
    table's: 600 tables nested in one another (9 KB) took minutes."""
    html = ("<h1>T</h1><table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2 "
            "<table><tr><td>in</td><td>ner</td></tr></table></td></tr></tbody><tr><td>3</td></tr></table>")
    assert convert_html(html).blocks == [Block(("T",), "a | b\n1 | 2 in ner\n3", "table")]
    assert convert_html("<table><tr><td>" * 5_000 + "deep").blocks == [Block((), "deep", "table")]


def test_plain_text_paragraphs():
    doc = convert_plain("Title line\n\nFirst paragraph\ncontinues.\n\n\nSecond.")
    assert doc.title == "Title line"
    assert [b.text for b in doc.blocks] == ["Title line", "First paragraph continues.", "Second."]
    assert [b.lines for b in doc.blocks] == [(1, 1), (3, 4), (7, 7)]
    assert [b.offset for b in doc.blocks] == [0, 12, 41]


def test_plain_text_hard_wrapped_lines_join_but_lists_and_indented_lines_stay(db, tmp_path):
    from ingestion.runs.steps import run_chunk
    from ingestion.models import StagedFile

    (tmp_path / "walks.txt").write_text(
        "Night walks\n\nUse a\nred flashlight, because it keeps\nyour night vision.\r\n\n"
        "Pack:\n- water\n- a map that\nfolds\n* a whistle\n1. check the forecast\n2. tell someone\n\n"
        "Commands:\n    torch --red\n    torch --off\nthen go.\n",
        encoding="utf-8",
    )
    run_chunk(tmp_path)
    staged = StagedFile.objects.get(file_name="walks.txt")
    assert [c["text"] for c in staged.chunks] == [
        "Night walks\n\nUse a red flashlight, because it keeps your night vision.\n\n"
        "Pack:\n- water\n- a map that folds\n* a whistle\n1. check the forecast\n2. tell someone\n\n"
        "Commands:\n    torch --red\n    torch --off\nthen go."
    ]


def test_title_falls_back_to_first_real_heading(tmp_path: Path):
    path = tmp_path / "notes.md"
    path.write_text("## ✨\n\n## Real heading\n\nText here.\n", encoding="utf-8")
    assert convert_file(path).title == "Real heading"


def test_rst_card_label_is_a_heading_and_options_stay_out_of_it():
    # An empty option_spec dict is false to docutils: the option lines were read as the
    # argument ("Get started! :img-top: _static/..." in xarray's index).
    text = (
        "Top\n===\n\n.. grid-item-card:: Get started!\n    :img-top: _static/a.svg\n    :link: guide\n\n"
        "    *New?* Start here.\n\n.. margin:: Aside\n    :class: c\n\n    Plain.\n"
    )
    assert [(b.headings, b.text) for b in convert_rst(text).blocks] == [
        (("Top", "Get started!"), "New? Start here."),
        (("Top",), "Aside"),
        (("Top",), "Plain."),
    ]


def test_the_package_imports_no_converter_until_one_is_used():
    """The source view's pdfium child (domains/sources.py) runs ingestion.convert.worker and
    only draws pages: importing every converter (numpy, bs4, docling) made the first "Show in
    source" after a server start wait 3-4 s on a busy machine."""
    import subprocess
    import sys

    heavy = ("numpy", "bs4", "docling", "ingestion.convert.ocr", "ingestion.convert.markdown", "ingestion.convert.pdf")
    probe = (f"import sys, ingestion.convert.worker; from ingestion.convert import convert_file; "
             f"print([m for m in {heavy!r} if m in sys.modules])")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).resolve().parent.parent)
    assert (loaded.stdout, loaded.stderr) == ("[]\n", "")
    from ingestion.convert import OcrConfig  # still importable from the package, on first use
    from ingestion.convert.ocr import OcrConfig as defined

    assert OcrConfig is defined
