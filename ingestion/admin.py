from django.contrib import admin
from django.utils.html import format_html

from .models import IngestionJob


@admin.register(IngestionJob)
class IngestionJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "store", "status", "progress", "error_count", "created_at", "finished_at"]
    list_filter = ["status", "kind", "store"]
    search_fields = ["kind", "store__name", "celery_id"]
    readonly_fields = [
        "kind", "store", "status", "total", "done", "arguments", "messages", "errors",
        "celery_id", "created_by", "created_at", "finished_at",
    ]

    @admin.display(description="progress")
    def progress(self, obj):
        return format_html(
            '<progress value="{}" max="{}"></progress> {}/{}', obj.done, obj.total or 1, obj.done, obj.total
        )

    @admin.display(description="errors")
    def error_count(self, obj):
        return len(obj.errors or {})
