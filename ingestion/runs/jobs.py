"""IngestionJob bookkeeping shared by the commands and the Celery tasks.

Outcomes are recorded per file name under a row lock, so a task that runs twice (a
worker killed and the message redelivered) overwrites its own entry: ``done`` is the
number of distinct files with an outcome and never over-counts.
"""

from __future__ import annotations

import re

from django.db import transaction
from django.utils import timezone

from ingestion.models import IngestionJob
from ingestion.outcomes import FAILURES, FileOutcome, StepReport

MAX_MESSAGES = 50
# Outcomes about files outside the run's file list: reported in messages, not counted.
NOT_COUNTED = {"pruned", "unsupported"}


def start_job(kind: str, total: int, arguments: dict, store=None, user=None) -> IngestionJob:
    return IngestionJob.objects.create(
        kind=kind,
        store=store,
        status=IngestionJob.Status.RUNNING,
        total=total,
        arguments=arguments,
        created_by=user if user is not None and user.is_authenticated else None,
    )


def _status(outcomes: dict[str, str]) -> str:
    failed = sum(1 for status in outcomes.values() if status in FAILURES)
    if failed and failed == len(outcomes):
        return IngestionJob.Status.FAILED
    return IngestionJob.Status.PARTIAL if failed else IngestionJob.Status.SUCCEEDED


@transaction.atomic
def record(job_id: int, outcome: FileOutcome, finish_when_done: bool = False) -> IngestionJob | None:
    """Record one file's outcome (idempotent per file name); with ``finish_when_done``
    the job is closed once every file has one. Returns the job, or None when it is gone."""
    job = IngestionJob.objects.select_for_update().filter(pk=job_id).first()
    if job is None:
        return None
    job.outcomes[outcome.file_name] = outcome.status
    if outcome.status in FAILURES or outcome.status == "needs_ocr":
        job.errors[outcome.file_name] = outcome.error
    else:
        job.errors.pop(outcome.file_name, None)
    job.done = len(job.outcomes)
    job.pages.pop(outcome.file_name, None)
    job.messages = _without_pages(job.messages, outcome.file_name)
    fields = ["outcomes", "errors", "done", "pages", "messages"]
    if outcome.notes:
        job.messages = (job.messages + [f"{outcome.file_name}: {note}" for note in outcome.notes])[-MAX_MESSAGES:]
    if finish_when_done and job.done >= job.total and job.finished_at is None:
        job.status = _status(job.outcomes)
        job.finished_at = timezone.now()
        job.messages = (job.messages + [summary_line(job.outcomes)])[-MAX_MESSAGES:]
        fields += ["status", "finished_at"]
    job.save(update_fields=fields)
    return job


def summary_line(outcomes: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for status in outcomes.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no files"


def finish(job_id: int, report: StepReport) -> None:
    """Close a synchronous run's job from its report."""
    with transaction.atomic():
        job = IngestionJob.objects.select_for_update().get(pk=job_id)
        extra: dict[str, list[str]] = {}
        for outcome in report.outcomes:
            if outcome.status in NOT_COUNTED:
                extra.setdefault(outcome.status, []).append(outcome.file_name)
                continue
            job.outcomes.setdefault(outcome.file_name, outcome.status)
            if outcome.status in FAILURES or outcome.status == "needs_ocr":
                job.errors[outcome.file_name] = outcome.error
        notes = [f"{len(names)} {status}: {', '.join(names[:20])}" for status, names in sorted(extra.items())]
        job.done = len(job.outcomes)
        job.total = max(job.total, job.done)
        job.status = _status(job.outcomes)
        if report.errors and job.status == IngestionJob.Status.SUCCEEDED:
            job.status = IngestionJob.Status.PARTIAL
        job.finished_at = timezone.now()
        job.pages = {}
        job.messages = [m for m in job.messages if not _OCR_LINE.match(m)]
        job.messages = (job.messages + report.notes + report.errors + notes + [summary_line(job.outcomes)])[-MAX_MESSAGES:]
        job.save()


OCR_PAGE = "{name}: OCR page {done} of {total}"
_OCR_LINE = re.compile(r".*: OCR page \d+ of \d+$")


def _without_pages(messages: list[str], file_name: str) -> list[str]:
    prefix = f"{file_name}: OCR page "
    return [m for m in messages if not m.startswith(prefix)]


@transaction.atomic
def start_file(job_id: int, file_name: str) -> None:
    """Show ``file_name`` as in progress on its job (``pages`` [0, 0]) until its outcome,
    so the job page names the file being worked on, not only "N more file(s) waiting"."""
    job = IngestionJob.objects.select_for_update().filter(pk=job_id).first()
    if job is None or file_name in job.outcomes or file_name in job.pages:
        return
    job.pages[file_name] = [0, 0]
    job.save(update_fields=["pages"])


@transaction.atomic
def record_pages(job_id: int, file_name: str, done: int, total: int) -> None:
    """Show OCR progress of one file on its job until the file has its outcome: one
    message per file, replaced as pages are done, and ``pages`` (counted into
    ``percent``); the job page and ``GET /api/jobs/<id>`` show both."""
    job = IngestionJob.objects.select_for_update().filter(pk=job_id).first()
    if job is None or file_name in job.outcomes:
        return
    job.pages[file_name] = [done, total]
    messages = _without_pages(job.messages, file_name)
    job.messages = (messages + [OCR_PAGE.format(name=file_name, done=done, total=total)])[-MAX_MESSAGES:]
    job.save(update_fields=["messages", "pages"])


def fail(job_id: int, message: str) -> None:
    """Mark a job failed with a one-line message (a run-level error)."""
    IngestionJob.objects.filter(pk=job_id).update(
        status=IngestionJob.Status.FAILED, finished_at=timezone.now(), messages=[message], pages={}
    )
