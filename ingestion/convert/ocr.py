"""OCR of image pages on the model-free PDF path (docs/ingestion.md, "OCR"): Tesseract
reads each page rendered by pypdfium2, and its hOCR output becomes the same
:class:`~ingestion.convert.pdf_lines.Line` objects as a text layer (ingestion/convert/hocr.py),
so reading order, headings, furniture and chunking are shared with text-layer pages.

Tesseract was chosen over RapidOCR by measurement (docs/benchmarks.md, "OCR"). Pages
are OCRed in parallel (one single-threaded ``tesseract`` process per page, up to
``workers``), each under a time limit; a page that fails is reported and skipped, the
others are kept. Results are cached per file content hash, page, resolution and engine
version, so a re-run does not OCR again.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
from PIL import Image

from .hocr import hocr_lines
from .pdf_lines import Line

OCR_DPI = 300
# The largest page image OCRed, in pixels: A2 (420 x 594 mm) at 300 dpi is 35 million. A
# larger page (a poster, or a page size set absurdly large by a hostile PDF) would take
# gigabytes as one bitmap and more in Tesseract: it fails alone, the other pages are read.
MAX_PAGE_PIXELS = 40_000_000
LANGUAGE = "eng"
INSTALL_HINT = "install Tesseract: `make tesseract` (Debian: apt-get install tesseract-ocr tesseract-ocr-eng)"
# Bump when the lines made from hOCR change, so cached pages are read again.
_FORMAT = 3
# Dark edge bands (clear_dark_edges): darker than this share, within this share of the
# page, measured over this many pixel rows or columns.
_EDGE_DARK = 0.15
_EDGE_MAX = 0.15
_EDGE_WINDOW = 9


class OcrError(Exception):
    """One page could not be OCRed (engine error, timeout); the message is one line."""


@dataclass(frozen=True)
class OcrConfig:
    """How to OCR: ``cache_dir`` (None: no cache), ``page_timeout`` in seconds per page,
    ``workers`` (pages at once; None: the core count), ``dpi`` of the page rendering."""

    cache_dir: str | None = None
    page_timeout: float = 120.0
    workers: int | None = None
    dpi: int = OCR_DPI


@dataclass
class OcrResult:
    """The OCR of some pages: ``lines``, ``heights`` and ``widths`` (points) by page
    index, ``failed`` page index -> one-line error, ``cached`` pages read from the cache."""

    engine: str
    lines: dict[int, list[Line]] = field(default_factory=dict)
    heights: dict[int, float] = field(default_factory=dict)
    widths: dict[int, float] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    cached: int = 0


def tesseract_binary() -> str | None:
    """The ``tesseract`` executable on PATH, or None."""
    return shutil.which("tesseract")


@lru_cache(maxsize=4)
def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    first = (out.stdout or out.stderr).splitlines()
    return first[0].strip() if first and out.returncode == 0 else ""


@lru_cache(maxsize=4)
def _languages(binary: str) -> frozenset[str]:
    try:
        out = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(line.strip() for line in out.stdout.splitlines()[1:] if line.strip())


def engine() -> str | None:
    """``"tesseract 5.3.0"`` when Tesseract and its English model are installed, else None."""
    binary = tesseract_binary()
    if binary is None or LANGUAGE not in _languages(binary):
        return None
    return _version(binary) or None


def unavailable_reason() -> str:
    """Why OCR cannot run, with how to install the engine ("" when it can)."""
    binary = tesseract_binary()
    if binary is None:
        return f"no OCR engine is installed ({INSTALL_HINT})"
    if LANGUAGE not in _languages(binary):
        return f"Tesseract has no English model ({INSTALL_HINT})"
    return ""


def clear_dark_edges(pixels: np.ndarray) -> np.ndarray:
    """Whiten the dark bands along a scan's edges (the shadow of a book's spine or the
    scanner lid): from each edge inwards, rows or columns more than 15 % dark, up to 15 %
    of the page. Tesseract takes such a band for a picture and drops the text beside it;
    text itself is never that dark across a whole row or column."""
    dark = pixels < 128
    height, width = dark.shape
    out = pixels.copy()
    for axis, size in ((0, width), (1, height)):
        share = dark.mean(axis=axis)
        share = np.convolve(share, np.ones(_EDGE_WINDOW) / _EDGE_WINDOW, mode="same")
        limit = int(size * _EDGE_MAX)
        start = 0
        while start < limit and share[start] > _EDGE_DARK:
            start += 1
        end = size
        while size - end < limit and share[end - 1] > _EDGE_DARK:
            end -= 1
        if axis == 0:
            out[:, :start] = 255
            out[:, end:] = 255
        else:
            out[:start, :] = 255
            out[end:, :] = 255
    return out


def render_page(page: pdfium.PdfPage, dpi: int) -> np.ndarray:
    """The page rendered upright in grey levels (0 black .. 255 white) at ``dpi``, dark
    edges cleared (:func:`clear_dark_edges`)."""
    bitmap = page.render(scale=dpi / 72, grayscale=True)
    try:
        return clear_dark_edges(np.asarray(bitmap.to_pil().convert("L")))
    finally:
        bitmap.close()


def _too_large(page: pdfium.PdfPage, dpi: int) -> str:
    """Why ``page`` is too large to render at ``dpi`` (MAX_PAGE_PIXELS), or ""."""
    width, height = page.get_size()  # points
    pixels = (width * dpi / 72) * (height * dpi / 72)
    if pixels <= MAX_PAGE_PIXELS:
        return ""
    return (f"too large to OCR ({width / 72:.0f} x {height / 72:.0f} inches, {pixels / 1e6:,.0f} million pixels "
            f"at {dpi} dpi; the limit is {MAX_PAGE_PIXELS / 1e6:.0f} million)")


def png_bytes(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def run_tesseract(png: bytes, timeout: float, dpi: int = OCR_DPI) -> str:
    """hOCR of one page image (Tesseract, English, one thread).

    :raises OcrError: Tesseract missing, failing or slower than ``timeout`` seconds.
    """
    binary = tesseract_binary()
    if binary is None:
        raise OcrError(unavailable_reason())
    # One thread per process: pages run in parallel instead (OpenMP threads would oversubscribe).
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    with tempfile.TemporaryDirectory(prefix="klea-ocr-") as tmp:
        image = Path(tmp) / "page.png"
        image.write_bytes(png)
        try:
            done = subprocess.run(
                [binary, str(image), "stdout", "-l", LANGUAGE, "--dpi", str(dpi), "hocr"],
                capture_output=True, timeout=timeout, env=env, check=False,
            )
        except subprocess.TimeoutExpired:
            raise OcrError(f"OCR took longer than {timeout:g} s") from None
        except OSError as exc:
            raise OcrError(f"Tesseract could not run ({exc.strerror or exc})") from None
    if done.returncode != 0:
        detail = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:200]
        raise OcrError(f"Tesseract failed (exit {done.returncode}{': ' + detail if detail else ''})")
    return done.stdout.decode("utf-8", "replace")


class _Cache:
    """One JSON file per page under ``cache_dir``, keyed by content hash, page, dpi and engine."""

    def __init__(self, cache_dir: str | None, content_hash: str, dpi: int, engine_name: str) -> None:
        self.root = Path(cache_dir) if cache_dir else None
        tag = hashlib.sha256(f"{engine_name}|{LANGUAGE}|{dpi}|{_FORMAT}".encode()).hexdigest()[:12]
        self.prefix = f"{content_hash}-{tag}"

    def _path(self, page: int) -> Path:
        return self.root / self.prefix[:2] / f"{self.prefix}-p{page}.json"

    def get(self, page: int) -> tuple[list[Line], float, float] | None:
        if self.root is None:
            return None
        try:
            data = json.loads(self._path(page).read_text())
            return [Line(**line) for line in data["lines"]], float(data["height"]), float(data["width"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, page: int, lines: list[Line], height: float, width: float) -> None:
        if self.root is None:
            return
        target = self._path(page)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps({"height": height, "width": width, "lines": [asdict(line) for line in lines]}))
            temporary.replace(target)  # atomic: a reader never sees half a file
        except OSError:
            pass  # a read-only or full cache costs a re-OCR later, never this run


def ocr_pages(
    path: Path,
    pdf: pdfium.PdfDocument,
    pages: Iterable[int],
    config: OcrConfig | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> OcrResult:
    """OCR ``pages`` (0-based indexes) of the opened ``pdf`` read from ``path``.

    Pages are rendered here one at a time (pdfium is not thread-safe) and recognised in up
    to ``config.workers`` Tesseract processes at once.

    :param on_page: called with (pages done, pages to do) after each page, cached or not.
    :returns: OcrResult; a page that failed (render error, engine error, over
        ``config.page_timeout``) is in ``failed`` and has no lines.
    :raises OcrError: no engine installed (nothing was OCRed).
    """
    # Here, not at the top: ingestion.sources imports this package.
    from ingestion.sources import sha256

    config = config or OcrConfig()
    name = engine()
    if name is None:
        raise OcrError(unavailable_reason())
    todo = list(pages)
    result = OcrResult(engine=name)
    cache = _Cache(config.cache_dir, sha256(path) if config.cache_dir else "", config.dpi, name)
    scale = config.dpi / 72
    done = 0

    def finished() -> None:
        nonlocal done
        done += 1
        if on_page:
            on_page(done, len(todo))

    workers = max(1, min(config.workers or os.cpu_count() or 1, len(todo) or 1))
    pending: deque = deque()  # (index, future, pixels), at most 2 x workers page images in memory

    def collect() -> None:
        index, future, pixels = pending.popleft()
        try:
            lines, height, width = hocr_lines(future.result(), index, scale, pixels)
        except OcrError as exc:
            result.failed[index] = f"page {index + 1}: {exc}"
        except ET.ParseError as exc:
            result.failed[index] = f"page {index + 1}: unreadable OCR output ({exc})"
        else:
            result.lines[index], result.heights[index], result.widths[index] = lines, height, width
            cache.put(index, lines, height, width)
        finished()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for index in todo:
            hit = cache.get(index)
            if hit is not None:
                result.lines[index], result.heights[index], result.widths[index] = hit
                result.cached += 1
                finished()
                continue
            try:
                page = pdf[index]
                try:
                    too_large = _too_large(page, config.dpi)
                    pixels = None if too_large else render_page(page, config.dpi)
                finally:
                    page.close()
            except (pdfium.PdfiumError, OSError, ValueError, MemoryError) as exc:
                too_large = f"could not be rendered ({exc or type(exc).__name__})"
            if too_large:
                result.failed[index] = f"page {index + 1}: {too_large}"
                finished()
                continue
            if pixels.min() == 255:  # no ink at all: no text, and the engine's seconds spared
                result.lines[index], result.heights[index], result.widths[index] = (
                    [], pixels.shape[0] / scale, pixels.shape[1] / scale)
                finished()
                continue
            png = png_bytes(pixels)
            pending.append((index, pool.submit(run_tesseract, png, config.page_timeout, config.dpi), pixels))
            while len(pending) >= 2 * workers:
                collect()
        while pending:
            collect()
    return result
