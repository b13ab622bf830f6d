"""PDF and DOCX conversion: the model-free PDF path (headings, reading order, running
heads, hyphenation), the DoclingDocument mapper, docling's DOCX pipeline."""

from __future__ import annotations

import docx
import pytest
from docling_core.types.doc import ContentLayer, DocItemLabel, DoclingDocument, TableCell, TableData

from ingestion.convert import ConversionError, convert_file
from ingestion.convert.base import Block
from ingestion.convert.docling_doc import docling_blocks
from ingestion.convert.docling_pdf import _hub_cache, standard_pipeline, unavailable_reason
from ingestion.convert.pdf import NATIVE_CONVERTER, convert_pdf, inspect_pdf
from ingestion.convert.pdf_layout import join_lines
from ingestion.convert.pdf_structure import numbering_level

from . import pdf_factory


def test_native_path_recovers_headings_columns_and_drops_running_heads(tmp_path):
    doc = convert_pdf(pdf_factory.paper(tmp_path / "paper.pdf"), pipeline="native")
    assert doc.title == "Spiking neurons in cortex"
    assert doc.pages == 2
    assert doc.converter == NATIVE_CONVERTER
    assert doc.blocks == [
        Block(("Abstract",), "We study how cortical neurons fire action potentials in vivo."),
        Block(
            ("1 Introduction",),
            "Neurons communicate through synapses and their membrane potential rises when sodium "
            "channels open. This is the classic description of excitability in the cortex.",
        ),
        Block(("2 Methods",), "We recorded from forty cells in slices."),
        Block(("2 Methods", "2.1 Sampling"), "Cells were sampled at random depths."),
        Block(("3 Results",), "Firing rates doubled after stimulation."),
    ]


def test_pdf_info_is_kept_for_the_default_entry(tmp_path):
    doc = convert_pdf(pdf_factory.paper(tmp_path / "paper.pdf"), pipeline="native")
    assert doc.metadata["pdf_info"]["Title"] == "Spiking neurons in cortex"


def test_offline_auto_falls_back_to_the_model_free_path_and_says_why(tmp_path):
    assert standard_pipeline("native") is None
    assert standard_pipeline("auto") is None  # docling's layout model cannot load here
    reason = f"no docling layout model in {_hub_cache()} and DOCLING_ARTIFACTS_PATH unset"
    assert unavailable_reason() == reason
    doc = convert_pdf(pdf_factory.paper(tmp_path / "paper.pdf"))
    assert doc.converter == f"{NATIVE_CONVERTER}; docling layout model not available ({reason})"
    with pytest.raises(ConversionError) as info:
        convert_pdf(tmp_path / "paper.pdf", pipeline="standard")
    assert (info.value.reason, str(info.value)) == ("no_model", f"docling's standard pipeline is not available ({reason})")


@pytest.mark.parametrize(
    "text, level",
    [("2 Methods", 1), ("2.1 Sampling", 2), ("5.4.1 Election restriction", 3), ("IV. RESULTS", 1),
     ("A. Generic transient search", 2), ("Introduction", None), ("1998 was a good year", None)],
)
def test_numbering_level(text, level):
    assert numbering_level(text) == level


def test_join_lines_rejoins_hyphenated_words():
    assert join_lines(["classic descrip\x02", "tion of", "electromag-", "netic post-", "Newtonian"]) == (
        "classic description of electromagnetic post- Newtonian"
    )


def test_pre_check_counts_image_pages(tmp_path):
    text = inspect_pdf(pdf_factory.paper(tmp_path / "paper.pdf"))
    scan = inspect_pdf(pdf_factory.scanned(tmp_path / "scan.pdf", pages=3))
    assert (text.pages, text.image_pages, text.needs_ocr) == (2, 0, False)
    assert (scan.pages, scan.image_pages, scan.characters, scan.needs_ocr) == (3, 3, 0, True)


def _docling_document() -> DoclingDocument:
    doc = DoclingDocument(name="paper")
    doc.add_text(DocItemLabel.PAGE_HEADER, "Journal of Tests", content_layer=ContentLayer.FURNITURE)
    doc.add_title("A paper about neurons")
    doc.add_heading("1 Introduction", level=1)
    doc.add_text(DocItemLabel.TEXT, "Neurons fire.")
    doc.add_heading("1.1 Channels", level=1)  # docling's PDF pipeline gives every header level 1
    picture = doc.add_picture()
    caption = doc.add_text(DocItemLabel.CAPTION, "Figure 1: a neuron.", parent=picture)  # as docling nests it
    picture.captions.append(caption.get_ref())
    data = TableData(num_rows=2, num_cols=2)
    for row, cells in enumerate([("Ion", "Charge"), ("Na", "+1")]):
        for col, text in enumerate(cells):
            data.table_cells.append(TableCell(text=text, start_row_offset_idx=row, end_row_offset_idx=row + 1,
                                              start_col_offset_idx=col, end_col_offset_idx=col + 1))
    doc.add_table(data=data)
    group = doc.add_list_group()
    doc.add_list_item("first", parent=group)
    doc.add_list_item("second", parent=group)
    doc.add_code("x = 1")
    doc.add_text(DocItemLabel.PAGE_FOOTER, "page 3")
    return doc


