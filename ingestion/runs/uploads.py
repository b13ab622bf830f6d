"""Admin uploads: files saved under KLEA_UPLOAD_DIR/<store>/ and in the ``uploads``
storage (ingestion/blobs.py: the worker may be on another machine) become that
store's sources, then :func:`ingestion.runs.ingest.ingest` queues one Celery task per
file (without Redis: on the server's background thread, ingestion/runs/background.py,
so the view redirects at once); the task copies the folder from the storage first. A
reference-manager library uploaded beside them (``.bib``, CSL-JSON ``.json``) is
applied to the folder's files at once: stored documents whose map it changes are
re-applied without re-embedding."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.utils.text import get_valid_filename

from ingestion.blobs import publish
from ingestion.metadata.library import LIBRARY_SUFFIXES
from ingestion.models import IngestionJob
from ingestion.outcomes import FileOutcome
from ingestion.store.step import reapply_maps

from . import jobs
from .ingest import ingest


# The longest name (UTF-8 bytes) a file is saved under: it is written as
# ".<name>.<8 random characters>.part" first, and file systems allow 255 bytes per name.
MAX_NAME_BYTES = 200


def upload_dir(store_name: str) -> Path:
    return Path(settings.KLEA_UPLOAD_DIR) / get_valid_filename(store_name)


def stored_name(name: str) -> str:
    """The name an uploaded file ``name`` is saved (and so keyed) under: its last path
    part without the characters a file name should not have (``"a b.md"`` -> ``"a_b.md"``,
    ``"!.md"`` -> ``".md"``); ``""`` when nothing is left. The upload form checks these
    names (type, length, two files saved as one), not the names the browser sent."""
    try:
        return get_valid_filename(Path(name).name)
    except SuspiciousFileOperation:  # "", "." or ".."
        return ""


def refused_outcomes(refused: list[tuple[str, str]], taken: set[str]) -> list[FileOutcome]:
    """The ``refused`` outcome of each file the upload form turned away ((name as sent,
    reason), ingestion/forms.py), keyed by its name; a name already ``taken`` by a saved
    file (the same name sent twice) gets " (2)", " (3)", ...: a job counts one outcome
    per name, and two files under one key would leave it waiting forever."""
    outcomes = []
    for name, reason in refused:
        key, n = name, 1
        while key in taken:
            n += 1
            key = f"{name} ({n})"
        taken.add(key)
        outcomes.append(FileOutcome(key, "refused", reason="refused", error=reason))
    return outcomes


def save_uploads(form, user) -> IngestionJob:
    """Write the form's files (a same-named file is replaced), apply uploaded libraries
    and queue the build of the other files. The files the form refused
    (``form.refused``) are the job's ``refused`` outcomes, with their reasons.

    :returns: the IngestionJob the tasks report to (kind ``metadata`` when only
        libraries were uploaded: one outcome per document whose map changed).
    """
    store = form.cleaned_data["store"]
    folder = upload_dir(store.name)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for upload in form.cleaned_data["files"]:
        name = stored_name(upload.name)
        # A temporary file of this upload's own: two uploads of one name at once each
        # write their own, and the later replace wins whole (a shared ".part" name made
        # one fail and another store a mix).
        with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=f".{name}.", suffix=".part",
                                         delete=False) as fh:
            partial = Path(fh.name)
            try:
                for block in upload.chunks():
                    fh.write(block)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
        partial.chmod(0o644)  # as a file written by open(): NamedTemporaryFile makes it 0600
        partial.replace(folder / name)  # never a half-written source file
        names.append(name)
    publish(folder, names)
    refused = refused_outcomes(getattr(form, "refused", []), set(names))
    libraries = [n for n in names if Path(n).suffix.lower() in LIBRARY_SUFFIXES]
    sources = [n for n in names if n not in libraries]
    applied = reapply_maps(folder, store) if libraries else None
    if not sources:
        job = jobs.start_job("metadata", len(applied.outcomes) + len(refused),
                             {"directory": str(folder), "libraries": libraries}, store=store, user=user)
        for outcome in refused + applied.outcomes:
            jobs.record(job.pk, outcome)
        jobs.finish(job.pk, applied)
        return IngestionJob.objects.get(pk=job.pk)
    report = ingest(
        [folder / name for name in sources], store.name, store.domain.name, queue=True, user=user,
        max_tokens=form.cleaned_data["max_tokens"], ocr=form.cleaned_data["ocr"], force=form.cleaned_data["force"],
        upload=folder.name, refused=refused,
    )
    if applied is not None:
        job = IngestionJob.objects.get(pk=report.job_id)
        # Its "library matches" count saw only files chunked before this upload; each new
        # file's task notes its own match ("library record ...").
        notes = [n for n in applied.notes if not n.startswith("library matches:")]
        notes += [f"{o.file_name}: {note}" for o in applied.outcomes for note in o.notes]
        IngestionJob.objects.filter(pk=job.pk).update(messages=(notes + job.messages)[-jobs.MAX_MESSAGES:])
    return IngestionJob.objects.get(pk=report.job_id)
