"""OCR engines on the same pages: accuracy, speed, memory (issue #14). The bibliographic
tiers on OCRed scans are measured by ``bench/biblio.py`` (``--as-scans``).

    nice -n 10 .venv/bin/python bench/ocr.py [--corpus DIR] [--pages 1] [--dpi 200 300]
        [--engine tesseract rapidocr] [--files N]

1. Accuracy: the first ``--pages`` pages of each born-digital PDF of ``<corpus>``
   (ground_truth.json: ``has_text_layer`` and not an old scan that carries an OCR layer)
   are rendered at each ``--dpi`` in grey levels, as a scan would be, and read by each
   engine. The reference is the page's own text layer, line by line
   (:func:`ingestion.convert.pdf_lines.page_lines`): groups of reference and OCR lines
   whose boxes overlap are compared (:func:`pairs`), so reading order does not count,
   and text OCR missed or made up counts in full. CER = character edit distance /
   reference characters (NFKC, dashes and quotes unified, white space collapsed), WER
   the same over words; "body" = groups of lines set in the page's body size, 20
   characters or more. Target: body CER <= 2 % at 300 dpi.
2. Speed and memory: pages per CPU second (= pages/s on one core; Tesseract runs one
   thread per page, RapidOCR's ONNX threads are all counted), peak resident memory of
   the engine process.

RapidOCR is measured for the choice only, not a requirement:
``.venv/bin/pip install --target /tmp/rapidocr --no-deps rapidocr-onnxruntime==1.4.4
pyclipper==1.4.0 shapely==2.2.0 opencv-python-headless==5.0.0.93`` and
``PYTHONPATH=/tmp/rapidocr``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import sys
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")

import django  # noqa: E402

django.setup()

import pypdfium2 as pdfium  # noqa: E402
from django.conf import settings  # noqa: E402

from ingestion.convert.hocr import hocr_lines  # noqa: E402
from ingestion.convert.ocr import engine, run_tesseract  # noqa: E402
from ingestion.convert.pdf_lines import Line, page_lines  # noqa: E402

# Old scans whose text layer is itself OCR output: no reference text.
OCR_LAYER = {"jordan1986_jcp.pdf", "dijkstra1965_cacm.pdf", "fischer1985_jacm_flp.pdf"}


def edit_distance(a, b) -> int:
    """Levenshtein distance of two sequences (characters or words)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


_UNIFY = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2212": "-", "\u2019": "'", "\u2018": "'",
                        "\u201c": '"', "\u201d": '"'})


