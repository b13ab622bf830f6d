"""Stage 1, convert: one entry point, :func:`convert_file`, dispatching on the extension."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from .base import OCR_MODES, Block, ConversionError, ConvertedDocument

if TYPE_CHECKING:
    from .ocr import OcrConfig

# Extension -> "module:function", imported on first use: importing this package costs
# nothing more than .base, so the pdfium child of the source view (domains/sources.py), which
# only draws pages and reads text layers, starts in a fraction of a second instead of
# importing every converter (3 s on a busy 2-core machine, the first "Show in source" waited).
TEXT_CONVERTERS = {
    ".md": "markdown:convert_markdown",
    ".markdown": "markdown:convert_markdown",
    ".myst": "markdown:convert_markdown",
    ".rst": "rst:convert_rst",
    ".rest": "rst:convert_rst",
    ".html": "html:convert_html",
    ".htm": "html:convert_html",
    ".txt": "plain:convert_plain",
    ".text": "plain:convert_plain",
}
PDF_EXTENSIONS = frozenset({".pdf"})
DOCX_EXTENSIONS = frozenset({".docx"})
SUPPORTED_EXTENSIONS = frozenset(TEXT_CONVERTERS) | PDF_EXTENSIONS | DOCX_EXTENSIONS

__all__ = ["Block", "ConversionError", "ConvertedDocument", "OCR_MODES", "OcrConfig", "SUPPORTED_EXTENSIONS", "convert_file"]


def convert_file(
    path: Path, *, ocr: str = "auto", pipeline: str = "auto", ocr_config: OcrConfig | None = None,
    on_page: Callable[[int, int], None] | None = None, max_pages: int | None = None,
) -> ConvertedDocument:
    """Convert one file to blocks under heading chains.

    Markdown/MyST, reST, HTML and plain text go through our own converters (MyST and
    Sphinx markup never reach a block); DOCX through docling's simple pipeline; PDF
    through :func:`ingestion.convert.pdf.convert_pdf` (``ocr``, ``pipeline``, ``ocr_config``,
    ``on_page`` for per-page OCR progress, ``max_pages``).

    :raises ConversionError: unsupported extension, empty, binary or non-UTF-8 content,
        an encrypted or broken PDF, a PDF that needs OCR, or a document with no text.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in PDF_EXTENSIONS:
        from .pdf import convert_pdf

        document = convert_pdf(
            path, ocr=ocr, pipeline=pipeline, ocr_config=ocr_config, on_page=on_page, max_pages=max_pages
        )
    elif suffix in DOCX_EXTENSIONS:
        from .docling_doc import convert_docx

        document = convert_docx(path)
    elif suffix in TEXT_CONVERTERS:
        from .text_input import read_text

        module, name = TEXT_CONVERTERS[suffix].split(":")
        converter = getattr(import_module(f"{__name__}.{module}"), name)
        text = read_text(path)
        try:
            document = converter(text, str(path)) if module == "rst" else converter(text)
        except ConversionError as exc:  # the text converters see text, not the file: name it
            raise ConversionError(exc.reason, f"{path.name}: {exc}") from None
    else:
        raise ConversionError("unsupported", f"{path.name}: unsupported file type '{path.suffix}'")
    if not document.blocks:
        raise ConversionError("no_text", f"{path.name}: no text left after conversion (only markup)")
    if not document.title:
        document.title = document.first_heading() or path.stem
    return document


def __getattr__(name: str):
    """``OcrConfig`` on first use (PEP 562): it imports numpy, which only OCR needs."""
    if name == "OcrConfig":
        from .ocr import OcrConfig

        return OcrConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