def test_docling_mapper_keeps_captions_drops_images_and_furniture():
    title, blocks = docling_blocks(_docling_document(), title_in_chain=False)
    assert title == "A paper about neurons"
    assert blocks == [
        Block(("1 Introduction",), "Neurons fire."),
        Block(("1 Introduction", "1.1 Channels"), "Figure 1: a neuron."),
        Block(("1 Introduction", "1.1 Channels"), "Ion | Charge\nNa | +1", "table"),
        Block(("1 Introduction", "1.1 Channels"), "- first\n- second", "list"),
        Block(("1 Introduction", "1.1 Channels"), "x = 1", "code"),
    ]
    assert all("<!-- image -->" not in b.text for b in blocks)
    _, chained = docling_blocks(_docling_document(), title_in_chain=True)
    assert chained[0] == Block(("A paper about neurons", "1 Introduction"), "Neurons fire.")


def test_docx_through_docling_simple_pipeline(tmp_path):
    document = docx.Document()
    document.add_heading("Lab manual", 0)
    document.add_heading("1 Setup", 1)
    document.add_paragraph("Calibrate the amplifier first.")
    document.add_heading("1.1 Electrodes", 2)
    document.add_paragraph("Use silver wire.", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "Ion", (0, 1): "Charge", (1, 0): "K", (1, 1): "+1"}.items():
        table.cell(r, c).text = text
    document.save(tmp_path / "manual.docx")
    converted = convert_file(tmp_path / "manual.docx")
    assert converted.title == "Lab manual"
    assert converted.converter == "docling simple pipeline (DOCX)"
    assert converted.blocks == [
        Block(("Lab manual", "1 Setup"), "Calibrate the amplifier first."),
        Block(("Lab manual", "1 Setup", "1.1 Electrodes"), "- Use silver wire.", "list"),
        Block(("Lab manual", "1 Setup", "1.1 Electrodes"), "Ion | Charge\nK | +1", "table"),
    ]


def test_a_word_table_renders_as_one_markdown_table_whatever_its_merged_cells_and_pipes(tmp_path):
    """Word tables showed raw pipes or lost cells in answers: a matrix's empty top-left
    cell dropped the header's leading separator, a "|" in a cell split it in two, a merged
    title row made a one-column header (the cells beside it were cut), a merged cell made
    its row narrower."""
    from markdown_it import MarkdownIt

    from ingestion.chunk.chunker import chunk_document
    from domains.embeddings import count_tokens

    document = docx.Document()
    document.add_heading("Rota", 1)
    table = document.add_table(rows=5, cols=3)
    table.cell(0, 0).merge(table.cell(0, 2)).text = "Table 1: Who cleans"
    for (r, c), text in {(1, 1): "Mon", (1, 2): "Tue|Wed", (2, 0): "Ann", (2, 1): "sink", (2, 2): "floor",
                         (4, 0): "Cy", (4, 2): "hall"}.items():
        table.cell(r, c).text = text
    table.cell(3, 0).merge(table.cell(3, 1)).text = "Bo, both days"
    table.cell(3, 2).text = "bins"
    document.save(tmp_path / "rota.docx")
    converted = convert_file(tmp_path / "rota.docx")
    assert converted.blocks == [
        Block(("Rota",), "Table 1: Who cleans"),
        Block(("Rota",), "| Mon | Tue\\|Wed\nAnn | sink | floor\nBo, both days |  | bins\nCy |  | hall", "table"),
    ]
    (chunk,) = chunk_document(converted, count_tokens)
    assert chunk.text == ("Table 1: Who cleans\n\n| | Mon | Tue\\|Wed |\n| --- | --- | --- |\n| Ann | sink | floor |\n"
                          "| Bo, both days |  | bins |\n| Cy |  | hall |")
    html = MarkdownIt("commonmark").enable("table").render(chunk.text)
    assert "|" not in html.replace("Tue|Wed", "")  # no raw pipe: one table, every cell in it
    assert html.count("<tr>") == 4 and html.count("<td>") == 9 and "<th>Tue|Wed</th>" in html


def _package(path, parts: dict[str, bytes]):
    import zipfile

    with zipfile.ZipFile(path, "w") as package:
        for name, data in parts.items():
            package.writestr(name, data)
    return path


def _good_docx(path):
    document = docx.Document()
    document.add_paragraph("Calibrate the amplifier first.")
    document.save(path)
    return path


