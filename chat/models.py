"""Conversations (ChatSession, ChatMessage) and the MCP servers of a domain (McpServer,
McpTool).

Conversations: a ChatSession holds ChatMessages and a running summary of old ones.

Memory (docs/pipeline.md): the most recent messages up to KLEA_RAG_HISTORY_CHARS
(10,000) characters are given verbatim to the models; older ones are folded into
``summary`` and ``summarised_till`` points at the last folded message. Search queries
are never stored: they are not part of the conversation.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from domains.models import Domain


class ChatSession(models.Model):
    """One conversation. ``owner`` is None for anonymous or command-line sessions."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="chat_sessions",
    )
    title = models.CharField(max_length=200, blank=True)
    summary = models.TextField(blank=True, help_text="Running summary of the messages up to summarised_till.")
    summarised_till = models.ForeignKey(
        "ChatMessage",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The last message folded into the summary.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or f"session {self.pk}"


class ChatMessage(models.Model):
    """A user question or an assistant answer.

    ``references``: the answer's reference list (the ``references`` event payload);
    ``evaluation``: the evaluator's record; ``timing``: milliseconds per pipeline node
    plus ``ttft_ms`` and ``total_ms``.
    """

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class Status(models.TextChoices):
        COMPLETE = "complete"
        INTERRUPTED = "interrupted"
        FAILED = "failed"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.COMPLETE)
    route = models.CharField(max_length=20, blank=True)
    domains = models.JSONField(default=list, blank=True)
    references = models.JSONField(default=list, blank=True)
    evaluation = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    timing = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "id"]
        indexes = [models.Index(fields=["session", "id"], name="chat_message_session_id")]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _validate_server_name(value: str) -> None:
    if not SERVER_NAME.match(value):
        raise ValidationError("Server name: a letter or digit, then letters, digits, '-' or '_'.")


def _string_map_errors(value, label: str) -> str:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return f'{label} must be a JSON object of strings, e.g. {{"API_KEY": "..."}}.'
    return ""


class McpServer(models.Model):
    """An MCP server a domain's questions may fetch live data from (docs/mcp.md).

    ``transport``: ``stdio`` (Klea starts ``command`` with ``args`` and ``env`` for each
    turn that calls one of its tools) or ``http`` (streamable HTTP at ``url``, with
    ``headers``). ``env`` and ``headers`` may hold secrets: they are passed to the server
    only, never logged, never sent in events, and masked in tool output.
    Only its tools marked allowed *and* read-only are ever offered to a model.
    """

    class Transport(models.TextChoices):
        STDIO = "stdio", "stdio (a command Klea starts)"
        HTTP = "http", "streamable HTTP (a URL)"

    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="mcp_servers")
    name = models.CharField(
        max_length=64,
        unique=True,
        validators=[_validate_server_name],
        help_text="Shown in events and references, e.g. lab-db.",
    )
    description = models.TextField(blank=True, help_text="Notes for administrators.")
    active = models.BooleanField(default=True)
    transport = models.CharField(max_length=10, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(max_length=500, blank=True, help_text="stdio: the executable, e.g. /usr/bin/uvx.")
    args = models.JSONField(default=list, blank=True, help_text='stdio: arguments, e.g. ["lab-mcp", "--read-only"].')
    env = models.JSONField(
        default=dict,
        blank=True,
        help_text="stdio: environment variables (may hold secrets; never logged or sent to clients). "
        "The server inherits only HOME, LOGNAME, PATH, SHELL, TERM and USER besides these.",
    )
    url = models.URLField(max_length=500, blank=True, help_text="http: the endpoint, e.g. https://lab.example.org/mcp.")
    headers = models.JSONField(
        default=dict,
        blank=True,
        help_text='http: request headers, e.g. {"Authorization": "Bearer ..."} (secrets; never logged or sent).',
    )
    tools_listed_at = models.DateTimeField(null=True, blank=True, help_text="When the tool list was last fetched.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["domain__name", "name"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors = {}
        if self.transport == self.Transport.STDIO and not self.command.strip():
            errors["command"] = "A stdio server needs the command that starts it."
        if self.transport == self.Transport.HTTP and not self.url:
            errors["url"] = "An HTTP server needs its URL."
        if not isinstance(self.args, list) or not all(isinstance(a, str) for a in self.args):
            errors["args"] = 'Arguments must be a JSON list of strings, e.g. ["--port", "8000"].'
        for name in ("env", "headers"):
            message = _string_map_errors(getattr(self, name), name.capitalize())
            if message:
                errors[name] = message
        if errors:
            raise ValidationError(errors)


class McpTool(models.Model):
    """One tool of an MCP server: the allow-list entry and the read-only flag.

    ``description`` and ``input_schema`` come from the server's tool list (the model sees
    them; the description may be edited). A tool is offered to the chat model only when
    ``allowed`` and ``read_only`` are both set; new tools are never allowed until an
    administrator says so. ``annotations``: the server's own hints (readOnlyHint,
    destructiveHint, ...), shown for information only: servers may be wrong.
    """

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True, help_text="What the model reads about the tool.")
    input_schema = models.JSONField(default=dict, blank=True, help_text="JSON schema of the arguments (from the server).")
    annotations = models.JSONField(default=dict, blank=True, help_text="The server's hints (from the server).")
    allowed = models.BooleanField(default=False, help_text="On the allow-list: may be offered to the chat model.")
    read_only = models.BooleanField(
        default=False, help_text="Only reads data (changes nothing). Destructive tools are never offered."
    )
    on_server = models.BooleanField(default=True, help_text="Listed by the server the last time its tools were fetched.")

    class Meta:
        ordering = ["server", "name"]
        verbose_name = "MCP tool"
        constraints = [models.UniqueConstraint(fields=["server", "name"], name="chat_mcptool_server_name")]

    def __str__(self) -> str:
        return f"{self.server.name}.{self.name}"

    @property
    def offered(self) -> bool:
        return self.allowed and self.read_only


class ApiToken(models.Model):
    """A personal API token: ``Authorization: Bearer <token>`` acts as ``user`` on the
    JSON API, the OpenAI-compatible endpoint and the MCP server (docs/clients.md).

    Only the SHA-256 ``digest`` of the token is stored (the token is 256 random bits, so
    a slow hash adds nothing); ``prefix`` (its first characters) tells tokens apart in
    lists. A revoked token (``revoked_at`` set) is refused from the next request on.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. open-webui.")
    prefix = models.CharField(max_length=16, editable=False, help_text="The token's first characters.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["user", "-created_at", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
