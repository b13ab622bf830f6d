"""Synthetic PDFs for the bibliography tests, written at test time.

A minimal PDF 1.4 writer: standard Type 1 fonts (WinAnsi), text runs with size and rise
(superscripts) set after or over the text before them, an Info dictionary, page rotation.
pdfium reads them like any PDF. Font ``F4`` is a Type 3 font as dvips writes TeX's math
italic: code 61 (read "=", no ToUnicode map) draws a slash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

FONTS = {"F1": "Helvetica", "F2": "Times-Roman", "F3": "Helvetica-Bold"}


@dataclass
class Run:
    text: str
    size: float = 10.0
    rise: float = 0.0  # points above the baseline (superscripts)
    font: str = "F1"
    back: float = 0.0  # thousandths of an em moved back before the run (set over the text before it)


@dataclass
class Line:
    """Runs printed one after another from (x, y); ``y`` in points from the page top."""

    x: float
    y: float
    runs: list[Run] = field(default_factory=list)
    vertical: bool = False  # printed bottom-to-top (a margin stamp)


def line(x: float, y: float, text: str, size: float = 10.0, font: str = "F1") -> Line:
    return Line(x, y, [Run(text, size, 0.0, font)])


def _string(text: str) -> bytes:
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _info_string(text: str) -> bytes:
    try:
        return _string(text)
    except UnicodeEncodeError:
        return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"


def _content(lines: list[Line], height: float, rotate: int) -> bytes:
    out = []
    for ln in lines:
        y = height - ln.y
        if rotate == 90:  # shown turned clockwise: display (x, y from top) = page (y, x)
            matrix = f"0 1 -1 0 {ln.y:.2f} {ln.x:.2f}"
        elif ln.vertical:
            matrix = f"0 1 -1 0 {ln.x:.2f} {y:.2f}"
        else:
            matrix = f"1 0 0 1 {ln.x:.2f} {y:.2f}"
        ops = [b"BT", f"{matrix} Tm".encode()]
        for run in ln.runs:
            ops.append(f"/{run.font} {run.size:.2f} Tf {run.rise:.2f} Ts".encode())
            ops.append(b"[" + f"{run.back:.0f} ".encode() + _string(run.text) + b"] TJ" if run.back else _string(run.text) + b" Tj")
        ops.append(b"ET")
        out.append(b"\n".join(ops))
    return b"\n".join(out)


def write_pdf(path: Path, pages: list[list[Line]], info: dict | None = None,
              size: tuple[float, float] = (612, 792), rotate: int = 0) -> Path:
    """Write a PDF with one page per list of lines; returns ``path``. ``rotate=90``
    draws the lines so that the page reads upright once turned (``/Rotate 90``)."""
    width, height = size
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font_refs = {name: add(f"<< /Type /Font /Subtype /Type1 /BaseFont /{base} /Encoding /WinAnsiEncoding >>".encode())
                 for name, base in FONTS.items()}
    slash = b"500 0 0 -250 500 750 d1 40 -250 m 110 -250 l 460 750 l 390 750 l f"
    glyph = add(b"<< /Length %d >>\nstream\n" % len(slash) + slash + b"\nendstream")
    font_refs["F4"] = add(
        f"<< /Type /Font /Subtype /Type3 /FontBBox [0 -250 500 750] /FontMatrix [0.001 0 0 0.001 0 0] "
        f"/CharProcs << /a61 {glyph} 0 R >> /Encoding << /Type /Encoding /Differences [61 /a61] >> "
        f"/FirstChar 61 /LastChar 61 /Widths [500] /Resources << >> >>".encode())
    resources = "<< /Font << " + " ".join(f"/{n} {r} 0 R" for n, r in font_refs.items()) + " >> >>"
    pages_ref = len(objects) + 2 * len(pages) + 1  # numbered after the pages
    page_refs = []
    for page_lines in pages:
        stream = _content(page_lines, height, rotate)
        content_ref = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        page_refs.append(add(
            f"<< /Type /Page /Parent {pages_ref} 0 R /MediaBox [0 0 {width} {height}] /Rotate {rotate} "
            f"/Resources {resources} /Contents {content_ref} 0 R >>".encode()
        ))
    kids = " ".join(f"{r} 0 R" for r in page_refs)
    assert add(f"<< /Type /Pages /Kids [{kids}] /Count {len(page_refs)} >>".encode()) == pages_ref
    catalog = add(f"<< /Type /Catalog /Pages {pages_ref} 0 R >>".encode())
    info_ref = None
    if info:
        info_ref = add(b"<< " + b" ".join(b"/" + k.encode() + b" " + _info_string(v) for k, v in info.items()) + b" >>")
    data = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(data))
        data += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(data)
    data += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    data += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    trailer = f"<< /Size {len(objects) + 1} /Root {catalog} 0 R" + (f" /Info {info_ref} 0 R" if info_ref else "") + " >>"
    data += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(data))
    return path


BODY = (
    "We study the behaviour of synthetic documents and show that the method works well in",
    "practice. The results are consistent with the theory and the measurements of the",
    "experiment, and we discuss the implications for the design of future instruments.",
)


def byline_runs(y: float, x: float = 72) -> Line:
    """"Ada Lovelace¹, Alan TURING²,* and Grace Hopper¹" with raised 7 pt marks."""
    return Line(x, y, [Run("Ada Lovelace", 11), Run("1", 7, 4), Run(", Alan TURING", 11), Run("2,*", 7, 4),
                       Run(" and Grace Hopper", 11), Run("1", 7, 4)])


def article(*, title=("A Study of Synthetic Test Documents",), byline=None, header=None, footer=None,
            side=(), keywords=None, extra_body=(), x=72.0, body_top=250.0) -> list[Line]:
    """Page one of a journal article at left margin ``x``: header, title (20 pt), byline
    (11 pt, superscript marks), affiliation (8 pt), abstract (10 pt), keywords, footer,
    and ``side`` lines in a 7 pt column at the left edge."""
    lines: list[Line] = []
    if header:
        lines.append(line(x, 40, header, 8))
    y = 100.0
    for part in title:
        lines.append(line(x, y, part, 20, "F3"))
        y += 24
    lines.append(byline or byline_runs(y + 6, x))
    lines.append(line(x, y + 24, "1 Department of Computing, University of Testing, Testville, UK", 8))
    lines.append(line(x, body_top - 20, "Abstract", 11, "F3"))
    for i, text in enumerate(BODY + tuple(extra_body)):
        lines.append(line(x, body_top + 13 * i, text, 10))
    if keywords:
        lines.append(line(x, body_top + 13 * (len(BODY) + len(extra_body)) + 10, keywords, 10))
    for i, text in enumerate(side):
        lines.append(line(20, 420 + 11 * i, text, 7))
    if footer:
        lines.append(line(x, 760, footer, 8))
    return lines
