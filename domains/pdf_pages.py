"""The source view's pdfium work on one PDF file: a page drawn as a JPEG, the text layer
of a page. Django-free: :func:`domains.sources.render_page` and
:func:`domains.sources.text_layer` run these in the conversion worker's child process
(:class:`ingestion.convert.worker.ConversionWorker`, tasks "draw_page" and "text_layer"),
where a time limit holds: a 195 KB PDF whose page strokes 2.5 million pairs of lines
took pdfium minutes to draw, and in the server process every other page view waited on it.
"""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium

from ingestion.convert.pdf_lines import upright_chars

# A page taller than this many times its image width (a scroll, a poster strip) is drawn
# narrower, so one page never costs more than width x 4 width pixels of memory.
MAX_ASPECT = 4
JPEG_QUALITY = 85  # page images as JPEG: about 10x faster to encode than PNG, a third smaller


def draw_page(path: Path, page: int, width: int, name: str) -> tuple[bytes, int, int]:
    """Page ``page`` (1-based) of the PDF at ``path`` as a JPEG ``width`` pixels wide
    (narrower for a page more than MAX_ASPECT times taller than wide); ``name``: the
    document's, for messages.

    :returns: (JPEG bytes, pixel width, pixel height).
    :raises ValueError: no such page (the message says how many there are).
    """
    pdf = pdfium.PdfDocument(str(path))
    try:
        if not 1 <= page <= len(pdf):
            raise ValueError(f"{name} has pages 1 to {len(pdf)}, not {page}")
        pdf_page = pdf[page - 1]
        try:
            points_wide, points_high = pdf_page.get_size()
            # at least a point each way: never a division by zero
            scale = min(width / max(points_wide, 1.0), MAX_ASPECT * width / max(points_high, 1.0))
            image = pdf_page.render(scale=scale).to_pil()
        finally:
            pdf_page.close()
    finally:
        pdf.close()
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=JPEG_QUALITY)
    return buffer.getvalue(), image.width, image.height


def text_layer(path: Path, page: int) -> tuple[list, float, float] | None:
    """The text layer of page ``page`` (1-based) of the PDF at ``path``, read as ingestion
    read it.

    :returns: ``(chars, width, height)`` as :func:`~ingestion.convert.pdf_lines.upright_chars`
        gives them; None when the file has no such page.
    """
    pdf = pdfium.PdfDocument(str(path))
    try:
        if not 1 <= page <= len(pdf):
            return None
        pdf_page = pdf[page - 1]
        try:
            return upright_chars(pdf_page)
        finally:
            pdf_page.close()
    finally:
        pdf.close()
