import json

from django import forms
from django.contrib import admin, messages
from django.db import models

from . import tokens
from .models import ApiToken, ChatMessage, ChatSession, McpServer, McpTool
from .redact import MASK

# McpServer fields that may hold secrets: write-only in the form, masked everywhere else.
SECRET_FIELDS = ("env", "headers")


def masked(values) -> dict:
    """``{"API_KEY": "s3cret"}`` -> ``{"API_KEY": "[secret]"}`` (names stay visible)."""
    return {key: MASK for key in values} if isinstance(values, dict) else {}


class McpServerForm(forms.ModelForm):
    """``env`` and ``headers`` are write-only: the form shows their names with
    ``[secret]`` for each value; a value left as ``[secret]`` keeps the stored one, any
    other value replaces it, a removed name is removed. (No Meta: the admin builds the
    form for McpServer from this base, with its formfield_overrides.)"""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in SECRET_FIELDS:
            if name in self.fields:
                self.initial[name] = masked(getattr(self.instance, name))
                self.fields[name].help_text += f" Stored values show as {MASK}: leave one so to keep it."

    def _unmasked(self, name: str):
        value = self.cleaned_data.get(name)
        stored = getattr(self.instance, name) if self.instance.pk else {}
        if not isinstance(value, dict) or not isinstance(stored, dict):
            return value
        return {key: stored.get(key, item) if item == MASK else item for key, item in value.items()}

    def clean_env(self):
        return self._unmasked("env")

    def clean_headers(self):
        return self._unmasked("headers")


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


class McpToolInline(admin.TabularInline):
    """The allow-list: a tool is offered to the chat model only when allowed *and*
    read-only. Name, schema and the server's hints come from "Fetch the tool list"."""

    model = McpTool
    fields = ("name", "allowed", "read_only", "description", "server_hints", "on_server")
    readonly_fields = ("server_hints", "on_server")
    extra = 0

    @admin.display(description="server's hints")
    def server_hints(self, tool: McpTool) -> str:
        hints = [f"{key}={value}" for key, value in sorted((tool.annotations or {}).items()) if key.endswith("Hint")]
        return ", ".join(hints) or "-"


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    """MCP servers per domain. ``env`` and ``headers`` are write-only: the change form
    shows their names with masked values (:class:`McpServerForm`), the read-only page
    of a view-only user shows the same masks, and lists never show them. Fetching the
    tool list starts the server and rewrites tool rows: it needs the change permission."""

    form = McpServerForm
    list_display = ("name", "domain", "transport", "active", "offered_tools", "tools_listed_at")
    list_filter = ("domain", "transport", "active")
    search_fields = ("name", "domain__name", "command", "url")
    readonly_fields = ("tools_listed_at", "created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("domain", "name", "description", "active", "transport")}),
        ("stdio", {"fields": ("command", "args", "env")}),
        ("streamable HTTP", {"fields": ("url", "headers")}),
        ("Tool list", {"fields": ("tools_listed_at", "created_at", "updated_at")}),
    )
    inlines = [McpToolInline]
    actions = ["fetch_tool_list"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def get_fieldsets(self, request, obj=None):
        """A user who may only view gets the masked read-only displays in place of the
        secret fields (Django would show a read-only field's raw value)."""
        fieldsets = super().get_fieldsets(request, obj)
        if self.has_change_permission(request, obj):
            return fieldsets
        swap = {name: f"{name}_masked" for name in SECRET_FIELDS}
        return [(title, {**options, "fields": tuple(swap.get(f, f) for f in options["fields"])})
                for title, options in fieldsets]

    @admin.display(description="env")
    def env_masked(self, server: McpServer) -> str:
        return json.dumps(masked(server.env))

    @admin.display(description="headers")
    def headers_masked(self, server: McpServer) -> str:
        return json.dumps(masked(server.headers))

    @admin.display(description="offered tools")
    def offered_tools(self, server: McpServer) -> str:
        names = [t.name for t in server.tools.all() if t.offered and t.on_server]
        return ", ".join(names) or "-"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("domain").prefetch_related("tools")

    @admin.action(description="Fetch the tool list from the selected servers", permissions=["change"])
    def fetch_tool_list(self, request, queryset):
        from .mcp.discovery import refresh_tools  # the mcp SDK loads in 0.6 s: only when used
        from .mcp.session import ServerFailed

        for server in queryset:
            try:
                report = refresh_tools(server)
            except ServerFailed as exc:
                self.message_user(request, str(exc), level=messages.ERROR)
            else:
                self.message_user(request, f"{server.name}: {report.summary()}", level=messages.SUCCESS)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Personal API tokens (docs/clients.md). Adding one shows the token once, in a
    message; only its digest is stored. Tokens are revoked (kept, for the record), not
    edited."""

    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "prefix", "user__username")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke_tokens"]

    def get_fields(self, request, obj=None):
        return ("user", "name") if obj is None else ("user", "name", *self.readonly_fields)

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else ("user", *self.readonly_fields)

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        row, token = tokens.create_token(obj.user, obj.name)
        obj.pk, obj.prefix, obj.digest, obj.created_at = row.pk, row.prefix, row.digest, row.created_at
        obj._state.adding = False
        self.message_user(request, f"New token for {row.user.get_username()} (shown once, copy it now): {token}",
                          messages.WARNING)

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke_tokens(self, request, queryset):
        revoked = sum(tokens.revoke(row) for row in queryset)
        self.message_user(request, f"{revoked} token(s) revoked.", messages.SUCCESS)
