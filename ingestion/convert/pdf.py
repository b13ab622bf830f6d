"""PDF -> blocks: docling's standard pipeline when its models are present, otherwise a
model-free path (pypdfium2 text lines, or Tesseract OCR lines for image pages, XY-cut
reading order, font-size headings).

Every PDF is first opened with pypdfium2, which classifies unreadable files (empty,
encrypted with a user password, not a PDF, no pages) and measures the text layer for
the OCR pre-check (docs/ingestion.md, "Steps"): a page is an image page when it has fewer than 50
non-space characters; a PDF needs OCR when at least half of its pages are image pages.
On the model-free path that per-page verdict decides which pages are OCRed
(:mod:`.ocr`; docs/ingestion.md, "OCR").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .base import OCR_MODES, ConversionError, ConvertedDocument
from .ocr import OcrConfig, OcrError, OcrResult, ocr_pages, unavailable_reason as ocr_unavailable
from .pdf_chars import page_char_count
from .pdf_lines import Line, upright_page
from .pdf_structure import structure

NO_PAGES = "{name}: the PDF has no pages (0 pages)"
TOO_MANY_PAGES = "{name}: {pages:,} pages, more than KLEA_MAX_PAGES ({limit:,}); split the file or raise the limit"
_ZERO_COUNT = re.compile(rb"/Count\s*0(?![0-9])")
_PAGE_COUNT = re.compile(rb"/Count\s*0*[1-9]")
IMAGE_PAGE_CHARS = 50  # fewer non-space characters than this: an image page
NATIVE_CONVERTER = "pdf: model-free (pypdfium2 text lines, XY-cut reading order, font-size headings)"


@dataclass(frozen=True)
class PdfCheck:
    """The OCR pre-check of one PDF: pages, image pages and non-space characters;
    ``image_indexes``: the 0-based indexes of the image pages."""

    pages: int
    image_pages: int
    characters: int
    image_indexes: tuple[int, ...] = ()

    @property
    def needs_ocr(self) -> bool:
        return self.pages == 0 or 2 * self.image_pages >= self.pages


def open_pdf(path: Path) -> pdfium.PdfDocument:
    """Open a PDF with pypdfium2.

    :raises ConversionError: ``empty`` (zero bytes, or a PDF of no pages), ``encrypted`` (a user password is
        needed; an owner password alone opens), ``broken`` (not a readable PDF).
    """
    path = Path(path)
    if path.stat().st_size == 0:
        raise ConversionError("empty", f"{path.name}: the file is empty")
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        # pdfium will not open a valid zero-page PDF and sets no error code for it (the
        # code is then the previous file's, e.g. a password): look at the page tree first.
        if _no_pages(path):
            raise ConversionError("empty", NO_PAGES.format(name=path.name)) from None
        code = getattr(exc, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise ConversionError("encrypted", f"{path.name}: encrypted (a password is needed to open it)") from None
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise ConversionError("encrypted", f"{path.name}: encrypted with an unsupported security handler") from None
        raise ConversionError("broken", f"{path.name}: not a readable PDF ({exc})") from None


def _no_pages(path: Path) -> bool:
    """Whether the file's page tree says it has no pages (``/Count 0`` and no other count)."""
    data = path.read_bytes()
    return bool(_ZERO_COUNT.search(data)) and not _PAGE_COUNT.search(data)


def check_pdf(pdf: pdfium.PdfDocument) -> PdfCheck:
    """Measure the text layer page by page (see the module docstring)."""
    pages = len(pdf)
    characters = 0
    images = []
    for index in range(pages):
        page = pdf[index]
        try:
            count = page_char_count(page)
        finally:
            page.close()
        characters += count
        if count < IMAGE_PAGE_CHARS:
            images.append(index)
    return PdfCheck(pages, len(images), characters, tuple(images))


def inspect_pdf(path: Path) -> PdfCheck:
    """:func:`check_pdf` of a file; unreadable files count as zero pages (need OCR).

    :raises ConversionError: as :func:`open_pdf`.
    """
    pdf = open_pdf(path)
    try:
        return check_pdf(pdf)
    finally:
        pdf.close()


def convert_native(pdf: pdfium.PdfDocument, ocr: OcrResult | None = None) -> tuple[str, list]:
    """Title and blocks of an opened PDF through the model-free path; each block carries
    the boxes of its lines (page provenance). The pages in ``ocr`` (:class:`.ocr.OcrResult`)
    use their OCR lines, measured in the same frame, instead of their text layer."""
    pages, heights, widths = [], [], []
    for index in range(len(pdf)):
        if ocr is not None and index in ocr.lines:
            pages.append(ocr.lines[index])
            heights.append(ocr.heights[index])
            widths.append(ocr.widths[index])
            continue
        page = pdf[index]
        try:
            lines, width, height = upright_page(page, index)
            pages.append(lines)
            heights.append(height)
            widths.append(width)
        finally:
            page.close()
    return structure(pages, heights, widths, frozenset(ocr.lines) if ocr is not None else frozenset())


