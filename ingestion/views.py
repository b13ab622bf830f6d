"""``GET /api/jobs/<id>``: an ingestion job's progress as JSON (its creator, or staff
who may manage the job's store: domains.access.managed_domains)."""

from django.db.models import Q
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from domains.access import managed_domains

from .models import IngestionJob
from .runs.lease import close_expired


def visible_jobs(user):
    """The IngestionJob rows ``user`` may read: those they started, and (staff) those of
    the stores of :func:`domains.access.managed_domains`; every job for superusers."""
    if user is None or not user.is_authenticated or not user.is_active:
        return IngestionJob.objects.none()
    if user.is_superuser:
        return IngestionJob.objects.all()
    return IngestionJob.objects.filter(Q(created_by=user) | Q(store__domain__in=managed_domains(user)))


def job_payload(job: IngestionJob) -> dict:
    """The job as plain JSON values: status, done/total files, ``percent`` (0-100: files
    done plus the OCRed share of files in progress, 100 only once finished), ``pages``
    (file name -> [pages OCRed, pages to OCR] of files in progress; [0, 0] before any
    OCR), ``status_label`` (the status as the admin words it), errors per file,
    ``finished_label`` (:attr:`IngestionJob.finished_label`, "" while it runs)."""
    return {
        "id": job.pk,
        "kind": job.kind,
        "store": job.store.name if job.store_id else None,
        "status": job.status,
        "status_label": job.status_label,
        "done": job.done,
        "total": job.total,
        "percent": job.percent,
        "pages": job.pages,
        "errors": job.errors,
        "outcomes": job.outcomes,
        "messages": job.messages,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "finished_label": job.finished_label,
    }


@require_GET
def job_detail(request, job_id: int):
    """:returns: 200 with :func:`job_payload`; 404 for a missing job and for anyone who
    may not read it (:func:`visible_jobs`; others learn nothing, not even that it exists).
    A job whose lease ran out is closed first (ingestion/runs/lease.py)."""
    close_expired()
    job = visible_jobs(request.user).select_related("store").filter(pk=job_id).first()
    if job is None:
        return JsonResponse({"error": {"code": "not_found", "message": f"no job {job_id}"}}, status=404)
    return JsonResponse(job_payload(job))
