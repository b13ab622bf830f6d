"""IngestionJob (one run of a step), DoiRecord (the DOI lookup cache) and StagedFile
(a file chunked, not yet stored).

Between ``stores chunk DIR`` and ``stores store DIR`` a file's chunks and its metadata
map live in a StagedFile keyed by (directory, file name), not in ``domains_chunk``:
retrieval and the BM25 statistics only ever see stored chunks, and a stored document
keeps serving its old chunks until ``store`` replaces them in one transaction.
"""

from django.conf import settings
from django.db import models
from django.utils import formats, timezone

from domains.text import storable


class IngestionJob(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        PARTIAL = "partial", "Succeeded with errors"
        FAILED = "failed"

    kind = models.CharField(max_length=32, help_text="The step that ran, e.g. build, chunk, store.")
    store = models.ForeignKey("domains.Store", null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    arguments = models.JSONField(default=dict, blank=True)
    messages = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=dict, blank=True, help_text="file name -> error text")
    outcomes = models.JSONField(
        default=dict, blank=True, help_text="file name -> outcome (stored, unchanged, failed, ...); done = its size"
    )
    pages = models.JSONField(
        default=dict, blank=True,
        help_text="file name -> [pages OCRed, pages to OCR] of files in progress (no outcome yet; [0, 0] until OCR)"
    )
    celery_id = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True,
        help_text="Last sign of life of the process running the job's files on its background thread "
                  "(empty for Celery and command runs); see ingestion/runs/lease.py.",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status_label}, {self.done}/{self.total})"

    @property
    def status_label(self) -> str:
        """The one word(s) for the status everywhere (heading, breadcrumb, bar, list):
        "pending", "running", "succeeded", "succeeded with errors", "failed"."""
        return self.get_status_display().lower()

    @property
    def finished_label(self) -> str:
        """When the job finished, as the admin prints its dates ("Dec. 6, 2026, 11:52 p.m."
        in the active time zone); "" while it runs. The job page shows it whether the server
        rendered the page or ingestion/static/ingestion/job_progress.js filled it in, so the
        page has one date format, not the browser's beside Django's."""
        if self.finished_at is None:
            return ""
        return formats.localize(timezone.template_localtime(self.finished_at))

    @property
    def in_progress(self) -> list[tuple[str, str]]:
        """(file name, OCR progress or "") of files started and without an outcome yet."""
        return [
            (name, f"OCR page {done} of {total}" if total else "")
            for name, (done, total) in sorted(self.pages.items())
            if name not in self.outcomes
        ]

    @property
    def percent(self) -> int:
        """Whole percent of the files done, counting the OCRed pages of files in progress;
        at most 99 until the job has finished (a file's last page is not its end)."""
        if not self.total:
            return 0
        partial = sum(done / total for done, total in self.pages.values() if total)
        value = int(100 * (self.done + partial) / self.total)
        return min(value, 100 if self.finished_at else 99)


class DoiRecord(models.Model):
    """One DOI looked up in the DOI services, cached so no DOI is fetched twice.

    ``key`` is the DOI in lower case (DOI identity is case-insensitive); ``record`` the
    normalised answer (title, authors, year, journal, keywords) of the first service
    that had a titled record, empty when every service answered "not found".
    """

    key = models.CharField(max_length=512, unique=True, help_text="The DOI in lower case.")
    doi = models.CharField(max_length=512, help_text="The DOI as first looked up.")
    found = models.BooleanField(default=True)
    service = models.CharField(max_length=32, blank=True, help_text="crossref, openalex or semanticscholar")
    record = models.JSONField(default=dict, blank=True)
    fetched_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "DOI record"
        ordering = ["key"]

    def __str__(self) -> str:
        return f"{self.doi} ({self.service or 'not found'})"

class StagedFile(models.Model):
    """One file converted and chunked by ``stores chunk``, waiting for ``stores store``.

    ``chunks``: list of {"headings": [str], "text": str, "tokens": int, "provenance":
    dict} in order (provenance: :func:`ingestion.chunk.chunker.provenance`; absent in
    files staged before it existed).
    ``metadata_map``: {"DEFAULT": {...}, "<heading chain>": {...}} for this file.
    ``options``: the chunking options it was made with (max_tokens, ocr); a file is
    re-chunked when its content hash or these options change.
    ``sources``: what each source of the map said when it was last applied
    (:mod:`ingestion.metadata.layers`): ``cascade`` (DEFAULT entry), ``library``
    (matched record or None), ``library_paths``, ``generated``, ``map_file`` and
    ``stored`` (store id -> the map as last stored there).
    """

    class Status(models.TextChoices):
        CHUNKED = "chunked"
        FAILED = "failed"
        NEEDS_OCR = "needs_ocr", "Needs OCR"
        SKIPPED = "skipped", "Skipped (no text)"

    directory = models.CharField(max_length=1000, help_text="Absolute path of the chunked folder.")
    file_name = models.CharField(max_length=500, help_text="Path relative to the folder.")
    content_hash = models.CharField(max_length=64, help_text="sha256 of the file bytes.")
    status = models.CharField(max_length=12, choices=Status.choices)
    reason = models.CharField(max_length=32, blank=True, help_text="Short failure code, e.g. encrypted.")
    error = models.TextField(blank=True)
    pages = models.PositiveIntegerField(null=True, blank=True)
    converter = models.CharField(max_length=300, blank=True, help_text="The conversion path that ran.")
    options = models.JSONField(default=dict, blank=True)
    chunks = models.JSONField(default=list, blank=True)
    metadata_map = models.JSONField(default=dict, blank=True)
    sources = models.JSONField(default=dict, blank=True, help_text="What each source of the map said when last applied.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["directory", "file_name"]
        constraints = [
            models.UniqueConstraint(fields=["directory", "file_name"], name="unique_staged_file_per_directory")
        ]

    # What a file, a library or a map file said: PostgreSQL refuses a NUL in text and
    # jsonb (a PDF Info Title holding one stopped the whole run), so it is dropped here.
    _TEXT_FIELDS = ("error", "converter", "chunks", "metadata_map", "sources")

    def save(self, *args, **kwargs):
        """Saves with :func:`domains.text.storable` applied to the fields that hold what
        the file and its map sources said, and ``converter`` cut to its column (a
        converter's note may quote the file)."""
        for name in self._TEXT_FIELDS:
            setattr(self, name, storable(getattr(self, name)))
        limit = self._meta.get_field("converter").max_length
        self.converter = self.converter[:limit]
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return f"{self.file_name} ({self.status})"

    @property
    def chunk_count(self) -> int:
        return len(self.chunks or [])


class StoredFile(models.Model):
    """The bytes of one uploaded source file, for :class:`ingestion.blobs.DatabaseStorage`
    (the default ``uploads`` storage): web and worker processes on different machines
    share only PostgreSQL and Redis, so an upload travels through here
    (docs/deployment.md). ``name``: ``<store folder>/<file name>``."""

    name = models.CharField(max_length=1000, unique=True)
    data = models.BinaryField()
    size = models.BigIntegerField()
    modified_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.size} bytes)"
