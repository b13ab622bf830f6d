"""Runs of the ingestion steps with their IngestionJob: what the commands, the demo and
the admin call. ``ingest_directory`` is ``build``: chunk then store.

Synchronous runs record each file's outcome on the job as it finishes (so
``GET /api/jobs/<id>`` shows progress) and close the job from the report; ``enqueue``
creates the job and one Celery task per file, which close it themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from . import jobs
from .chunk_step import chunk_directory, chunk_options, prune_staged
from .chunking import DEFAULT_MAX_TOKENS
from .files import FileOutcome, IngestError, StepReport, list_source_files, relative_name, require_files, resolve_directory
from .models import IngestionJob
from .store_step import prune_documents, resolve_store, store_directory

__all__ = [
    "IngestError",
    "enqueue",
    "ingest_directory",
    "list_source_files",
    "resolve_store",
    "run_chunk",
    "run_store",
]


def _job(kind: str, directory: Path, arguments: dict, store=None, user=None) -> IngestionJob:
    total = len(list_source_files(directory))
    return jobs.start_job(kind, total, {"directory": str(directory), **arguments}, store=store, user=user)


def _closed_on_error(job: IngestionJob, run: Callable[[], StepReport | None]) -> StepReport | None:
    """``run()``; on any exception the job is marked failed (never left ``running``)."""
    try:
        return run()
    except BaseException as exc:
        with contextlib.suppress(Exception):  # a dead database must not hide the real error
            jobs.fail(job.pk, run_error(exc))
        raise


def _guarded(job: IngestionJob, run: Callable[[], StepReport]) -> StepReport:
    """Run a step and close its job from the report, or as failed on any exception."""

    def step() -> StepReport:
        report = run()
        report.job_id = job.pk
        jobs.finish(job.pk, report)
        return report

    return _closed_on_error(job, step)


def run_error(exc: BaseException) -> str:
    """One line for a job that a run-level error or an unexpected exception ended."""
    if isinstance(exc, IngestError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    detail = (str(exc).splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def run_chunk(
    directory, *, max_tokens: int = DEFAULT_MAX_TOKENS, ocr: str = "auto", force: bool = False,
    on_start=None, on_file=None, user=None,
) -> StepReport:
    """``stores chunk``: :func:`ingestion.chunk_step.chunk_directory` under a job."""
    chunk_options(max_tokens, ocr)  # validate before creating a job
    directory = resolve_directory(directory)
    job = _job("chunk", directory, {"max_tokens": max_tokens, "ocr": ocr, "force": force}, user=user)
    return _guarded(
        job,
        lambda: chunk_directory(
            directory, max_tokens=max_tokens, ocr=ocr, force=force, on_start=on_start, on_file=on_file, job_id=job.pk
        ),
    )


def run_store(
    directory, store_name: str, domain_name: str, *, bm25_only: bool = False, force: bool = False,
    on_start=None, on_file=None, user=None,
) -> StepReport:
    """``stores store``: :func:`ingestion.store_step.store_directory` under a job."""
    directory = resolve_directory(directory)
    require_files(directory)
    store = resolve_store(store_name, domain_name, bm25_only=bm25_only)
    job = _job("store", directory, {"bm25_only": bm25_only, "force": force}, store=store, user=user)
    return _guarded(
        job,
        lambda: store_directory(
            directory, store_name, domain_name, bm25_only=bm25_only, force=force,
            on_start=on_start, on_file=on_file, job_id=job.pk,
        ),
    )


def ingest_directory(
    directory: Path | str,
    store_name: str,
    domain_name: str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    ocr: str = "auto",
    bm25_only: bool = False,
    force: bool = False,
    on_file: Callable[[FileOutcome], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_chunked: Callable[[FileOutcome], None] | None = None,
    user=None,
) -> StepReport:
    """``stores build``: chunk every file of ``directory``, then store it.

    :param on_chunked: called per file after chunking; ``on_file`` after storing.
    :returns: the store step's report (outcomes stored / unchanged / skipped /
        needs_ocr / failed / pruned) with the chunk step's notes.
    :raises IngestError: missing or empty directory, unknown domain, store in another
        domain or of another mode.
    """
    directory = resolve_directory(directory)
    require_files(directory)
    store = resolve_store(store_name, domain_name, bm25_only=bm25_only)
    arguments = {"max_tokens": max_tokens, "ocr": ocr, "bm25_only": bm25_only, "force": force}
    job = _job("build", directory, arguments, store=store, user=user)

    def run() -> StepReport:
        chunked = chunk_directory(
            directory, max_tokens=max_tokens, ocr=ocr, force=force, on_start=on_start, on_file=on_chunked
        )
        stored = store_directory(
            directory, store_name, domain_name, bm25_only=bm25_only, force=force,
            on_start=None, on_file=on_file, job_id=job.pk,
        )
        stored.notes = chunked.notes + stored.notes
        # Files the store step did not see: unsupported ones, and any gone since chunking.
        seen = {o.file_name for o in stored.outcomes}
        stored.outcomes += [o for o in chunked.outcomes if o.file_name not in seen and o.status != "pruned"]
        return stored

    return _guarded(job, run)


def enqueue(
    step: str, directory, *, store_name: str = "", domain_name: str = "", max_tokens: int = DEFAULT_MAX_TOKENS,
    ocr: str = "auto", bm25_only: bool = False, force: bool = False, file_names: list[str] | None = None, user=None,
) -> IngestionJob:
    """Queue one Celery task per file (``--async``, admin uploads). Eager without Redis.

    Documents (``store``, ``build``) or staged files (``chunk``) whose files left
    ``directory`` are pruned here, before the tasks run.

    :param file_names: only these files of ``directory`` (an upload); default all.
    :returns: the job; its tasks record progress and close it.
    """
    from .tasks import enqueue as enqueue_tasks

    chunk_options(max_tokens, ocr)
    directory = resolve_directory(directory)
    names = file_names if file_names is not None else [relative_name(p, directory) for p in require_files(directory)]
    if not names:
        raise IngestError(f"{directory}: no files to ingest")
    store = resolve_store(store_name, domain_name, bm25_only=bm25_only) if step != "chunk" else None
    arguments = {"directory": str(directory), "max_tokens": max_tokens, "ocr": ocr, "bm25_only": bm25_only,
                 "force": force, "async": True}
    job = jobs.start_job(step, len(names), arguments, store=store, user=user)

    def queue() -> None:
        if file_names is None:
            pruned = set(prune_staged(directory, set(names))) if step != "store" else set()
            if store is not None:
                pruned |= set(prune_documents(store, directory, set(names)))
            if pruned:
                note = f"{len(pruned)} pruned: {', '.join(sorted(pruned)[:20])}"
                IngestionJob.objects.filter(pk=job.pk).update(messages=[note])
        options = {"max_tokens": max_tokens, "ocr": ocr, "force": force}
        enqueue_tasks(job, step, directory, names, store.pk if store else None, options)

    _closed_on_error(job, queue)  # the tasks close the job; an error while queueing closes it here
    job.refresh_from_db()
    return job
