"""Admin: ingestion jobs (live progress, errors, uploads), staged files and the DOI cache.
(The metadata map is edited in the domains admin; ingestion/apps.py re-applies it.)"""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ingestion.runs.lease import close_expired
from ingestion.runs.uploads import save_uploads

from .forms import UploadForm, upload_too_large
from .models import DoiRecord, IngestionJob, StagedFile
from .views import visible_jobs

SOURCES_SHOWN = 20  # paths listed on a job's page; an upload of hundreds of files says "and N more"


@admin.register(IngestionJob)
class IngestionJobAdmin(admin.ModelAdmin):
    # No status column: the progress cell ends with the status in words ("1/1 (100%) succeeded"),
    # and without it the list fits beside the filter sidebar at 1366 px.
    list_display = ["id", "kind", "store", "progress", "error_count", "created_by", "created_at", "finished_at"]
    list_filter = ["status", "kind", "store"]
    search_fields = ["kind", "store__name", "celery_id"]
    # status, progress, files, errors and messages: the live panel (admin/ingestion/job_live.html);
    # the raw `arguments` JSON is shown as words (what was ingested, the options, who ran it)
    fields = readonly_fields = ["kind", "store", "sources", "run_options", "run_by", "created_by", "created_at"]
    change_list_template = "admin/ingestion/ingestionjob/change_list.html"

    def has_add_permission(self, request):
        return False  # jobs come from commands and uploads

    def get_queryset(self, request):
        """Only the jobs of stores the user may manage, and their own (ingestion/views.py)."""
        return super().get_queryset(request).filter(pk__in=visible_jobs(request.user).values("pk"))

    def has_change_permission(self, request, obj=None):
        return False  # a record of what ran: viewed (and deleted), never edited

    @admin.display(description="progress")
    def progress(self, obj):
        """A bar that ingestion/static/ingestion/job_progress.js refreshes while the job runs."""
        return format_html(
            '<progress class="klea-job" data-job-url="{}" data-status="{}" value="{}" max="{}"></progress> '
            '<span class="klea-job-count">{}/{} ({}%) {}</span>',
            reverse("ingestion-job", args=[obj.pk]), obj.status, obj.percent, 100, obj.done, obj.total,
            obj.percent, obj.status_label,
        )

    def changelist_view(self, request, extra_context=None):
        close_expired()  # a killed process's jobs show as closed (ingestion/runs/lease.py)
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The job page opens with its live "Progress" panel (admin/ingestion/job_live.html)."""
        close_expired()
        job = self.get_queryset(request).filter(pk=object_id).first()
        if job is not None:
            # (name, outcome, progress, error): OCR progress is not an error, it goes beside the outcome
            files = [(name, outcome, "", job.errors.get(name, "")) for name, outcome in sorted(job.outcomes.items())]
            files += [(name, "in progress", ocr, "") for name, ocr in job.in_progress]
            waiting = max(job.total - job.done - len(job.in_progress), 0)
            extra_context = {**(extra_context or {}), "job_files": files, "job_waiting": waiting}
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description="files")
    def sources(self, obj):
        """The folder, or the files and folders given (one a line, the first
        SOURCES_SHOWN, then how many more), from ``arguments``."""
        arguments = obj.arguments or {}
        if arguments.get("directory"):
            return f"the folder {arguments['directory']}"
        paths = arguments.get("paths") or []
        lines = paths[:SOURCES_SHOWN] + ([f"and {len(paths) - SOURCES_SHOWN} more"] if len(paths) > SOURCES_SHOWN else [])
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines)) or "-"

    @admin.display(description="options")
    def run_options(self, obj):
        """The ingestion options in words: "chunks of at most 450 tokens, OCR auto"; then
        only what differs from the defaults (forced, keyword-only, a library)."""
        arguments = obj.arguments or {}
        if "max_tokens" not in arguments:
            return "-"
        words = [f"chunks of at most {arguments['max_tokens']} tokens", f"OCR {arguments.get('ocr', 'auto')}"]
        if arguments.get("force"):
            words.append("unchanged files redone (force)")
        if arguments.get("bm25_only"):
            words.append("keyword search only (no embeddings)")
        if arguments.get("library"):
            words.append(f"library {arguments['library']}")
        return ", ".join(words)

    @admin.display(description="run by")
    def run_by(self, obj):
        """Where the files were (or are being) ingested. ``arguments["async"]`` only says that
        the files were queued; without REDIS_URL a queued upload runs on a background thread
        of the web server (which renews ``heartbeat_at``), else on Celery workers."""
        if not (obj.arguments or {}).get("async"):
            return "the command or script that started it"
        if obj.heartbeat_at is not None:
            return "a background thread of the web server (no REDIS_URL)"
        if settings.CELERY_TASK_ALWAYS_EAGER:
            return "the process that queued it (no REDIS_URL: tasks run in place)"
        return f"Celery workers (first task {obj.celery_id})" if obj.celery_id else "Celery workers"

    @admin.display(description="errors")
    def error_count(self, obj):
        return len(obj.errors or {})

    def get_urls(self):
        upload = path("upload/", self.admin_site.admin_view(self.upload_view), name="ingestion_ingestionjob_upload")
        return [upload] + super().get_urls()

    def upload_view(self, request):
        """Upload one or many files into a store: one Celery task per file."""
        back = HttpResponseRedirect(reverse("admin:ingestion_ingestionjob_changelist"))
        if not request.user.has_perm("domains.add_document"):
            messages.error(request, "You may not add documents.")
            return back
        limit = settings.KLEA_UPLOAD_MAX_BYTES
        size = int(request.META.get("CONTENT_LENGTH") or 0)
        if request.method == "POST" and size > limit:  # refused before the body is read
            messages.error(request, upload_too_large(size, limit))
            return back
        form = UploadForm(request.POST or None, request.FILES or None, user=request.user)
        if request.method == "POST" and form.is_valid():
            job = save_uploads(form, request.user)
            saved = len(form.cleaned_data["files"])
            messages.success(request, f"Uploaded {saved} file(s): job {job.pk} ingests them, progress below.")
            for _name, reason in form.refused:  # the others went on (ingestion/forms.py)
                messages.warning(request, f"Not uploaded: {reason}")
            return HttpResponseRedirect(reverse("admin:ingestion_ingestionjob_change", args=[job.pk]))
        fieldsets = [(None, {"fields": ["store", "files"]}), ("Options", {"fields": ["max_tokens", "ocr", "force"]})]
        context = {**self.admin_site.each_context(request), "title": "Upload documents", "opts": self.model._meta,
                   "adminform": helpers.AdminForm(form, fieldsets, {}, model_admin=self), "errors": form.errors,
                   "media": self.media + form.media}
        return TemplateResponse(request, "admin/ingestion/upload.html", context)


@admin.register(StagedFile)
class StagedFileAdmin(admin.ModelAdmin):
    """Files chunked by ``stores chunk`` and not necessarily stored; the map is editable
    here before ``stores store``."""

    list_display = ["file_name", "directory", "status", "chunk_count", "pages", "updated_at"]
    list_filter = ["status", "directory"]
    search_fields = ["file_name", "directory"]
    readonly_fields = ["directory", "file_name", "content_hash", "status", "reason", "error", "pages", "converter",
                       "options", "chunk_preview", "sources", "updated_at"]  # sources: what each map source said
    exclude = ["chunks"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="chunks")
    def chunk_preview(self, obj):
        items = [(" > ".join(c["headings"]), c["text"][:200]) for c in (obj.chunks or [])[:50]]
        return format_html("<ol>{}</ol>", format_html_join("", "<li><b>{}</b> {}</li>", items)) if items else "none"


@admin.register(DoiRecord)
class DoiRecordAdmin(admin.ModelAdmin):
    """The DOI lookup cache, read-only: delete a row to have the DOI fetched again."""

    list_display = ["doi", "found", "service", "fetched_at"]
    list_filter = ["found", "service"]
    search_fields = ["key", "record__title"]
    readonly_fields = ["key", "doi", "found", "service", "record", "fetched_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
