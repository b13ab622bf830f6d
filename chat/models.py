"""Conversations: a ChatSession holds ChatMessages and a running summary of old ones.

Memory (docs/pipeline.md): the most recent messages up to KLEA_RAG_HISTORY_CHARS
(10,000) characters are given verbatim to the models; older ones are folded into
``summary`` and ``summarised_till`` points at the last folded message. Search queries
are never stored: they are not part of the conversation.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


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
