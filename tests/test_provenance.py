"""Provenance: where a chunk's text is in its source (docs/ingestion.md, "Provenance").

PDF blocks carry the boxes of their printed lines and chunks their page span; Markdown,
reST and HTML blocks carry source lines, offset and heading anchor. Stored with the
chunk, read back by retrieval, shown in references (``p. 4–5``), the reference
material, ``manage.py ask`` lines and the Python API's citations (real Postgres).
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from chat.console import reference_lines
from chat.pipeline.references import reference_list, source_line
from chat.rag import Knowledge
from chat.rag.citations import DefaultCitationFormatter
from domains.models import Chunk, Domain
from domains.retrieval import page_span, retrieve, serialize_reference_material
from domains.retrieval.references import group_sources
from domains.retrieval.types import RetrievedChunk
from domains.text import page_label
from ingestion.chunk.chunker import chunk_blocks
from ingestion.convert.base import Block, LineBox, slug
from ingestion.convert.docling_doc import docling_blocks
from ingestion.convert.html import convert_html
from ingestion.convert.markdown import convert_markdown
from ingestion.convert.pdf import convert_pdf
from ingestion.convert.pdf_layout import join_lines, line_spans
from ingestion.convert.plain import convert_plain
from ingestion.convert.rst import convert_rst
from ingestion.runs.ingest import ingest

from .pdf_factory import HEIGHT, LEADING, WIDTH, paper

MARKDOWN = """---
title: Channels
---
(gating)=
# Gating

Sodium channels open
when the membrane depolarises.

## Rate equations

- alpha rises
- beta falls
"""

RST = """Channels
========

Sodium channels open
when the membrane depolarises.

.. _rates:

Rate equations
--------------

