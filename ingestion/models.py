"""IngestionJob: one run of an ingestion step (command, admin upload or Celery task)."""

from django.conf import settings
from django.db import models


class IngestionJob(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        PARTIAL = "partial", "succeeded with errors"
        FAILED = "failed"

    kind = models.CharField(max_length=32, help_text="The step that ran, e.g. build, chunk, store.")
    store = models.ForeignKey("domains.Store", null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    arguments = models.JSONField(default=dict, blank=True)
    messages = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=dict, blank=True, help_text="file name -> error text")
    celery_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status}, {self.done}/{self.total})"

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0


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
