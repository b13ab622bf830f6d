"""OCR of scanned pages on the model-free PDF path (Debian's Tesseract, installed by
``make tesseract``): scans made from text PDFs read like their text layer; mixed PDFs OCR
only their image pages; cache, per-page time limit, a failing page, progress; the three
shared scans give their bibliographic metadata and clean chunks."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from ingestion.chunk.step import chunk_directory
from ingestion.convert import ConversionError, OcrConfig, convert_file
from ingestion.convert.ocr import ocr_pages
from ingestion.convert.worker import ConversionWorker
from ingestion.metadata.biblio import extract_bibliography
from ingestion.models import StagedFile
from tests import pdf_factory
from tests.conftest import corpora_path

PAPER_BLOCKS = [
    (("Abstract",), "We study how cortical neurons fire action potentials in vivo."),
    (
        ("1 Introduction",),
        "Neurons communicate through synapses and their membrane potential rises when sodium channels open. "
        "This is the classic description of excitability in the cortex.",
    ),
    (("2 Methods",), "We recorded from forty cells in slices."),
    (("2 Methods", "2.1 Sampling"), "Cells were sampled at random depths."),
    (("3 Results",), "Firing rates doubled after stimulation."),
]
TESSERACT = shutil.which("tesseract")


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """The two-page test paper, its scan (pages rendered at 300 dpi, no text layer), a
    mixed PDF (page one with its text layer, page two scanned) and the paper with a third,
    blank page (an image page by the pre-check's measure)."""
    root = tmp_path_factory.mktemp("scans")
    paper = pdf_factory.paper(root / "paper.pdf")
    scan = pdf_factory.scan_of(paper, root / "paper_scan.pdf")
    mixed = pdfium.PdfDocument.new()
    text, image = pdfium.PdfDocument(str(paper)), pdfium.PdfDocument(str(scan))
    mixed.import_pages(text, [0])
    mixed.import_pages(image, [1])
    mixed.save(str(root / "mixed.pdf"))
    three = pdfium.PdfDocument.new()  # text, text, then a blank scanned page
    three.import_pages(text, [0, 1])
    three.new_page(595, 842)
    three.save(str(root / "three.pdf"))
    for pdf in (mixed, three, text, image):
        pdf.close()
    return {"paper": paper, "scan": scan, "mixed": root / "mixed.pdf", "three": root / "three.pdf",
            "cache": root / "cache"}


def blocks(document) -> list[tuple[tuple[str, ...], str]]:
    return [(block.headings, block.text) for block in document.blocks]


def test_a_scan_of_a_text_pdf_reads_like_its_text_layer(scans):
    text = convert_file(scans["paper"])
    progress = []
    scanned = convert_file(scans["scan"], ocr_config=OcrConfig(workers=2), on_page=lambda *p: progress.append(p))
    assert blocks(text) == PAPER_BLOCKS
    # Reading order across two columns, numbered headings by size, the hyphenated
    # "descrip-/tion" joined, the running head and the page numbers dropped.
    assert blocks(scanned) == PAPER_BLOCKS
    assert scanned.title == text.title == "Spiking neurons in cortex"
    assert scanned.converter.startswith(
        "pdf: model-free (pypdfium2 text lines, XY-cut reading order, font-size headings); "
        "image pages OCRed (tesseract 5.3.0)"
    )
    assert (scanned.pages, scanned.warnings, scanned.metadata["ocr"]["pages"]) == (2, [], [1, 2])
    assert progress == [(1, 2), (2, 2)]
    # Provenance: each block's lines have the boxes of the printed lines, as from the text layer.
    for ocr_block, text_block in zip(scanned.blocks, text.blocks):
        assert [(b.start, b.end, b.page) for b in ocr_block.boxes] == [(b.start, b.end, b.page) for b in text_block.boxes]
        for ocr_box, text_box in zip(ocr_block.boxes, text_block.boxes):
            assert max(abs(a - b) for a, b in zip(ocr_box.box, text_box.box)) < 0.002  # under 1.7 pt on A4
    # OCR lines carry boxes in PDF points (origin bottom-left) like text-layer lines.
    lines, height = scanned.metadata["ocr"]["page_one"]
    assert round(height) == 842
    first = lines[0]
    assert (first.page, first.text, first.ocr, first.bold) == (0, "Journal of Test Neuroscience 12 (2021)", True, False)
    assert [round(v) for v in (first.x0, first.y0, first.x1, first.y1)] == [72, 800, 247, 810]
    title = next(line for line in lines if line.text == "Spiking neurons in cortex")
    assert (title.size, [round(v) for v in (title.x0, title.y0, title.x1, title.y1)]) == (20.5, [73, 738, 318, 757])


def test_a_mixed_pdf_ocrs_only_its_image_pages(scans):
    auto = convert_file(scans["mixed"], ocr_config=OcrConfig(workers=2))
    assert blocks(auto) == PAPER_BLOCKS
    assert (auto.metadata["ocr"]["pages"], auto.metadata["ocr"]["page_one"]) == ([2], None)
    forced = convert_file(scans["mixed"], ocr="on", ocr_config=OcrConfig(workers=2))
    assert blocks(forced) == PAPER_BLOCKS
    assert forced.metadata["ocr"]["pages"] == [1, 2]
    with pytest.raises(ConversionError) as error:
        convert_file(scans["mixed"], ocr="off")
    assert (error.value.reason, str(error.value)) == (
        "needs_ocr", "mixed.pdf: needs OCR (1 of 2 pages have no text layer); OCR is off (--no-ocr)"
    )
    assert "ocr" not in convert_file(scans["paper"]).metadata  # text layers are never OCRed under auto


def test_ocr_results_are_cached_by_content_hash(scans, tmp_path):
    config = OcrConfig(cache_dir=str(tmp_path / "cache"), workers=2)
    first = convert_file(scans["scan"], ocr_config=config)
    copy = shutil.copy(scans["scan"], tmp_path / "renamed.pdf")  # same bytes, another name
    again = convert_file(Path(copy), ocr_config=config)
    assert (first.metadata["ocr"]["cached"], again.metadata["ocr"]["cached"]) == (0, 2)
    assert blocks(again) == blocks(first) == PAPER_BLOCKS
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


def _fake_tesseract(folder: Path, fail_call: int) -> Path:
    """A ``tesseract`` on PATH that runs the real one, except that its ``fail_call``-th
    page fails the way a crashing engine does (exit 1, a message on stderr)."""
    folder.mkdir()
    script = folder / "tesseract"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *hocr*)\n'
        f'  n=$(cat "{folder}/calls" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "{folder}/calls"\n'
        f'  if [ "$n" = {fail_call} ]; then echo "Error: cannot read page image" >&2; exit 1; fi;;\n'
        "esac\n"
        f'exec {TESSERACT} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_a_page_that_fails_fails_alone(scans, tmp_path, monkeypatch):
    fake = _fake_tesseract(tmp_path / "bin", fail_call=2)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    document = convert_file(scans["scan"], ocr_config=OcrConfig(workers=1))
    # Page two ("3 Results") is lost, page one kept: its running head is no longer repeated.
    assert blocks(document) == [(("Spiking neurons in cortex",), "Journal of Test Neuroscience 12 (2021)")] + PAPER_BLOCKS[:4]
    assert document.warnings == [
        "paper_scan.pdf: OCR failed on page 2: Tesseract failed (exit 1: Error: cannot read page image); "
        "the other pages were read"
    ]
    assert document.metadata["ocr"]["pages"] == [1]


