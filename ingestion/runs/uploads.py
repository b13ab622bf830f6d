"""Admin uploads: files saved under KLEA_UPLOAD_DIR/<store>/ become that store's
sources, then :func:`ingestion.runs.ingest.ingest` queues one Celery task per file
(eager without Redis)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.utils.text import get_valid_filename

from ingestion.models import IngestionJob

from .ingest import ingest


def upload_dir(store_name: str) -> Path:
    return Path(settings.KLEA_UPLOAD_DIR) / get_valid_filename(store_name)


def save_uploads(form, user) -> IngestionJob:
    """Write the form's files (a same-named file is replaced) and queue their build.

    :returns: the IngestionJob the tasks report to.
    """
    store = form.cleaned_data["store"]
    folder = upload_dir(store.name)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for upload in form.cleaned_data["files"]:
        name = get_valid_filename(Path(upload.name).name)
        partial = folder / f".{name}.part"
        with partial.open("wb") as fh:
            for block in upload.chunks():
                fh.write(block)
        partial.replace(folder / name)  # never a half-written source file
        names.append(name)
    report = ingest(
        [folder / name for name in names], store.name, store.domain.name, queue=True, user=user,
        max_tokens=form.cleaned_data["max_tokens"], ocr=form.cleaned_data["ocr"], force=form.cleaned_data["force"],
    )
    return IngestionJob.objects.get(pk=report.job_id)