def convert_pdf(
    path: Path,
    ocr: str = "auto",
    pipeline: str = "auto",
    ocr_config: OcrConfig | None = None,
    on_page: Callable[[int, int], None] | None = None,
    max_pages: int | None = None,
) -> ConvertedDocument:
    """Convert a PDF.

    :param ocr: ``auto`` (OCR the image pages the pre-check finds; text-layer pages
        keep their text), ``on`` (OCR every page), ``off`` (never; PDFs that need OCR
        fail with reason ``needs_ocr``).
    :param pipeline: ``auto`` (standard when its models load, else model-free),
        ``standard`` or ``native``.
    :param ocr_config: cache, per-page time limit, parallel pages (:class:`.ocr.OcrConfig`).
    :param on_page: called with (pages OCRed, pages to OCR) as OCR goes.
    :param max_pages: a PDF with more pages fails at once, before any page is read
        (reason ``too_many_pages``); None: no limit.
    :returns: ConvertedDocument with ``pages``, ``converter`` naming the path that ran,
        ``warnings`` (pages whose OCR failed) and, after OCR, ``metadata["ocr"]``:
        ``engine``, ``pages`` (1-based page numbers OCRed), ``cached`` (pages read from
        the cache), ``page_one`` (page one's OCR lines and height in points, for the
        bibliographic tiers) and ``first_pages_text``.
    :raises ConversionError: see :func:`open_pdf`; ``needs_ocr`` when the PDF has no
        usable text layer and OCR is off or no engine is installed; ``ocr_failed`` when
        OCR failed on every page of a PDF without a text layer; ``no_text``;
        ``too_many_pages``.
    """
    path = Path(path)
    if ocr not in OCR_MODES:
        raise ValueError(f"ocr must be one of {OCR_MODES}, got {ocr!r}")
    pdf = open_pdf(path)
    try:
        if max_pages is not None and len(pdf) > max_pages:
            raise ConversionError("too_many_pages", TOO_MANY_PAGES.format(name=path.name, pages=len(pdf), limit=max_pages))
        check = check_pdf(pdf)
        if check.pages == 0:
            raise ConversionError("empty", NO_PAGES.format(name=path.name))
        needs = f"needs OCR ({check.image_pages} of {check.pages} pages have no text layer)"
        if check.needs_ocr and ocr == "off":
            raise ConversionError("needs_ocr", f"{path.name}: {needs}; OCR is off (--no-ocr)")
        from .docling_pdf import standard_pipeline, unavailable_reason

        standard = standard_pipeline(pipeline)
        if standard is not None:
            info = _info(pdf)
            pdf.close()
            document = standard.convert(path, do_ocr=ocr == "on" or (ocr == "auto" and check.needs_ocr))
            document.pages = check.pages
            document.metadata["pdf_info"] = info
            return document
        targets = tuple(range(check.pages)) if ocr == "on" else check.image_indexes if ocr == "auto" else ()
        document = ConvertedDocument(pages=check.pages, metadata={"pdf_info": _info(pdf)})
        result = None
        converter = NATIVE_CONVERTER
        if targets:
            missing = ocr_unavailable()
            if missing and (check.needs_ocr or ocr == "on"):
                what = needs if check.needs_ocr else "OCR asked for (--ocr)"
                raise ConversionError("needs_ocr", f"{path.name}: {what} and {missing}")
            if missing:
                document.warnings.append(f"{path.name}: {len(targets)} image page(s) not OCRed: {missing}")
            else:
                result = _ocr(path, pdf, targets, check, ocr_config, on_page, document)
                converter += f"; image pages OCRed ({result.engine})"
        title, blocks = convert_native(pdf, result)
    finally:
        pdf.close()
    reason = unavailable_reason() if pipeline != "native" else ""  # asked for: no excuse needed
    document.blocks, document.title = blocks, title
    document.converter = converter + (f"; docling layout model not available ({reason})" if reason else "")
    return document


def _ocr(path: Path, pdf: pdfium.PdfDocument, targets: tuple[int, ...], check: PdfCheck,
         config: OcrConfig | None, on_page, document: ConvertedDocument):
    """OCR ``targets``, recording what was done in ``document`` (metadata and warnings)."""
    try:
        result = ocr_pages(path, pdf, targets, config, on_page)
    except OcrError as exc:
        raise ConversionError("needs_ocr", f"{path.name}: {exc}") from None
    if result.failed and not result.lines and check.needs_ocr:
        first = next(iter(result.failed.values()))
        raise ConversionError("ocr_failed", f"{path.name}: OCR failed on every page ({first})")
    for message in result.failed.values():
        document.warnings.append(f"{path.name}: OCR failed on {message}; the other pages were read")
    # The bibliographic tiers read a text layer where there is one (``--ocr`` OCRs it too).
    first_pages = [index for index in (0, 1) if index in result.lines and index in check.image_indexes]
    document.metadata["ocr"] = {
        "engine": result.engine,
        "pages": [index + 1 for index in sorted(result.lines)],
        "cached": result.cached,
        "page_one": (result.lines[0], result.heights[0]) if 0 in first_pages else None,
        "first_pages_text": "\n".join(line.text for index in first_pages for line in result.lines[index]),
    }
    return result


def _info(pdf: pdfium.PdfDocument) -> dict:
    """The PDF Info dictionary (Title, Author, Subject, Keywords, ...), empty values dropped."""
    try:
        return {k: v.strip() for k, v in pdf.get_metadata_dict(skip_empty=True).items() if v and v.strip()}
    except pdfium.PdfiumError:
        return {}
