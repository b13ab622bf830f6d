"""Test PDFs written with reportlab: headings in larger bold type, two columns, running
heads, encryption, image-only (scanned) pages, damaged files, 1,000 pages."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from reportlab.lib.pagesizes import A4
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

WIDTH, HEIGHT = A4
BODY = ("Helvetica", 10)
HEADING = ("Helvetica-Bold", 14)
SUBHEADING = ("Helvetica-Bold", 12)
TITLE = ("Helvetica-Bold", 20)
LEADING = 13


def _lines(c: canvas.Canvas, x: float, y: float, lines: list[str], font=BODY) -> float:
    c.setFont(*font)
    for line in lines:
        c.drawString(x, y, line)
        y -= LEADING
    return y


def paper(path: Path, encrypt: StandardEncryption | None = None) -> Path:
    """A two-page, two-column paper: title, numbered sections and a subsection, a running
    head and page numbers, a word hyphenated across lines.

    Reading order: Abstract, 1 Introduction (left column), 2 Methods > 2.1 Sampling
    (right column), then page two: 3 Results.
    """
    c = canvas.Canvas(str(path), pagesize=A4, encrypt=encrypt)
    c.setTitle("Spiking neurons in cortex")
    for page in (1, 2):
        c.setFont(*BODY)
        c.drawString(72, HEIGHT - 40, "Journal of Test Neuroscience 12 (2021)")  # running head
        c.drawString(WIDTH / 2, 30, str(page))  # page number
        if page == 1:
            c.setFont(*TITLE)
            c.drawString(72, HEIGHT - 100, "Spiking neurons in cortex")
            y = _lines(c, 72, HEIGHT - 140, ["Abstract"], HEADING)
            _lines(c, 72, y - 4, ["We study how cortical neurons fire action potentials in vivo."])
            left, right, top = 72, WIDTH / 2 + 10, HEIGHT - 220
            y = _lines(c, left, top, ["1 Introduction"], HEADING)
            _lines(c, left, y - 4, [
                "Neurons communicate through synapses and",
                "their membrane potential rises when sodium",
                "channels open. This is the classic descrip-",
                "tion of excitability in the cortex.",
            ])
            y = _lines(c, right, top, ["2 Methods"], HEADING)
            y = _lines(c, right, y - 4, ["We recorded from forty cells in slices."])
            y = _lines(c, right, y - 8, ["2.1 Sampling"], SUBHEADING)
            _lines(c, right, y - 4, ["Cells were sampled at random depths."])
        else:
            y = _lines(c, 72, HEIGHT - 100, ["3 Results"], HEADING)
            _lines(c, 72, y - 4, ["Firing rates doubled after stimulation."])
        c.showPage()
    c.save()
    return path


def many_pages(path: Path, pages: int = 1000) -> Path:
    """``pages`` pages, each with a heading and a paragraph of its own."""
    c = canvas.Canvas(str(path), pagesize=A4)
    for page in range(1, pages + 1):
        if page % 10 == 1:
            c.setFont(*HEADING)
            c.drawString(72, HEIGHT - 200, f"Chapter {page // 10 + 1}")
        _lines(c, 72, HEIGHT - 240, [
            f"Page {page} records the membrane potential of neuron number {page}.",
            "The recording lasted ten seconds and showed regular firing.",
        ])
        c.showPage()
    c.save()
    return path


def scanned(path: Path, pages: int = 2) -> Path:
    """Pages that are only an image of text (no text layer), like a scan."""
    image = Image.new("L", (600, 800), 255)
    font = ImageFont.load_default(size=28)  # about 11 pt once the image fills an A4 page
    ImageDraw.Draw(image).text((40, 40), "A scanned page about neurons", fill=0, font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    c = canvas.Canvas(str(path), pagesize=A4)
    for _ in range(pages):
        c.drawImage(ImageReader(io.BytesIO(buffer.getvalue())), 0, 0, WIDTH, HEIGHT)
        c.showPage()
    c.save()
    return path


def encrypted(path: Path, user_password: str, owner_password: str) -> Path:
    """:func:`paper` encrypted (128-bit RC4). An empty user password = owner password only."""
    return paper(path, StandardEncryption(user_password, owner_password, strength=128))


def truncated(path: Path, source: Path, keep: float = 0.5) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def broken_xref(path: Path, source: Path) -> Path:
    """:func:`paper` with its cross-reference table and startxref offset wrong."""
    data = source.read_bytes()
    xref = data.rindex(b"\nxref")
    table = data[xref:].replace(b" 00000 n", b" 99999 n")
    start = table.rindex(b"startxref")
    table = table[:start] + b"startxref\n12345\n%%EOF\n"
    path.write_bytes(data[:xref] + table)
    return path


def no_pages(path: Path) -> Path:
    """A valid PDF whose page tree is empty (``/Count 0``)."""
    canvas.Canvas(str(path)).save()  # nothing drawn: no page is emitted
    return path


def scan_of(source: Path, path: Path, dpi: int = 300) -> Path:
    """An image-only copy of ``source``: each page rendered at ``dpi`` in grey levels and
    wrapped as a PDF page of the same size (no text layer), so its expected text is known."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(source))
    try:
        images = [pdf[i].render(scale=dpi / 72, grayscale=True).to_pil().convert("L") for i in range(len(pdf))]
    finally:
        pdf.close()
    images[0].save(path, format="PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return path


def strokes(path: Path, lines: int) -> Path:
    """One A4 page: twenty lines of text over ``lines`` pairs of crossing strokes, in one
    compressed content stream (~80 bytes a pair drawn, under one on disk): cheap to read
    as text, slow for pdfium to draw (2.5 million pairs, 195 KB, took it 90 s at 800 px)."""
    import zlib

    text = b"BT /F1 12 Tf 72 800 Td 14 TL " + b"".join(
        b"(Line %d of the stroked page: axons and dendrites in the cortex.) '\n" % i for i in range(20)) + b"ET\n"
    content = zlib.compress(text + b"0.1 w\n" + b"0 0 m 595 842 l 595 0 m 0 842 l\n" * lines + b"S\n", 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def with_info_title(path: Path, title: str, line: str) -> Path:
    """One page printing ``line`` twelve times, its Info dictionary's Title ``title``
    (written as given: a NUL is kept, as a hostile producer may)."""
    c = canvas.Canvas(str(path))
    c.setTitle(title)
    _lines(c, 72, 750, [line] * 12)
    c.save()
    return path