Alpha rises with voltage.
"""

HTML = """<html><body>
<h1 id="gating">Gating</h1>
<p>Sodium channels open
when the membrane depolarises.</p>
<h2>Rate equations</h2>
<ul><li>alpha rises</li></ul>
</body></html>
"""


def test_line_spans_count_visible_characters_and_give_a_rejoined_hyphen_to_the_first_line():
    texts = ["This is the classic descrip-", "tion of excitability.", "Next line"]
    assert join_lines(texts) == "This is the classic description of excitability. Next line"
    assert line_spans(texts) == [(0, 23), (23, 42), (42, 50)]


def test_pdf_blocks_carry_their_line_boxes_as_fractions_of_the_page(tmp_path):
    blocks = convert_pdf(paper(tmp_path / "paper.pdf"), pipeline="native").blocks
    intro = next(b for b in blocks if b.headings == ("1 Introduction",))
    assert [(box.page, box.start, box.end) for box in intro.boxes] == [(1, 0, 36), (1, 36, 73), (1, 73, 109), (1, 109, 139)]
    # the column's left edge at 72 pt; the first line's baseline at HEIGHT - 220 - 13 - 4 pt
    # (a 10 pt font: the glyph boxes reach about 7.5 pt above it and 2.5 pt below)
    first = intro.boxes[0].box
    assert first[0] == pytest.approx(72 / WIDTH, abs=0.002)
    baseline = 1 - (HEIGHT - 220 - LEADING - 4) / HEIGHT
    assert first[1] < baseline < first[3] and first[3] - first[1] == pytest.approx(13 / HEIGHT, abs=0.005)
    results = next(b for b in blocks if b.headings == ("3 Results",))
    assert [box.page for box in results.boxes] == [2]


def test_ocr_lines_of_a_scan_give_the_same_boxes_as_the_text_layer(tmp_path):
    from ingestion.convert import OcrConfig, convert_file

    from .pdf_factory import scan_of

    text = convert_pdf(paper(tmp_path / "paper.pdf"), pipeline="native").blocks
    scan = convert_file(scan_of(tmp_path / "paper.pdf", tmp_path / "scan.pdf"), ocr_config=OcrConfig(workers=2)).blocks
    assert [b.text for b in scan] == [b.text for b in text]
    for printed, ocr in zip(text, scan):
        assert [(box.page, box.start, box.end) for box in ocr.boxes] == [(box.page, box.start, box.end) for box in printed.boxes]
        for a, b in zip(printed.boxes, ocr.boxes):  # glyph boxes vs ink boxes: within 1.5 % of the page
            assert a.box == pytest.approx(b.box, abs=0.015)


def test_a_block_split_over_two_chunks_gives_each_chunk_only_its_own_lines():
    sentence = "One two three four five six seven eight nine ten."
    text = " ".join([sentence] * 4)
    tops = (0.1, 0.2, 0.1, 0.2)  # two lines on page 1, two on page 2; 40 visible characters each
    boxes = tuple(LineBox(40 * i, 40 * (i + 1), 1 + i // 2, (0.1, tops[i], 0.9, tops[i] + 0.5)) for i in range(4))
    words = lambda t: len(t.split())  # noqa: E731  (a tokenizer counting words)
    drafts = chunk_blocks([Block(("Results",), text, boxes=boxes)], words, max_tokens=32)
    assert [d.text for d in drafts] == [f"{sentence} {sentence}", f"{sentence} {sentence}"]
    assert [d.provenance for d in drafts] == [
        {"pages": [1, 1], "boxes": [[1, 0.1, 0.1, 0.9, 0.6], [1, 0.1, 0.2, 0.9, 0.7]]},
        {"pages": [2, 2], "boxes": [[2, 0.1, 0.1, 0.9, 0.6], [2, 0.1, 0.2, 0.9, 0.7]]},
    ]


def test_text_sources_record_source_lines_offset_and_heading_anchor():
    md = convert_markdown(MARKDOWN).blocks
    assert [(b.lines, b.offset, b.anchor) for b in md] == [
        ((7, 8), MARKDOWN.index("Sodium"), "gating"), ((12, 13), MARKDOWN.index("- alpha"), "rate-equations"),
    ]
    rst = convert_rst(RST).blocks
    assert [(b.lines, b.offset, b.anchor) for b in rst] == [
        ((4, 5), RST.index("Sodium"), "channels"), ((12, 12), RST.index("Alpha"), "rates"),
    ]
    html = convert_html(HTML).blocks
    assert [(b.text, b.lines, b.offset, b.anchor) for b in html] == [
        ("Sodium channels open when the membrane depolarises.", (3, 4), HTML.index("<p>"), "gating"),
        ("- alpha rises", (6, 6), HTML.index("<ul>"), "rate-equations"),
    ]
    plain = "Title line\n\nPara one\nwraps here.\n"
    assert [(b.lines, b.offset, b.anchor) for b in convert_plain(plain).blocks] == [((1, 1), 0, ""), ((3, 4), 12, "")]
    drafts = chunk_blocks(convert_markdown(MARKDOWN).blocks, lambda t: len(t.split()))
    assert [d.provenance for d in drafts] == [
        {"lines": [7, 8], "offset": MARKDOWN.index("Sodium"), "anchor": "gating"},
        {"lines": [12, 13], "offset": MARKDOWN.index("- alpha"), "anchor": "rate-equations"},
    ]


def test_docling_blocks_carry_the_boxes_docling_recorded():
    from docling_core.types.doc import BoundingBox, CoordOrigin, DocItemLabel, DoclingDocument, ProvenanceItem, Size

    doc = DoclingDocument(name="paper")
    for number in (1, 2):
        doc.add_page(page_no=number, size=Size(width=600, height=800))
    doc.add_heading("1 Results", level=1)

    def prov(page, left, top, right, bottom):  # docling PDF boxes: origin bottom left
        box = BoundingBox(l=left, t=800 - top, r=right, b=800 - bottom, coord_origin=CoordOrigin.BOTTOMLEFT)
        return ProvenanceItem(page_no=page, bbox=box, charspan=(0, 1))

    doc.add_text(DocItemLabel.TEXT, "Firing rates doubled.", prov=prov(2, 60, 80, 300, 100))
    (block,) = docling_blocks(doc, title_in_chain=False)[1]
    assert [(b.page, b.box) for b in block.boxes] == [(2, (0.1, 0.1, 0.5, 0.125))]
    (draft,) = chunk_blocks([block], lambda t: len(t.split()))
    assert draft.provenance == {"pages": [2, 2], "boxes": [[2, 0.1, 0.1, 0.5, 0.125]]}


def test_slug_and_page_label():
    assert slug("2.1 What you need!") == "21-what-you-need"
    assert (page_label([4, 4]), page_label([4, 5]), page_label(None)) == ("p. 4", "p. 4–5", "")


def _chunk(cid, pages, headings=("Results",)):
    provenance = {"pages": pages, "boxes": []} if pages else {}
    return RetrievedChunk(cid, f"text {cid}", list(headings), {"title": "Paper"}, "paper.pdf", 10, "s", "papers",
                          score=1 - cid / 10, provenance=provenance)


def test_reference_material_and_reference_items_name_the_pages():
    chunks = [_chunk(1, [4, 5]), _chunk(2, [7, 7], headings=()), _chunk(3, None, headings=("Notes",))]
    material = serialize_reference_material(chunks)
    assert material.text.splitlines()[5:] == [
        "  Chunk 1: Results (p. 4–5)", "text 1", "", "  Chunk 2: p. 7", "text 2", "", "  Chunk 3: Notes", "text 3",
    ]
    assert page_span(chunks) == [4, 7]
    (item,) = reference_list(group_sources(chunks))
    assert item["pages"] == [4, 7]
    assert [(c["pages"], c["lines"], c["anchor"]) for c in item["chunks"]] == [([4, 5], None, ""), ([7, 7], None, ""),
                                                                              (None, None, "")]
    # each heading chain once with its chunks' pages; pages of chunks without headings after the file
    assert reference_lines([item])[0] == "[1] paper.pdf, p. 7 — Results (p. 4–5); Notes"
    assert source_line(item) == "[1] Paper (paper.pdf, p. 7 — Results (p. 4–5); Notes)"


@pytest.mark.django_db
def test_provenance_is_stored_retrieved_and_carried_to_references_and_citations(tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    paper(folder / "paper.pdf")
    (folder / "channels.md").write_text(MARKDOWN)
    Domain.objects.create(name="prov", description="Papers on neurons.")
    report = ingest(folder, "prov-store", "prov", mirror=True)
    assert sorted((o.file_name, o.status) for o in report.outcomes) == [("channels.md", "stored"), ("paper.pdf", "stored")]

    stored = {c.text: c.provenance for c in Chunk.objects.filter(store__name="prov-store")}
    results = stored["Firing rates doubled after stimulation."]
    assert results["pages"] == [2, 2] and [box[0] for box in results["boxes"]] == [2]
    assert stored["Sodium channels open when the membrane depolarises."] == {
        "lines": [7, 8], "offset": MARKDOWN.index("Sodium"), "anchor": "gating"}

    found = retrieve("firing rates doubled after stimulation", [Domain.objects.get(name="prov")], k=1)
    assert [(c.text, c.pages) for c in found.results] == [("Firing rates doubled after stimulation.", [2, 2])]
    (item,) = reference_list(group_sources(found.results))
    assert (item["file_name"], item["pages"], item["chunks"][0]["pages"]) == ("paper.pdf", [2, 2], [2, 2])
    assert reference_lines([item])[0] == "[1] paper.pdf — 3 Results (p. 2)"

    out = StringIO()
    call_command("ask", "Did firing rates double after stimulation?", "--domain", "prov", "--quiet", stdout=out)
    (line,) = [line for line in out.getvalue().splitlines() if line.startswith("[1] paper.pdf — ")]
    assert "3 Results (p. 2)" in line.split(" — ")[1].split("; ")  # the other chunks retrieved follow

    knowledge = Knowledge(store="prov-store", domain="prov")
    (pdf_item,) = knowledge.search("firing rates doubled after stimulation", top_k=1)
    (md_item,) = knowledge.search("sodium channels open when the membrane depolarises", top_k=1)
    assert (pdf_item.metadata["pages"], "offset" in pdf_item.metadata) == ([2, 2], False)
    assert (md_item.metadata["lines"], md_item.metadata["anchor"]) == ([7, 8], "gating")
    pdf_cite, md_cite = DefaultCitationFormatter().format([pdf_item, md_item])
    assert (pdf_cite.metadata["pages"], pdf_cite.offset) == ([2, 2], None)
    assert md_cite.offset == MARKDOWN.index("Sodium")
    assert Path(md_item.source).read_text()[md_cite.offset:].startswith("Sodium channels open")
    assert str(pdf_cite) == "[1] paper.pdf, p. 2: Firing rates doubled after stimulation."


GLOSSARY = """Terminology
===========

