"""The ``stores`` steps under an IngestionJob: ``chunk`` and ``store``, run here or queued
as one Celery task per file, and the work of one queued file.

A synchronous run records each file's outcome on its job as it finishes (so
``GET /api/jobs/<id>`` shows progress) and closes the job from its report; a queued run
creates the job and its tasks, which close it themselves. Chunk-then-store of files and
folders ("ingest into a store") is :func:`ingestion.runs.ingest.ingest`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from domains.models import Store
from ingestion.chunk.step import chunk_directory, chunk_file, prune_staged
from ingestion.metadata.layers import apply_folder_sources
from ingestion.models import IngestionJob
from ingestion.options import IngestOptions
from ingestion.outcomes import FileOutcome, IngestError, StepReport
from ingestion.sources import list_source_files, relative_name, require_files, resolve_directory, unreadable
from ingestion.store.step import prune_documents, store_directory, store_file
from ingestion.store.target import resolve_store

from . import jobs

STEPS = ("chunk", "store", "build")
OnFile = Callable[[FileOutcome], None]
OnPage = Callable[[str, int, int], None]


def folder_job(kind: str, directory: Path, options: IngestOptions, store=None, user=None) -> IngestionJob:
    """A running job over every source file of ``directory``."""
    arguments = {"directory": str(directory), **options.as_dict()}
    return jobs.start_job(kind, len(list_source_files(directory)), arguments, store=store, user=user)


def recording(job_id: int, on_file: OnFile | None = None) -> OnFile:
    """A per-file callback that records the outcome on the job, then calls ``on_file``."""

    def record(outcome: FileOutcome) -> None:
        jobs.record(job_id, outcome)
        if on_file:
            on_file(outcome)

    return record


def recording_pages(job_id: int, on_page: OnPage | None = None) -> OnPage:
    """A per-page OCR callback that shows progress on the job, then calls ``on_page``."""

    def record(file_name: str, done: int, total: int) -> None:
        jobs.record_pages(job_id, file_name, done, total)
        if on_page:
            on_page(file_name, done, total)

    return record


def closed_on_error(job: IngestionJob, run: Callable[[], StepReport | None]) -> StepReport | None:
    """``run()``; on any exception the job is marked failed (never left ``running``)."""
    try:
        return run()
    except BaseException as exc:
        with contextlib.suppress(Exception):  # a dead database must not hide the real error
            jobs.fail(job.pk, run_error(exc))
        raise


def guarded(job: IngestionJob, run: Callable[[], StepReport]) -> StepReport:
    """Run a step and close its job from the report, or as failed on any exception."""

    def step() -> StepReport:
        report = run()
        report.job_id = job.pk
        jobs.finish(job.pk, report)
        return report

    return closed_on_error(job, step)


def run_error(exc: BaseException) -> str:
    """One line for a job that a run-level error or an unexpected exception ended."""
    if isinstance(exc, IngestError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    detail = (str(exc).splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def run_chunk(
    directory, *, on_start=None, on_file: OnFile | None = None, on_page: OnPage | None = None, user=None, **options
) -> StepReport:
    """``stores chunk``: :func:`ingestion.chunk.step.chunk_directory` under a job (OCR
    progress per page shown on the job and passed to ``on_page``).

    :param options: :class:`ingestion.options.IngestOptions` fields.
    """
    checked = IngestOptions(**options)  # before creating a job
    directory = resolve_directory(directory)
    job = folder_job("chunk", directory, checked, user=user)
    return guarded(
        job,
        lambda: chunk_directory(
            directory, on_start=on_start, on_file=recording(job.pk, on_file),
            on_page=recording_pages(job.pk, on_page), **options,
        ),
    )


def run_store(
    directory, store_name: str, domain_name: str, *, on_start=None, on_file: OnFile | None = None, user=None,
    **options,
) -> StepReport:
    """``stores store``: :func:`ingestion.store.step.store_directory` under a job."""
    checked = IngestOptions(**options)
    directory = resolve_directory(directory)
    require_files(directory)
    store = resolve_store(store_name, domain_name, bm25_only=checked.bm25_only)
    job = folder_job("store", directory, checked, store=store, user=user)
    return guarded(
        job,
        lambda: store_directory(
            directory, store_name, domain_name, on_start=on_start, on_file=recording(job.pk, on_file), **options
        ),
    )


def enqueue(
    step: str, directory, *, store_name: str = "", domain_name: str = "", file_names: list[str] | None = None,
    user=None, **options,
) -> IngestionJob:
    """Queue one Celery task per file (``--async``, admin uploads). Eager without Redis.

    Documents (``store``, ``build``) or staged files (``chunk``) whose files left
    ``directory`` are pruned here, before the tasks run.

    :param file_names: only these files of ``directory`` (an upload; nothing is
        pruned); default all.
    :returns: the job; its tasks record progress and close it.
    """
    from ingestion.tasks import enqueue as enqueue_tasks

    checked = IngestOptions(**options)
    directory = resolve_directory(directory)
    names = file_names if file_names is not None else [relative_name(p, directory) for p in require_files(directory)]
    if not names:
        raise IngestError(f"{directory}: no files to ingest")
    store = resolve_store(store_name, domain_name, bm25_only=checked.bm25_only) if step != "chunk" else None
    arguments = {"directory": str(directory), **checked.as_dict(), "async": True}
    job = jobs.start_job(step, len(names), arguments, store=store, user=user)

    def queue() -> None:
        if step == "store":  # a library or map file edited since `chunk` (build/chunk tasks apply per file)
            apply_folder_sources(directory, [checked.library] if checked.library else None, only=(
                set(file_names) if file_names is not None else None))
        if file_names is None:
            pruned = set(prune_staged(directory, set(names))) if step != "store" else set()
            if store is not None:
                pruned |= set(prune_documents(store, directory, set(names)))
            if pruned:
                note = f"{len(pruned)} pruned: {', '.join(sorted(pruned)[:20])}"
                IngestionJob.objects.filter(pk=job.pk).update(messages=[note])
        enqueue_tasks(job, step, [(directory, name) for name in names], store.pk if store else None, checked)

    closed_on_error(job, queue)  # the tasks close the job; an error while queueing closes it here
    job.refresh_from_db()
    return job


def run_file(
    step: str, directory: str, file_name: str, store_id: int | None, options: dict, on_page: OnPage | None = None
) -> FileOutcome:
    """The work of one Celery task (or one file of :func:`ingestion.runs.ingest.ingest`).

    :param options: :meth:`IngestOptions.as_dict` values (missing ones take defaults).
    :param on_page: (file name, pages OCRed, pages to OCR) during OCR.
    :raises ValueError: unknown step. :raises Store.DoesNotExist: the store is gone.
    """
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got {step!r}")
    checked = IngestOptions(**options)
    folder = Path(directory)
    path = folder / file_name
    if not path.is_file():
        return unreadable(file_name, FileNotFoundError(str(path)))  # queued, then gone
    outcome, notes = None, []
    if step in ("chunk", "build"):
        staged, outcome = chunk_file(folder, path, checked, on_page=on_page)
        if staged is not None:
            sources = apply_folder_sources(folder, [checked.library] if checked.library else None, only={file_name})
            matched = sources.matching.files.get(file_name) if sources.matching is not None else None
            if matched:  # said per file: an upload's own library pass ran before this file was chunked
                record, rule = matched
                notes.append(f"library record {record.library}: {record.key} (matched by {rule})")
    if step in ("store", "build"):
        outcome = store_file(Store.objects.get(pk=store_id), path, folder, checked)
    if outcome is not None and notes:
        outcome.notes = notes + outcome.notes
    return outcome
