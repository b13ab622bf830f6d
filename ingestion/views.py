"""``GET /api/jobs/<id>``: an ingestion job's progress as JSON (staff or its creator)."""

from django.http import JsonResponse
from django.views.decorators.http import require_GET

from .models import IngestionJob


def job_payload(job: IngestionJob) -> dict:
    """The job as plain JSON values: status, done/total/percent, errors per file."""
    return {
        "id": job.pk,
        "kind": job.kind,
        "store": job.store.name if job.store_id else None,
        "status": job.status,
        "done": job.done,
        "total": job.total,
        "percent": job.percent,
        "errors": job.errors,
        "outcomes": job.outcomes,
        "messages": job.messages,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


@require_GET
def job_detail(request, job_id: int):
    """:returns: 200 with :func:`job_payload`; 404 for a missing job and for anyone but
    staff and the job's creator (other users learn nothing, not even that it exists)."""
    job = IngestionJob.objects.select_related("store").filter(pk=job_id).first()
    user = request.user
    allowed = job is not None and user.is_authenticated and (user.is_staff or job.created_by_id == user.pk)
    if not allowed:
        return JsonResponse({"error": {"code": "not_found", "message": f"no job {job_id}"}}, status=404)
    return JsonResponse(job_payload(job))
