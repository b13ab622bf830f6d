"""``stores chunk DIR``: convert and chunk every file into StagedFile rows.

Per file: content hash -> unchanged (same hash and options) or convert in the memory-
bounded worker process -> chunks by heading chain -> DEFAULT metadata and a fresh map
-> one UPDATE-or-INSERT of its StagedFile. Files gone from DIR lose their StagedFile.
A crash leaves every file either staged or not; re-running converges.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction

from domains import embeddings
from domains.sources import CONVERTED_SUFFIXES
from ingestion.convert import ConversionError, OcrConfig
from ingestion.convert.worker import ConversionWorker
from ingestion.metadata.defaults import default_metadata
from ingestion.metadata.layers import CASCADE, apply_sources, refresh_generated
from ingestion.models import StagedFile
from ingestion.options import IngestOptions
from ingestion.outcomes import FileOutcome, StepReport, failed_alone
from ingestion.sources import (
    bad_name,
    list_bad_names,
    list_outside_links,
    list_unsupported,
    outside_link,
    relative_name,
    require_files,
    resolve_directory,
    sha256,
    unreadable,
)

from .chunker import chunk_document
from .lines import converted_lines, narrow_lines

logger = logging.getLogger("klea.ingestion")

_shared: dict[str, ConversionWorker] = {}
_shared_lock = threading.Lock()
_own = threading.local()


def use_own_worker() -> None:
    """The calling thread converts in a conversion process of its own (the background
    upload threads, ingestion/runs/background.py): a worker converts one file at a time,
    so threads sharing one would wait for each other's files."""
    _own.key = threading.current_thread().name


def shared_worker() -> ConversionWorker:
    """This process's conversion worker, or the calling thread's own after
    :func:`use_own_worker` (started on first use, stopped at exit)."""
    key = getattr(_own, "key", "worker")
    with _shared_lock:
        if key not in _shared:
            _shared[key] = ConversionWorker(
                memory_limit_mb=settings.KLEA_CONVERT_MEMORY_MB, timeout=settings.KLEA_CONVERT_TIMEOUT,
                file_timeout=settings.KLEA_CONVERT_FILE_TIMEOUT,
            )
            atexit.register(_shared[key].close)
        return _shared[key]


def ocr_config() -> OcrConfig:
    """OCR settings of this deployment (docs/configuration.md: ``KLEA_OCR_*``)."""
    return OcrConfig(
        cache_dir=str(settings.KLEA_OCR_CACHE_DIR),
        page_timeout=settings.KLEA_OCR_PAGE_TIMEOUT,
        workers=settings.KLEA_OCR_WORKERS or None,
    )


def chunk_file(
    directory: Path, path: Path, options: IngestOptions, *, worker: ConversionWorker | None = None,
    on_page: Callable[[str, int, int], None] | None = None,
) -> tuple[StagedFile | None, FileOutcome]:
    """Stage one file (idempotent).

    :param on_page: called with (file name, pages OCRed, pages to OCR) during OCR.
    :returns: its StagedFile (None when the file vanished or cannot be read: nothing is
        staged) and the outcome of this call; a file converted with losses (pages whose
        OCR failed) is ``chunked`` with the losses in ``error``.
    """
    recorded = options.chunking()
    file_name = relative_name(path, directory)
    try:
        content_hash = sha256(path)
    except OSError as exc:
        return None, unreadable(file_name, exc)
    old = StagedFile.objects.filter(directory=str(directory), file_name=file_name).first()
    if (
        old is not None
        and not options.force
        and old.content_hash == content_hash
        and old.options == recorded
        and old.status != StagedFile.Status.FAILED
    ):
        return old, FileOutcome(file_name, "unchanged", chunks=old.chunk_count, pages=old.pages)
    values: dict = {"content_hash": content_hash, "options": recorded, "chunks": [], "reason": "", "error": ""}
    try:
        progress = (lambda done, total: on_page(file_name, done, total)) if on_page else None
        converted = (worker or shared_worker()).convert(
            path, on_progress=progress, ocr=options.ocr, pipeline=settings.KLEA_PDF_PIPELINE, ocr_config=ocr_config(),
            max_pages=settings.KLEA_MAX_PAGES, bibliography=True,
        )
        drafts = chunk_document(converted, embeddings.count_tokens, options.max_tokens)
        if path.name.lower().endswith(CONVERTED_SUFFIXES):  # Word: lines of the text it was converted to
            drafts = converted_lines(drafts)
        elif any("lines" in (d.provenance or {}) for d in drafts):  # a text source: each chunk its own lines
            drafts = narrow_lines(drafts, path.read_text(encoding="utf-8", errors="replace"))
        chunks = [
            {"headings": list(d.headings), "text": d.text, "tokens": d.token_count, "provenance": d.provenance}
            for d in drafts
        ]
        # The cascade is one source of the map: only the fields it changed since it was
        # last applied are written over the staged map (edits and library fields stay).
        layered = StagedFile(
            metadata_map=dict(old.metadata_map) if old is not None else {},
            sources={**(old.sources if old is not None else {}), CASCADE: default_metadata(path, converted, file_name)},
            chunks=chunks,
        )
        refresh_generated(layered)
        values.update(
            status=StagedFile.Status.CHUNKED,
            pages=converted.pages,
            converter=converted.converter,
            chunks=chunks,
            metadata_map=layered.metadata_map,
            sources=layered.sources,
            error="\n".join(converted.warnings),
        )
        outcome = FileOutcome(
            file_name, "chunked", chunks=len(drafts), pages=converted.pages, error="; ".join(converted.warnings)
        )
    except ConversionError as exc:
        status = {"needs_ocr": StagedFile.Status.NEEDS_OCR, "no_text": StagedFile.Status.SKIPPED}.get(
            exc.reason, StagedFile.Status.FAILED
        )
        values.update(status=status, reason=exc.reason, error=str(exc), pages=None, converter="")
        outcome = FileOutcome(file_name, str(status), error=str(exc), reason=exc.reason)
    staged, _ = StagedFile.objects.update_or_create(directory=str(directory), file_name=file_name, defaults=values)
    return staged, outcome