def _malformed_docx(path, tmp_path):
    """A real .docx whose main part has a mismatched tag on line 2."""
    import zipfile

    good = _good_docx(tmp_path / "good-source.docx")
    with zipfile.ZipFile(good) as source:
        parts = {name: source.read(name) for name in source.namelist()}
    parts["word/document.xml"] = (b'<?xml version="1.0"?>\n<w:document xmlns:w="http://schemas.openxmlformats.org/'
                                  b'wordprocessingml/2006/main"><w:body><w:p></w:body></w:document>')
    return _package(path, parts)


BROKEN_DOCX = [
    ("text", lambda p, t: p.write_bytes(b"Plain notes, saved with the wrong extension."),
     "broken", "not a readable Word file: not a ZIP package (a .docx is one)"),
    ("fake zip", lambda p, t: p.write_bytes(b"PK\x03\x04 not really a zip"),
     "broken", "not a readable Word file: a damaged ZIP package (File is not a zip file)"),
    ("truncated", lambda p, t: p.write_bytes(_good_docx(t / "whole.docx").read_bytes()[:4000]),
     "broken", "not a readable Word file: a damaged ZIP package (File is not a zip file)"),
    ("word 97", lambda p, t: p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 2000),
     "broken", "a Word 97-2003 (.doc) file, not .docx; save it as .docx"),
    ("password", lambda p, t: p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600
                                           + "EncryptionInfo".encode("utf-16-le") + b"\0" * 600),
     "encrypted", "the Word file is protected with a password; save it without one"),
    ("excel", lambda p, t: _package(p, {"[Content_Types].xml": b"<Types/>", "xl/workbook.xml": b"<workbook/>"}),
     "broken", "not a Word document: an Excel workbook renamed .docx"),
    ("other zip", lambda p, t: _package(p, {"notes.txt": b"hello"}),
     "broken", "not a Word document: the package has no word/document.xml"),
    ("malformed xml", _malformed_docx,
     "broken", "not a readable Word file: word/document.xml is not well-formed XML (line 2, column 99: mismatched tag)"),
]


@pytest.mark.parametrize("make, reason, message", [case[1:] for case in BROKEN_DOCX], ids=[c[0] for c in BROKEN_DOCX])
def test_a_broken_docx_fails_saying_what_is_wrong(tmp_path, make, reason, message):
    make(tmp_path / "bad.docx", tmp_path)
    with pytest.raises(ConversionError) as info:
        convert_file(tmp_path / "bad.docx")
    assert (info.value.reason, str(info.value)) == (reason, f"bad.docx: {message}")


def test_a_model_on_disk_that_does_not_load_falls_back_with_the_loader_error(tmp_path, monkeypatch):
    from ingestion.convert import docling_pdf

    (tmp_path / "hub" / "models--docling-project--docling-layout-heron").mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    saved = dict(docling_pdf._cache)
    docling_pdf._cache.clear()  # the check runs once per process; run it again here
    try:
        assert standard_pipeline("auto") is None
        assert unavailable_reason() == "LocalEntryNotFoundError"
    finally:
        docling_pdf._cache.clear()
        docling_pdf._cache.update(saved)


def test_docling_accelerator_follows_the_environment(monkeypatch):
    from ingestion.convert.docling_pdf import accelerator_options

    monkeypatch.delenv("DOCLING_DEVICE", raising=False)
    monkeypatch.delenv("DOCLING_NUM_THREADS", raising=False)
    default = accelerator_options()
    assert (default.device, default.num_threads) == ("auto", 4)
    monkeypatch.setenv("DOCLING_DEVICE", "cpu")
    monkeypatch.setenv("DOCLING_NUM_THREADS", "2")
    configured = accelerator_options()
    assert (configured.device, configured.num_threads) == ("cpu", 2)


def test_tex_ligature_codes_are_read_as_letters(tmp_path):
    """Fonts without a ToUnicode map hand out TeX OT1 ligatures as U+000B-U+000F; the
    line reader used to take them for spaces and line breaks ("e ective")."""
    from .biblio_pdfs import line, write_pdf

    body = "An e\x0bective con\x0cning method is e\x0ecient, ba\x0fing and \x0cnal in every case."
    path = write_pdf(tmp_path / "tex.pdf", [[line(72, 100, body, 11), line(72, 120, "A second line of plain text.", 11)]])
    doc = convert_pdf(path, pipeline="native")
    assert [block.text for block in doc.blocks] == [
        "An effective confining method is efficient, baffling and final in every case.",
        "A second line of plain text.",
    ]


