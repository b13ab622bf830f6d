"""Celery tasks: one task per document, ids and JSON in (never model instances).

``ingest_file`` runs ``chunk``, ``store`` or both (``build``) for one file of a folder
(:func:`ingestion.runs.steps.run_file`) and records the outcome on its IngestionJob.
It is idempotent: the StagedFile is an upsert and the store write replaces the
document's chunks in one transaction under a row lock, so a redelivered message (``acks_late``; a worker killed mid-document) ends
with exactly one copy of every chunk. Transient database errors are retried with
backoff (at most 3 times); a missing job is logged, not retried.
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

from celery import shared_task
from django.db import InterfaceError, OperationalError, connection

from domains.models import Store
from ingestion.blobs import materialise
from ingestion.options import IngestOptions
from ingestion.outcomes import FileOutcome
from ingestion.runs import jobs
from ingestion.runs.background import submit as background_submit
from ingestion.runs.steps import recording_pages, run_file

from .models import IngestionJob

logger = logging.getLogger("klea.ingestion")


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=3,
)
def ingest_file(self, job_id: int, step: str, directory: str, file_name: str, store_id: int | None, options: dict,
                upload: str = "") -> str:
    """Process one file for job ``job_id``. ``upload``: the file is in that folder of the
    uploads storage, copied to this process's KLEA_UPLOAD_DIR first (``directory`` is
    then the sender's path, unused). :returns: the file's outcome status."""
    if not IngestionJob.objects.filter(pk=job_id).exists():
        logger.warning("ingestion job %s is gone; %s not processed", job_id, file_name)
        return "missing-job"
    try:
        if upload:
            directory = str(materialise(upload))
        jobs.start_file(job_id, file_name)
        outcome = run_file(step, directory, file_name, store_id, options, on_page=recording_pages(job_id))
    except (OperationalError, InterfaceError):
        if self.request.retries >= self.max_retries:
            outcome = FileOutcome(file_name, "failed", error=f"{file_name}: database unavailable", reason="database")
        else:
            raise
    except Store.DoesNotExist:
        outcome = FileOutcome(file_name, "failed", error=f"{file_name}: the store was deleted", reason="no_store")
    except Exception as exc:  # one file's failure is recorded, never lost
        logger.exception("ingesting %s failed", file_name)
        detail = (str(exc).splitlines() or [""])[0][:200]
        outcome = FileOutcome(file_name, "failed", error=f"{file_name}: {type(exc).__name__}: {detail}", reason="error")
    jobs.record(job_id, outcome, finish_when_done=True)
    return outcome.status


def enqueue(
    job: IngestionJob, step: str, work: list[tuple[Path, str]], store_id: int | None, options: IngestOptions,
    upload: str = "", in_background: bool = False,
) -> None:
    """One task per (folder, file name); the job's celery_id is the first task's id.
    ``upload``: the files are in that uploads storage folder (see :func:`ingest_file`).
    ``in_background``: without a broker (eager), the tasks run on the server's background
    thread (:mod:`ingestion.runs.background`) and this returns at once; else in this call."""
    first = ""
    # Inside a transaction the job row is not visible to the thread's connection yet: run here.
    background = in_background and ingest_file.app.conf.task_always_eager and not connection.in_atomic_block
    for directory, file_name in work:
        arguments = (job.pk, step, str(directory), file_name, store_id, options.as_dict(), upload)
        if background:
            background_submit(partial(_apply, arguments), partial(_abandon, arguments), job.pk)
            continue
        result = ingest_file.delay(*arguments)
        first = first or (result.id or "")
    IngestionJob.objects.filter(pk=job.pk).update(celery_id=first)


def _abandon(arguments: tuple) -> None:
    """The server stopped before this file was done: its outcome says so (the job closes)."""
    job_id, file_name = arguments[0], arguments[3]
    if IngestionJob.objects.filter(pk=job_id, outcomes__has_key=file_name).exists():
        return  # done just before the stop
    error = f"{file_name}: the server stopped before it was ingested; upload it again"
    jobs.record(job_id, FileOutcome(file_name, "failed", error=error, reason="stopped"), finish_when_done=True)


def _apply(arguments: tuple) -> None:
    """Run one task eagerly; an error that escapes it still closes the file's outcome."""
    try:
        ingest_file.apply(args=arguments)
    except Exception as exc:
        job_id, file_name = arguments[0], arguments[3]
        jobs.record(job_id, FileOutcome(file_name, "failed", error=f"{file_name}: {type(exc).__name__}", reason="error"),
                    finish_when_done=True)
        raise
