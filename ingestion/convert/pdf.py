"""PDF -> blocks: docling's standard pipeline when its models are present, otherwise a
model-free path (pypdfium2 text lines, XY-cut reading order, font-size headings).

Every PDF is first opened with pypdfium2, which classifies unreadable files (empty,
encrypted with a user password, not a PDF, no pages) and measures the text layer for
the OCR pre-check (docs/ingestion.md, "Steps"): a page is an image page when it has fewer than 50
non-space characters; a PDF needs OCR when at least half of its pages are image pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .base import OCR_MODES, ConversionError, ConvertedDocument
from .pdf_chars import page_char_count
from .pdf_lines import page_lines
from .pdf_structure import structure

NO_PAGES = "{name}: the PDF has no pages (0 pages)"
_ZERO_COUNT = re.compile(rb"/Count\s*0(?![0-9])")
_PAGE_COUNT = re.compile(rb"/Count\s*0*[1-9]")
IMAGE_PAGE_CHARS = 50  # fewer non-space characters than this: an image page
NATIVE_CONVERTER = "pdf: model-free (pypdfium2 text lines, XY-cut reading order, font-size headings)"


@dataclass(frozen=True)
class PdfCheck:
    """The OCR pre-check of one PDF: pages, image pages and non-space characters."""

    pages: int
    image_pages: int
    characters: int

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
    image_pages = characters = 0
    for index in range(pages):
        page = pdf[index]
        try:
            count = page_char_count(page)
        finally:
            page.close()
        characters += count
        image_pages += count < IMAGE_PAGE_CHARS
    return PdfCheck(pages, image_pages, characters)


def inspect_pdf(path: Path) -> PdfCheck:
    """:func:`check_pdf` of a file; unreadable files count as zero pages (need OCR).

    :raises ConversionError: as :func:`open_pdf`.
    """
    pdf = open_pdf(path)
    try:
        return check_pdf(pdf)
    finally:
        pdf.close()


def convert_native(pdf: pdfium.PdfDocument) -> tuple[str, list]:
    """Title and blocks of an opened PDF through the model-free path; each block carries
    the boxes of its lines (page provenance)."""
    pages, heights, widths = [], [], []
    for index in range(len(pdf)):
        page = pdf[index]
        try:
            lines, height = page_lines(page, index)
            width, shown_height = page.get_size()
            pages.append(lines)
            heights.append(height)
            # Lines are measured upright; on a page set sideways the frame is turned.
            widths.append(width if abs(height - shown_height) < 1 else shown_height)
        finally:
            page.close()
    return structure(pages, heights, widths)


def convert_pdf(path: Path, ocr: str = "auto", pipeline: str = "auto") -> ConvertedDocument:
    """Convert a PDF.

    :param ocr: ``auto`` (OCR only PDFs the pre-check says need it), ``on`` (OCR every
        page, standard pipeline only), ``off`` (never; PDFs that need OCR fail with
        reason ``needs_ocr``).
    :param pipeline: ``auto`` (standard when its models load, else model-free),
        ``standard`` or ``native``.
    :returns: ConvertedDocument with ``pages`` and ``converter`` naming the path that ran.
    :raises ConversionError: see :func:`open_pdf`; ``needs_ocr`` when the PDF has no
        usable text layer and OCR is off or unavailable; ``no_text``.
    """
    path = Path(path)
    if ocr not in OCR_MODES:
        raise ValueError(f"ocr must be one of {OCR_MODES}, got {ocr!r}")
    pdf = open_pdf(path)
    try:
        check = check_pdf(pdf)
        if check.pages == 0:
            raise ConversionError("empty", NO_PAGES.format(name=path.name))
        wants_ocr = ocr == "on" or (ocr == "auto" and check.needs_ocr)
        if check.needs_ocr and ocr == "off":
            raise ConversionError(
                "needs_ocr",
                f"{path.name}: needs OCR ({check.image_pages} of {check.pages} pages have no text layer); "
                "OCR is off (--no-ocr)",
            )
        from .docling_pdf import standard_pipeline, unavailable_reason

        standard = standard_pipeline(pipeline)
        if standard is not None:
            info = _info(pdf)
            pdf.close()
            document = standard.convert(path, do_ocr=wants_ocr)
            document.pages = check.pages
            document.metadata["pdf_info"] = info
            return document
        if check.needs_ocr:
            raise ConversionError(
                "needs_ocr",
                f"{path.name}: needs OCR ({check.image_pages} of {check.pages} pages have no text layer) "
                "and no OCR engine is available (docling's models are not installed)",
            )
        title, blocks = convert_native(pdf)
        info = _info(pdf)
    finally:
        pdf.close()
    reason = unavailable_reason()
    converter = NATIVE_CONVERTER + (f"; docling layout model not available ({reason})" if reason else "")
    return ConvertedDocument(
        blocks=blocks, title=title, pages=check.pages, converter=converter, metadata={"pdf_info": info}
    )


def _info(pdf: pdfium.PdfDocument) -> dict:
    """The PDF Info dictionary (Title, Author, Subject, Keywords, ...), empty values dropped."""
    try:
        return {k: v.strip() for k, v in pdf.get_metadata_dict(skip_empty=True).items() if v and v.strip()}
    except pdfium.PdfiumError:
        return {}