def prune_staged(directory: Path, present: set[str]) -> list[str]:
    """Delete StagedFiles of files no longer in the folder. :returns: their names."""
    gone = StagedFile.objects.filter(directory=str(directory)).exclude(file_name__in=present)
    names = sorted(gone.values_list("file_name", flat=True))
    gone.delete()
    return names


def chunk_directory(
    directory: Path | str,
    *,
    worker: ConversionWorker | None = None,
    on_start: Callable[[int], None] | None = None,
    on_file: Callable[[FileOutcome], None] | None = None,
    on_page: Callable[[str, int, int], None] | None = None,
    **options,
) -> StepReport:
    """Chunk every supported file under ``directory``.

    :param options: :class:`ingestion.options.IngestOptions` fields (``max_tokens``,
        ``ocr`` auto/on/off as ``--ocr`` / ``--no-ocr``, ``force``, ``library``).
    :param on_start: called with the number of files; :param on_file: once per file;
        :param on_page: (file name, pages OCRed, pages to OCR) during OCR.
    :returns: StepReport (outcomes chunked / unchanged / skipped / needs_ocr / failed /
        unsupported / pruned); ``notes`` holds the PDF conversion path line and what the
        libraries and the map file gave (:func:`ingestion.metadata.layers.apply_folder_sources`);
        ``errors`` a refused library.
    :raises IngestError: not a directory, or no supported file in it.
    :raises ValueError: bad ``ocr`` or ``max_tokens``.
    """
    started = time.monotonic()
    chunking = IngestOptions(**options)
    directory = resolve_directory(directory)
    files = require_files(directory)
    report = StepReport("chunk", str(directory))
    if on_start:
        on_start(len(files))
    paths_logged: set[str] = set()
    for path in files:
        try:
            staged, outcome = chunk_file(directory, path, chunking, worker=worker, on_page=on_page)
        except Exception as exc:  # this file alone: the others are chunked
            staged, outcome = None, failed_alone(relative_name(path, directory), "staged", exc)
        converter = staged.converter if staged is not None else ""
        if outcome.status == "chunked" and converter.startswith("pdf") and converter not in paths_logged:
            paths_logged.add(converter)
            logger.info("PDF conversion: %s", staged.converter)
            report.notes.append(f"PDF conversion: {staged.converter}")
        report.outcomes.append(outcome)
        if on_file:
            on_file(outcome)
    for path in list_unsupported(directory):
        message = f"{path.name}: unsupported file type '{path.suffix}'"
        name = relative_name(path, directory)
        report.outcomes.append(FileOutcome(name, "unsupported", reason="unsupported", error=message))
    report.outcomes.extend(outside_link(relative_name(p, directory)) for p in list_outside_links(directory))
    report.outcomes.extend(bad_name(name) for name in list_bad_names(directory))
    with transaction.atomic():
        pruned = prune_staged(directory, {relative_name(p, directory) for p in files})
    report.outcomes.extend(FileOutcome(name, "pruned") for name in pruned)
    apply_sources(directory, report, chunking)
    report.seconds = time.monotonic() - started
    return report
