"""The source files behind chunks, for the chat's source view (docs/api.md, "The source
view"): PDF pages rendered as images, the text layer of a PDF page (where
:mod:`domains.pdf_quotes` finds a quoted passage), the section of a text source around a
chunk, the top of a text source. A Word document is no text file: its text is the one it
was converted to (:func:`converted_text`), rebuilt from its chunks, whose provenance
lines ingestion counted in the same text.

Files are read only from ``Document.source_path``, where ingestion found them, or from
the uploads storage under the same store folder and name (a worker on another machine
built it); nothing here takes a path from a request. A page is rendered from the file only while its
bytes still hash to the document's ``content_hash`` (else the stored line boxes could
point at other text), then kept in ``KLEA_PAGE_CACHE_DIR/<content hash>/``.

pdfium runs in the conversion worker's child process (:mod:`domains.pdf_pages`), one call
at a time per server process, each within KLEA_PAGE_TIMEOUT seconds: a page that takes
pdfium longer (a 200 KB file can stroke millions of lines) is stopped there, instead of
holding every other page view of the process for minutes.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from ingestion.convert.base import ConversionError
from ingestion.convert.worker import ConversionWorker
from ingestion.sources import sha256

from .models import Chunk, Document
from .uploads import local_copy

# Image widths in pixels a page is rendered at; a request is served at the smallest
# that is at least as wide as asked (the largest for anything wider), so few sizes are
# cached per page and each is sharp on the screen that asked.
PAGE_WIDTHS = (480, 800, 1200, 1600)
# Files shown as the text they were converted to (Word), not as themselves.
CONVERTED_SUFFIXES = (".docx",)
# A text section longer than this shows only the chunk and this many lines either side.
MAX_SECTION_LINES = 400
SECTION_CONTEXT = 40
# How far above a section's first chunk its heading line is looked for.
HEADING_SEARCH_LINES = 30
# The pdfium child's memory bound (MB): a page image is at most 1600 x 6400 pixels.
PDF_WORKER_MEMORY_MB = 1024
_WORKER: ConversionWorker | None = None
_WORKER_LOCK = threading.Lock()
_MARKUP = re.compile(r"[#*_`=~\-<>/\[\]]|</?h\d[^>]*>")


class SourceUnavailable(Exception):
    """The document's file is gone, unreadable or changed since ingestion.

    ``code``: ``source_missing`` or ``source_changed``; the message names the file.
    """

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class PageUnavailable(Exception):
    """pdfium could not draw or read the page within KLEA_PAGE_TIMEOUT seconds or its
    memory bound, or crashed on it (``code``: ``page_too_complex``; the message names the
    file)."""

    code = "page_too_complex"


@dataclass(frozen=True)
class PageImage:
    """A rendered page: JPEG bytes, its pixel size, and whether it came from the cache."""

    data: bytes
    width: int
    height: int
    cached: bool


def is_pdf(document: Document) -> bool:
    return document.file_name.lower().endswith(".pdf")


def is_converted(document: Document) -> bool:
    """Whether the source view shows the document's converted text, not its file: a
    Word document (its lines are those of :func:`converted_text`)."""
    return document.file_name.lower().endswith(CONVERTED_SUFFIXES)


def converted_text(chunks: Iterable[tuple[Sequence[str], str]]) -> tuple[list[str], list[tuple[int, int]]]:
    """The text a document was converted to, as its chunks hold it: each heading of a
    chain where the chain changes, as a Markdown heading (``#`` per level), then the
    chunks' Markdown text, a blank line between them. Ingestion counts a Word chunk's
    provenance lines in it, the source view shows it: both call this.

    :param chunks: ``(headings, text)`` of the document's chunks, in order.
    :returns: ``(lines, spans)``: the text's lines, and each chunk's ``(first, last)``
        1-based line numbers in it.
    """
    lines: list[str] = []
    spans: list[tuple[int, int]] = []
    previous: tuple[str, ...] = ()
    for headings, text in chunks:
        headings = tuple(headings)
        if headings and headings != previous:
            same = 0  # the outer headings it shares with the chunk before are not repeated
            while same < min(len(headings), len(previous)) and headings[same] == previous[same]:
                same += 1
            for level in range(min(same, len(headings) - 1), len(headings)):  # its own at least
                lines += ["#" * min(level + 1, 6) + " " + headings[level], ""]
        previous = headings
        body = text.split("\n")
        spans.append((len(lines) + 1, len(lines) + len(body)))
        lines += [*body, ""]
    return lines[:-1], spans


def source_file(document: Document) -> Path:
    """The document's file where ingestion read it, else this machine's copy of the
    upload it came from (domains/uploads.py).

    :raises SourceUnavailable: ``source_missing`` when it is not a readable file there.
    """
    path = Path(document.source_path) if document.source_path else None
    if path is not None and path.is_file() and os.access(path, os.R_OK):
        return path
    # Built by a worker on another machine from an upload: this machine's copy of it
    # (docs/deployment.md); its bytes are checked against content_hash before use.
    # Only the very bytes ingested are served (another store's upload may share the name).
    copy = local_copy(f"{path.parent.name}/{path.name}") if path is not None and document.content_hash else None
    if copy is None or sha256(copy) != document.content_hash:
        raise SourceUnavailable("source_missing", f"{document.file_name}: the source file is no longer where it was ingested")
    return copy


def open_verified(document: Document):
    """:func:`source_file` opened for reading (binary), positioned at 0, after checking
    that the bytes read through this very handle still hash to ``document.content_hash``
    (a file replaced after the check cannot slip through).

    :raises SourceUnavailable: ``source_missing``, or ``source_changed`` (re-ingest it).
    """
    fh = source_file(document).open("rb")
    if document.content_hash:
        if hashlib.file_digest(fh, "sha256").hexdigest() != document.content_hash:
            fh.close()
            raise _changed(document)
        fh.seek(0)
    return fh


def _changed(document: Document) -> SourceUnavailable:
    return SourceUnavailable(
        "source_changed", f"{document.file_name}: the file changed since it was ingested; ingest it again"
    )


def verified_file(document: Document) -> Path:
    """:func:`source_file`, whose bytes still hash to ``document.content_hash``.

    :raises SourceUnavailable: ``source_missing``, or ``source_changed`` (re-ingest it).
    """
    path = source_file(document)
    if document.content_hash and sha256(path) != document.content_hash:
        raise _changed(document)
    return path


def page_width(requested: int | None) -> int:
    """The rendered width for a requested one (see PAGE_WIDTHS); None -> 800."""
    if not requested:
        return PAGE_WIDTHS[1]
    return next((w for w in PAGE_WIDTHS if w >= requested), PAGE_WIDTHS[-1])


def _cache_path(document: Document, page: int, width: int) -> Path:
    key = document.content_hash or f"document-{document.pk}"
    return Path(settings.KLEA_PAGE_CACHE_DIR) / key / f"{page}-{width}.jpg"


def render_page(document: Document, page: int, width: int | None = None) -> PageImage:
    """Page ``page`` (1-based) of a PDF document as a JPEG ``page_width(width)`` pixels
    wide (narrower for a page more than :data:`domains.pdf_pages.MAX_ASPECT` times taller
    than wide), drawn in the pdfium child.

    :raises ValueError: not a PDF, or no such page (the message says how many there are).
    :raises SourceUnavailable: the file is missing or changed since ingestion.
    :raises PageUnavailable: pdfium took longer than KLEA_PAGE_TIMEOUT (or more memory).
    """
    if not is_pdf(document):
        raise ValueError(f"{document.file_name} is not a PDF")
    if document.pages is not None and not 1 <= page <= document.pages:
        raise ValueError(f"{document.file_name} has pages 1 to {document.pages}, not {page}")
    width = page_width(width)
    cached = _cache_path(document, page, width)
    if cached.is_file():
        data = cached.read_bytes()
        return PageImage(data, width, _jpeg_height(data), cached=True)
    data, image_width, image_height = _pdf_task(verified_file(document), document.file_name, f"page {page}",
                                                "draw_page", page=page, width=width, name=document.file_name)
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.{threading.get_ident()}")
    partial.write_bytes(data)
    partial.replace(cached)  # never a half-written image in the cache
    return PageImage(data, image_width, image_height, cached=False)


def text_layer(path: Path, page: int) -> tuple[list, float, float] | None:
    """The text layer of page ``page`` (1-based) of the PDF at ``path`` (a
    :func:`verified_file`), read as ingestion read it, in the pdfium child.

    :returns: ``(chars, width, height)`` as :func:`~ingestion.convert.pdf_lines.upright_chars`
        gives them; None when the file has no such page, or pdfium was stopped on it
        (:class:`PageUnavailable`).
    """
    try:
        return _pdf_task(path, path.name, f"the text layer of page {page}", "text_layer", page=page)
    except PageUnavailable:
        return None


_STOPPED = {"timeout": "took pdfium longer than {seconds:g} s (KLEA_PAGE_TIMEOUT) and was stopped",
            "memory": "needed more than {limit} MB in pdfium and was stopped",
            "crashed": "crashed pdfium"}


def _pdf_task(path: Path, file_name: str, what: str, task: str, **options):
    """:mod:`domains.pdf_pages` ``task`` on ``path`` in this process's pdfium child;
    ``file_name`` (the document's) and ``what`` (the part of it) are for messages.

    :raises ValueError: the task's own (no such page).
    :raises PageUnavailable: over KLEA_PAGE_TIMEOUT or the memory bound, or a crash.
    """
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = ConversionWorker(memory_limit_mb=PDF_WORKER_MEMORY_MB)
        worker = _WORKER
    worker.timeout = settings.KLEA_PAGE_TIMEOUT
    try:
        return worker.run(task, path, **options)
    except ConversionError as exc:
        if exc.reason == "value":
            raise ValueError(str(exc)) from None
        stopped = _STOPPED.get(exc.reason, _STOPPED["crashed"])
        raise PageUnavailable(f"{file_name}: {what} " + stopped.format(
            seconds=settings.KLEA_PAGE_TIMEOUT, limit=PDF_WORKER_MEMORY_MB)) from None


def _jpeg_height(data: bytes) -> int:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.height


def _plain(line: str) -> str:
    return " ".join(_MARKUP.sub(" ", line).split()).lower()


def source_lines(document: Document) -> list[str]:
    """The lines of a text source as the source view shows them: the file's, or a Word
    document's converted text (:func:`converted_text`; what was ingested, so neither a
    changed nor a missing file matters).

    :raises SourceUnavailable: a text file missing or changed since ingestion.
    """
    if is_converted(document):
        chunks = Chunk.objects.filter(document=document).order_by("ordinal").values_list("headings", "text")
        return converted_text(chunks)[0]
    return verified_file(document).read_text(encoding="utf-8", errors="replace").splitlines()


def text_section(chunk: Chunk) -> dict:
    """The section of a text source around ``chunk``: from its heading line to the last
    line of the chunks under the same heading chain.

    :returns: ``{"first": int, "last": int, "lines": [str], "highlight": [first, last]}``
        (1-based line numbers; ``highlight`` = the chunk's own lines).
    :raises ValueError: the chunk records no source lines.
    :raises SourceUnavailable: the file is missing or changed since ingestion.
    """
    lines = (chunk.provenance or {}).get("lines")
    if not lines:
        raise ValueError(f"chunk {chunk.pk} records no source lines")
    document = chunk.document
    text = source_lines(document)
    spans = [
        p["lines"]
        for p in Chunk.objects.filter(document=document, headings=chunk.headings).values_list("provenance", flat=True)
        if p and p.get("lines")
    ] or [lines]
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    heading = _plain(chunk.headings[-1]) if chunk.headings else ""
    if heading:
        for number in range(first - 1, max(0, first - 1 - HEADING_SEARCH_LINES), -1):
            if heading in _plain(text[number - 1]):
                first = number
                break
    if last - first + 1 > MAX_SECTION_LINES:
        first, last = max(first, lines[0] - SECTION_CONTEXT), min(last, lines[1] + SECTION_CONTEXT)
    last = min(last, len(text))
    return {"first": first, "last": last, "lines": text[first - 1 : last], "highlight": list(lines)}


def document_top(document: Document) -> dict:
    """The first MAX_SECTION_LINES lines of a text source, for a citation of the document
    as a whole (an answer from its metadata).

    :returns: ``{"first": 1, "last": int, "lines": [str], "highlight": None}``.
    :raises SourceUnavailable: the file is missing or changed since ingestion.
    """
    lines = source_lines(document)[:MAX_SECTION_LINES]
    return {"first": 1, "last": max(len(lines), 1), "lines": lines or [""], "highlight": None}
