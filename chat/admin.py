from django.contrib import admin

from .models import ChatMessage, ChatSession


class ChatMessageInline(admin.TabularInline):
    model = ChatMessage
    fields = ("role", "status", "route", "content", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "owner", "updated_at")
    search_fields = ("title", "owner__username")
    readonly_fields = ("summary", "summarised_till", "created_at", "updated_at")
    inlines = [ChatMessageInline]


@admin.register(ChatMessage)
class ChatMessageAdmin(admin.ModelAdmin):
    list_display = ("session", "role", "status", "route", "created_at")
    list_filter = ("role", "status", "route")
    readonly_fields = (
        "session", "role", "content", "status", "route", "domains", "references", "evaluation", "warnings",
        "error", "timing", "created_at",
    )
