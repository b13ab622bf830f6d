"""Leases of the jobs a server process runs on its background thread (uploads without
Redis, ingestion/runs/background.py).

A Celery task outlives a killed worker (acknowledged late, redelivered) and a normal
stop closes the work not done (``abandon``), but a process that is killed (SIGKILL, the
kernel's out-of-memory killer) or crashes does neither: its job would stay "running".
So while a process has files of a job queued or running it renews the job's
``heartbeat_at`` every quarter of KLEA_JOB_LEASE_SECONDS, and a job whose lease ran out
is closed by whoever reads it next (``GET /api/jobs/<id>``, the admin's job pages):
each file without an outcome fails with reason ``interrupted``. Uploading the files
again stores each one once (a document is replaced in one transaction).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ingestion.models import IngestionJob
from ingestion.outcomes import FileOutcome

from . import jobs

INTERRUPTED = ("{name}: the process ingesting it stopped (killed or crashed: no sign of life for over {lease:g} s); "
               "upload it again")


def renew(job_ids: Iterable[int]) -> None:
    """Mark the unfinished jobs ``job_ids`` as alive now."""
    IngestionJob.objects.filter(pk__in=list(job_ids), finished_at__isnull=True).update(heartbeat_at=timezone.now())


def close_expired() -> list[int]:
    """Close every unfinished job whose lease ran out (module docstring).

    :returns: the ids of the jobs closed by this call.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.KLEA_JOB_LEASE_SECONDS)
    expired = IngestionJob.objects.filter(finished_at__isnull=True, heartbeat_at__lt=cutoff)
    return [job_id for job_id in expired.values_list("pk", flat=True) if _close(job_id, cutoff)]


@transaction.atomic
def _close(job_id: int, cutoff) -> bool:
    job = IngestionJob.objects.select_for_update().filter(
        pk=job_id, finished_at__isnull=True, heartbeat_at__lt=cutoff).first()
    if job is None:  # renewed or closed meanwhile
        return False
    lease = settings.KLEA_JOB_LEASE_SECONDS
    # An upload's job names its files; a folder's job ("paths" holds folders) may not.
    names = [Path(p).name for p in job.arguments.get("paths", [])]
    if len(names) == job.total:
        for name in names:
            if name not in job.outcomes:
                error = INTERRUPTED.format(name=name, lease=lease)
                jobs.record(job_id, FileOutcome(name, "failed", error=error, reason="interrupted"),
                            finish_when_done=True)
        job.refresh_from_db()
    if job.finished_at is None:
        jobs.fail(job_id, INTERRUPTED.format(name=f"job {job_id}", lease=lease))
    return True