def test_a_page_without_ink_is_not_sent_to_the_engine(scans, tmp_path, monkeypatch):
    # Thousands of blank pages went one by one to Tesseract (about 4 s each).
    fake = _fake_tesseract(tmp_path / "bin", fail_call=0)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    padded = pdfium.PdfDocument.new()
    scan = pdfium.PdfDocument(str(scans["scan"]))
    padded.import_pages(scan, [0, 1])
    for at in (0, 2, 4):
        padded.new_page(595, 842, index=at)
    padded.save(str(tmp_path / "padded.pdf"))
    for pdf in (padded, scan):
        pdf.close()
    progress = []
    document = convert_file(tmp_path / "padded.pdf", ocr_config=OcrConfig(workers=1),
                            on_page=lambda *p: progress.append(p))
    assert (tmp_path / "bin" / "calls").read_text() == "2\n"  # the two scanned pages only
    assert blocks(document) == PAPER_BLOCKS
    assert (document.pages, document.warnings, document.metadata["ocr"]["pages"]) == (5, [], [1, 2, 3, 4, 5])
    assert progress == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]


def test_a_page_over_the_time_limit_fails_and_a_scan_with_no_page_read_fails(scans):
    with pytest.raises(ConversionError) as error:
        convert_file(scans["scan"], ocr_config=OcrConfig(page_timeout=0.001, workers=2))
    assert (error.value.reason, str(error.value)) == (
        "ocr_failed", "paper_scan.pdf: OCR failed on every page (page 1: OCR took longer than 0.001 s)"
    )