def test_symbols_the_text_layer_misreads_are_read_as_set(tmp_path):
    """OT1's "fl" code reads as a carriage return, TeX's math italic "/" as "=" (a glyph
    taller than wide), and a "+" with a bar set under it is "±"."""
    from .biblio_pdfs import Line, Run, write_pdf

    path = write_pdf(tmp_path / "symbols.pdf", [[
        Line(72, 100, [Run("Energies to order 1", 11), Run("=", 11, font="F4"), Run("mQ and a = b in the \x0davor sector.", 11)]),
        Line(72, 120, [Run("Ki = 11.21 +", 11), Run("-", 11, rise=-3.5, back=458), Run(" 0.74 nM, x + y - z.", 11)]),
    ]])
    doc = convert_pdf(path, pipeline="native")
    assert [block.text for block in doc.blocks] == [
        "Energies to order 1/mQ and a = b in the flavor sector.",
        "Ki = 11.21 ± 0.74 nM, x + y - z.",
    ]


def test_accents_over_no_letter_are_all_kept(tmp_path):
    """An accent over no letter waits for the next glyph; a second one in a row (quotes
    set as two acutes, a run of diaereses) took its place, and the first was lost: the
    text layer's lines read "said \u0301yes \u0301" and "a \u0308"."""
    import pypdfium2 as pdfium

    from ingestion.convert.pdf_lines import page_lines

    from .biblio_pdfs import Line, Run, write_pdf

    path = write_pdf(tmp_path / "accents.pdf", [[
        Line(72, 100, [Run("He said \u00b4\u00b4yes\u00b4\u00b4 to it.", 11)]),
        Line(72, 120, [Run("a" + "\u00a8" * 6 + " b", 11)]),
    ]])
    lines, _ = page_lines(pdfium.PdfDocument(str(path))[0], 0)
    # a spacing accent reads as a space and its combining mark (NFKC); a run of them
    # longer than 1.5 em after its letter opens a line, as a gap does
    assert [line.text for line in lines] == [
        "He said \u0301 \u0301yes \u0301 \u0301 to it.", "a" + " \u0308" * 5, "\u0308 b"]


def test_line_text_writes_bullet_glyphs_as_one_bullet_and_drops_control_characters():
    from ingestion.convert.textclean import line_text

    # A symbol font without a ToUnicode map hands its bullet out as U+0088 (JSS papers).
    assert line_text("\x88 Column headers are values") == "\u2022 Column headers are values"
    assert line_text("\u25cf Each variable") == "\u2022 Each variable"
    assert line_text("\ue020 Private-use bullet") == "\u2022 Private-use bullet"
    # Math-font codes are dropped; pdfium's hyphen mark stays only at the line's end.
    assert line_text("a\x01b\x16c\x85d\ue001e\x02f appli\x02") == "abcdef appli\x02"
    # The dots of a scatter plot are no list.
    assert line_text("\u25cf \u25cf \u25cf") == "\u25cf \u25cf \u25cf"


def test_bulleted_and_numbered_pdf_lines_become_one_list_block_each(tmp_path):
    """List items set as PDF lines (a bullet glyph, or 1. 2. 3.) are one Markdown list
    block after their lead-in, so an answer can quote the list whole."""
    from .biblio_pdfs import line, write_pdf

    lines = [
        line(72, 100, "A dataset is tidy when it follows three rules. In tidy data:", 11),
        line(72, 115, "1. Each variable forms a column.", 11),
        line(72, 130, "2. Each observation forms a row.", 11),
        line(72, 145, "3. Each type of observational unit forms a table.", 11),
        line(72, 175, "The five most common problems with messy datasets are:", 11),
        line(72, 190, "\u2022 Column headers are values, not variable names.", 11),
        line(72, 205, "\u2022 Multiple variables are stored in one column", 11),
        line(72, 220, "\u2022 Variables are stored in both rows and columns", 11),
        line(72, 250, "Each problem has its own remedy.", 11),
    ]
    doc = convert_pdf(write_pdf(tmp_path / "lists.pdf", [lines]), pipeline="native")
    assert [(block.kind, block.text) for block in doc.blocks] == [
        ("text", "A dataset is tidy when it follows three rules. In tidy data:"),
        ("list", "1. Each variable forms a column.\n2. Each observation forms a row.\n"
                 "3. Each type of observational unit forms a table."),
        ("text", "The five most common problems with messy datasets are:"),
        ("list", "- Column headers are values, not variable names.\n- Multiple variables are stored in one column\n"
                 "- Variables are stored in both rows and columns"),
        ("text", "Each problem has its own remedy."),
    ]
    # Each item keeps its printed line: character ranges (without white space) of the list text.
    numbered = doc.blocks[1]
    assert [(box.start, box.end, box.page) for box in numbered.boxes] == [(0, 27, 1), (27, 54, 1), (54, 95, 1)]
    assert [round(box.box[1] * 792) for box in numbered.boxes] == [107, 122, 137]