def normal(text: str) -> str:
    """NFKC, pdfium's hyphen mark as "-", dashes and curly quotes unified, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).replace("\x02", "-").translate(_UNIFY)
    return " ".join(text.split())


def _overlap(a: Line, b: Line) -> bool:
    overlap_y = min(a.y1, b.y1) - max(a.y0, b.y0)
    overlap_x = min(a.x1, b.x1) - max(a.x0, b.x0)
    return overlap_y > 0.5 * min(a.height, b.height) and overlap_x > 0


def _joined(lines: list[Line]) -> str:
    return " ".join(line.text for line in sorted(lines, key=lambda line: (-round(line.y0 / 3), line.x0)))


def pairs(reference: list[Line], ocr: list[Line]) -> list[tuple[list[Line], str, str]]:
    """(reference lines, reference text, OCR text) per group of lines that overlap (half
    a line height, any width): a text-layer line cut in fragments meets the one OCR line
    that covers them. A group without OCR lines is text OCR missed; a group without
    reference lines, text OCR made up."""
    parent = list(range(len(reference) + len(ocr)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, ref in enumerate(reference):
        for j, line in enumerate(ocr):
            if _overlap(ref, line):
                parent[root(i)] = root(len(reference) + j)
    groups: dict[int, tuple[list[Line], list[Line]]] = {}
    for i, ref in enumerate(reference):
        groups.setdefault(root(i), ([], []))[0].append(ref)
    for j, line in enumerate(ocr):
        groups.setdefault(root(len(reference) + j), ([], []))[1].append(line)
    return [(refs, normal(_joined(refs)), normal(_joined(found))) for refs, found in groups.values()]


class Counts:
    def __init__(self) -> None:
        self.chars = self.char_errors = self.words = self.word_errors = 0

    def add(self, reference: str, hypothesis: str) -> None:
        self.chars += len(reference)
        self.char_errors += edit_distance(reference, hypothesis)
        words = reference.split()
        self.words += len(words)
        self.word_errors += edit_distance(words, hypothesis.split())

    def cer(self) -> float:
        return 100 * self.char_errors / max(self.chars, 1)

    def wer(self) -> float:
        return 100 * self.word_errors / max(self.words, 1)


def render(pdf: pdfium.PdfDocument, index: int, dpi: int):
    page = pdf[index]
    try:
        return page.render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
    finally:
        page.close()


def tesseract_lines(image, index: int, dpi: int) -> list[Line]:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return hocr_lines(run_tesseract(buffer.getvalue(), 600, dpi), index, dpi / 72)[0]


class Rapid:
    """RapidOCR text boxes as lines (box corners in pixels, top-left origin)."""

    def __init__(self) -> None:
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError:
            sys.exit("rapidocr_onnxruntime is not installed (see the module docstring for the command)")
        self.engine = RapidOCR()

    def lines(self, image, index: int, dpi: int) -> list[Line]:
        import numpy as np

        result, _ = self.engine(np.asarray(image.convert("RGB")))
        scale, height = dpi / 72, image.height / (dpi / 72)
        out = []
        for box, text, _ in result or []:
            xs, ys = [p[0] for p in box], [p[1] for p in box]
            out.append(Line(index, min(xs) / scale, height - max(ys) / scale, max(xs) / scale,
                            height - min(ys) / scale, size=(max(ys) - min(ys)) / scale, bold=False, text=text))
        return out


def accuracy(files: list[Path], pages: int, dpis: list[int], engines: list[str]) -> list[dict]:
    rows = []
    for name in engines:
        rapid = Rapid() if name == "rapidocr" else None
        for dpi in dpis:
            total, body = Counts(), Counts()
            cpu = 0.0
            count = 0
            for path in files:
                pdf = pdfium.PdfDocument(str(path))
                try:
                    for index in range(min(pages, len(pdf))):
                        page = pdf[index]
                        try:
                            reference, _ = page_lines(page, index)
                        finally:
                            page.close()
                        image = render(pdf, index, dpi)
                        before = _cpu()
                        ocr = rapid.lines(image, index, dpi) if rapid else tesseract_lines(image, index, dpi)
                        cpu += _cpu() - before
                        count += 1
                        sizes = sorted(line.size for line in reference)
                        body_size = sizes[len(sizes) // 2] if sizes else 0
                        for refs, ref, hyp in pairs(reference, ocr):
                            total.add(ref, hyp)
                            if refs and all(abs(r.size - body_size) <= 0.1 * body_size for r in refs) and len(ref) >= 20:
                                body.add(ref, hyp)
                finally:
                    pdf.close()
            rows.append({
                "engine": name, "dpi": dpi, "pages": count, "cer": total.cer(), "wer": total.wer(),
                "body_cer": body.cer(), "body_wer": body.wer(), "pages_per_cpu_s": count / max(cpu, 1e-9),
                "peak_mb": _peak_mb(name),
            })
            print(_row(rows[-1]), flush=True)
    return rows


def _cpu() -> float:
    """CPU seconds of this process (all threads) and of its finished children."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _peak_mb(name: str) -> float:
    """Peak RSS of the engine: the largest Tesseract child, or this process (RapidOCR)."""
    who = resource.RUSAGE_CHILDREN if name == "tesseract" else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def _row(r: dict) -> str:
    return (f"| {r['engine']} | {r['dpi']} | {r['pages']} | {r['cer']:.2f} | {r['wer']:.2f} | {r['body_cer']:.2f} | "
            f"{r['body_wer']:.2f} | {r['pages_per_cpu_s']:.3f} | {r['peak_mb']:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(settings.KLEA_CORPORA_DIR) / "pdfs")
    parser.add_argument("--pages", type=int, default=1, help="first pages of each PDF")
    parser.add_argument("--files", type=int, default=0, help="only the first N born-digital PDFs (0: all)")
    parser.add_argument("--dpi", type=int, nargs="+", default=[200, 300])
    parser.add_argument("--engine", nargs="+", default=["tesseract"], choices=["tesseract", "rapidocr"])
    args = parser.parse_args()
    truth = json.loads((args.corpus / "ground_truth.json").read_text(encoding="utf-8"))["documents"]
    files = [args.corpus / d["file"] for d in truth if d["has_text_layer"] and d["file"] not in OCR_LAYER]
    files = files[: args.files] if args.files else files
    print(f"{engine()}; {len(files)} PDFs, first {args.pages} page(s); {os.cpu_count()} cores; "
          f"command: {' '.join(sys.argv)}")
    print("\n| engine | dpi | pages | CER % | WER % | body CER % | body WER % | pages per CPU s | peak MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    started = time.monotonic()
    accuracy(files, args.pages, args.dpi, args.engine)
    print(f"\n{time.monotonic() - started:.0f} s wall")


if __name__ == "__main__":
    main()