def test_without_an_ocr_engine_a_scan_needs_ocr_and_says_how_to_install_one(scans, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract on it
    with pytest.raises(ConversionError) as error:
        convert_file(scans["scan"])
    assert (error.value.reason, str(error.value)) == (
        "needs_ocr",
        "paper_scan.pdf: needs OCR (2 of 2 pages have no text layer) and no OCR engine is installed "
        "(install Tesseract: `make tesseract` (Debian: apt-get install tesseract-ocr tesseract-ocr-eng))",
    )
    # A PDF with one image page in three keeps its text and says what was not read.
    partial = convert_file(scans["three"])
    assert blocks(partial) == PAPER_BLOCKS
    assert partial.warnings == [
        "three.pdf: 1 image page(s) not OCRed: no OCR engine is installed "
        "(install Tesseract: `make tesseract` (Debian: apt-get install tesseract-ocr tesseract-ocr-eng))"
    ]


def test_the_conversion_process_reports_pages_as_they_are_ocred(scans, tmp_path):
    progress = []
    with ConversionWorker(memory_limit_mb=2048) as worker:
        document = worker.convert(
            scans["scan"], on_progress=lambda *p: progress.append(p), pipeline="native",
            ocr_config=OcrConfig(workers=1, cache_dir=str(tmp_path)),
        )
        peak = worker.peak_rss_mb
    assert blocks(document) == PAPER_BLOCKS
    assert progress == [(1, 2), (2, 2)]
    assert 0 < peak < 2048


def test_a_page_too_large_to_render_fails_alone_and_the_conversion_process_lives(scans, tmp_path):
    """A 200-inch square page (the largest PDF page size) would be a 3.6-gigapixel bitmap:
    it was a memory overrun that failed the whole file, twice."""
    poster = pdfium.PdfDocument.new()
    scan = pdfium.PdfDocument(str(scans["scan"]))
    poster.import_pages(scan, [0, 1])
    poster.new_page(14400, 14400, index=1)  # no text layer: an image page to OCR
    poster.save(str(tmp_path / "poster.pdf"))
    for pdf in (poster, scan):
        pdf.close()
    with ConversionWorker(memory_limit_mb=1024) as worker:
        document = worker.convert(tmp_path / "poster.pdf", pipeline="native", ocr_config=OcrConfig(workers=1))
        assert worker.processes == 1
    assert blocks(document) == PAPER_BLOCKS
    assert document.warnings == [
        "poster.pdf: OCR failed on page 2: too large to OCR (200 x 200 inches, 3,600 million pixels at 300 dpi; "
        "the limit is 40 million); the other pages were read"
    ]


def _page_one(name: str, cache: Path):
    path = corpora_path("pdfs", name)
    pdf = pdfium.PdfDocument(str(path))
    try:
        result = ocr_pages(path, pdf, [0], OcrConfig(cache_dir=str(cache)))
    finally:
        pdf.close()
    text = "\n".join(line.text for line in result.lines[0])
    return path, (result.lines[0], result.heights[0]), text


def test_the_bibliographic_tiers_read_page_one_of_the_shared_scans(scans):
    found = {}
    for name in ("flajolet1985_jcss_scan.pdf", "lynch1989_mit_tm394_scan.pdf", "severens_asih_scan.pdf"):
        path, page_one, text = _page_one(name, scans["cache"])
        found[name] = extract_bibliography(path, first_pages_text=text, ocr_page_one=page_one, network=False)
    assert found["flajolet1985_jcss_scan.pdf"] == {
        "title": "Probabilistic Counting Algorithms for Data Base Applications",
        "authors": ["Philippe Flajolet", "G. Nigel Martin"],
        "year": 1985,
        "journal": "Reprinted from JOURNAL OF COMPUTER AND SYSTEM SCIENCES",
        "_metadata_complete": False,
        "_sources": ["layout-regex", "ocr"],
    }
    assert found["lynch1989_mit_tm394_scan.pdf"] == {
        "title": "A HUNDRED IMPOSSIBILITY PROOFS FOR DISTRIBUTED COMPUTING",  # as printed
        "authors": ["Nancy Lynch"],
        "year": 1989,
        "_metadata_complete": False,
        "_sources": ["layout-regex", "ocr"],
    }
    assert found["severens_asih_scan.pdf"] == {
        "title": "Hydrogen incorporation in a-Si:H - growth studies on an Expanding Thermal Plasma",
        # the second author line as OCR reads it ("L.J. van IJzendoorn", "van de Sanden" printed)
        "authors": ["R.J. Severens", "F. van de Pas", "J. Bastiaanssen", "W.M.M. Kessels", "So E.A. van Uzendoom",
                    "M.C.M. van-de Sanden", "D.C. Schram"],
        "_metadata_complete": False,
        "_sources": ["layout-regex", "ocr"],
    }


def test_a_shared_scan_is_chunked_with_its_metadata(db, tmp_path, settings):
    settings.KLEA_OCR_CACHE_DIR = tmp_path / "cache"
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(corpora_path("pdfs", "severens_asih_scan.pdf"), folder)
    report = chunk_directory(folder)
    assert [(o.file_name, o.status, o.pages, o.error) for o in report.outcomes] == [
        ("severens_asih_scan.pdf", "chunked", 1, "")
    ]
    staged = StagedFile.objects.get(directory=str(folder))
    default = staged.metadata_map["DEFAULT"]
    assert (default["title"], default["_sources"]) == (
        "Hydrogen incorporation in a-Si:H - growth studies on an Expanding Thermal Plasma", ["layout-regex", "ocr"]
    )
    # both byline lines (a trial upload kept only the first: four of seven names)
    assert default["authors"] == ["R.J. Severens", "F. van de Pas", "J. Bastiaanssen", "W.M.M. Kessels",
                                  "So E.A. van Uzendoom", "M.C.M. van-de Sanden", "D.C. Schram"]
    text = " ".join(chunk["text"] for chunk in staged.chunks)
    assert "In order to understand the possible contribution of the flux of atomic" in text
    assert "the responsible mechanism, a thermally activated cross-linking reaction" in text
    assert "; image pages OCRed (tesseract 5.3.0)" in staged.converter


def test_a_shared_scan_reads_under_its_headings_without_running_heads(scans, tmp_path):
    """The first five pages of the 1985 scan: title, numbered capital headings, running
    heads (title and authors on alternate pages) and page numbers gone, hyphenation joined."""
    source = pdfium.PdfDocument(str(corpora_path("pdfs", "flajolet1985_jcss_scan.pdf")))
    subset = pdfium.PdfDocument.new()
    subset.import_pages(source, [0, 1, 2, 3, 4])
    subset.save(str(tmp_path / "flajolet_p1-5.pdf"))
    subset.close()
    source.close()
    document = convert_file(tmp_path / "flajolet_p1-5.pdf", ocr_config=OcrConfig(cache_dir=str(scans["cache"])))
    assert document.title == "Probabilistic Counting Algorithms for Data Base Applications"
    assert document.metadata["ocr"]["pages"] == [1, 2, 3, 4, 5]
    assert sorted({block.headings for block in document.blocks}) == [
        ("1. INTRODUCTION",), ("2. A PROBABILISTIC COUNTING PROCEDURE AND ITS ANALYSIS",),
        ("Probabilistic Counting Algorithms for Data Base Applications",),  # the front matter
    ]
    first = next(block for block in document.blocks if block.headings == ("1. INTRODUCTION",))
    assert first.text.startswith(
        "As data base systems allow the user to specify more and more complex queries, the need arises for "
        "efficient processing methods. A complex query can however generally be evaluated in a number of "
        "different manners, and the overall performance of a data base system"
    )
    texts = [block.text for block in document.blocks]
    assert not [t for t in texts if "FLAJOLET AND MARTIN" in t or "PROBABILISTIC COUNTING ALGORITHMS" in t]
    assert not [t for t in texts if t.strip().isdigit()]


def test_stores_chunk_shows_ocr_progress_per_page_on_the_terminal_and_the_job(db, scans, tmp_path, settings):
    from io import StringIO

    from django.core.management import call_command

    from ingestion.models import IngestionJob

    settings.KLEA_OCR_CACHE_DIR = tmp_path / "cache"
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(scans["scan"], folder)
    out, err = StringIO(), StringIO()
    call_command("stores", "chunk", str(folder), stdout=out, stderr=err)
    assert "paper_scan.pdf OCR 1/2" in err.getvalue() and "paper_scan.pdf OCR 2/2" in err.getvalue()
    job = IngestionJob.objects.get(kind="chunk", arguments__directory=str(folder))
    assert (job.status, job.outcomes) == ("succeeded", {"paper_scan.pdf": "chunked"})
    # the per-page line showed progress; it goes once the file is chunked
    assert ([m for m in job.messages if "OCR page" in m], job.pages, job.percent) == ([], {}, 100)
    staged = StagedFile.objects.get(directory=str(folder))
    assert [(tuple(c["headings"]), c["text"]) for c in staged.chunks][0] == (
        ("Abstract",), "We study how cortical neurons fire action potentials in vivo."
    )