.. glossary::

    DataArray
        A multi-dimensional array with labeled or named
        dimensions, the basic building block of xarray.

    Dataset
        A dict-like collection of DataArray objects with aligned
        dimensions, like a pandas DataFrame in several dimensions.

    Dimension
        In mathematics, the dimension of data is loosely the number
        of degrees of freedom for it; each axis has a name.
"""
TABLE = """# Configuration

| variable | default | meaning |
| --- | --- | --- |
| `KLEA_CHUNK_MAX_TOKENS` | `450` | chunk size budget, heading chain included |
| `KLEA_BM25_K1` | `1.2` | BM25 term saturation parameter for ranking |
| `KLEA_LLM_TIMEOUT` | `120` | seconds without a byte from the model server |
| `KLEA_MCP_MAX_CALLS` | `4` | MCP tool calls per question at most |
| `KLEA_MAX_QUESTION_CHARS` | `4000` | characters per question after trimming |
"""


@pytest.mark.parametrize("source, convert, expected", [
    # each glossary entry its own lines, not the whole glossary's (docutils says [6, 19])
    (GLOSSARY, convert_rst, [("DataArray: A multi", [6, 12]), ("Dimension: In math", [14, 16])]),
    # each part of a split table its own rows (the first part with the header), not [3, 9]
    (TABLE, convert_markdown, [("| variable | defau", [3, 6]), ("| `KLEA_LLM_TIMEOU", [7, 8]),
                               ("| `KLEA_MAX_QUESTI", [9, 9])]),
])
def test_a_chunk_of_a_glossary_or_split_table_records_only_its_own_lines(source, convert, expected):
    from ingestion.chunk.lines import narrow_lines

    drafts = chunk_blocks(convert(source).blocks, lambda t: len(t.split()), max_tokens=40)
    assert {tuple(d.provenance["lines"]) for d in drafts} == {(6, 19) if convert is convert_rst else (3, 9)}
    narrowed = narrow_lines(drafts, source)
    assert [(d.text[:18], d.provenance["lines"]) for d in narrowed] == expected
    lines = source.splitlines(keepends=True)
    assert [d.provenance["offset"] for d in narrowed] == [
        sum(len(line) for line in lines[: first - 1]) for _, (first, _) in expected]


def test_every_part_of_a_long_table_with_repeated_words_records_its_own_rows():
    # Each part searches on from where the previous one ended (rows share their words,
    # one row's escaped pipe is not in the chunk text), in one pass over the table.
    from ingestion.chunk.lines import narrow_lines

    rows = [f"| item {i % 7} | note {i % 3} x | {i} |" if i != 5 else "| a \\| b | c | 5 |" for i in range(60)]
    source = "# Items\n\n| name | note | n |\n| --- | --- | --- |\n" + "\n".join(rows) + "\n"
    drafts = chunk_blocks(convert_markdown(source).blocks, lambda t: len(t.split()), max_tokens=60)
    assert {tuple(d.provenance["lines"]) for d in drafts} == {(3, 64)}
    assert [d.provenance["lines"] for d in narrow_lines(drafts, source)] == (
        [[5, 7], [8, 11]] + [[12 + 3 * k, 14 + 3 * k] for k in range(17)] + [[63, 64]])
