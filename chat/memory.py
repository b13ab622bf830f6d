"""Conversation memory on ChatSession/ChatMessage (synchronous ORM; the pipeline calls
these through ``sync_to_async``).

The model sees the session's running summary plus the most recent messages up to
``history_chars`` characters, verbatim. Messages older than that window are folded into
the summary after a turn (:func:`messages_to_fold`, :func:`store_summary`). Failed and
empty messages are never shown to a model.
"""

from __future__ import annotations

from django.db import transaction

from domains.text import shortened

from .models import ChatMessage, ChatSession

TITLE_CHARS = 80  # of a title taken from a question, "…" included


def title_from(question: str) -> str:
    """A session's title from its first question: white space collapsed; a question
    longer than TITLE_CHARS is cut at a word boundary and ends with "…"
    (``domains.text.shortened``)."""
    return shortened(question, TITLE_CHARS)


def _unsummarised(session: ChatSession):
    messages = session.messages.exclude(status=ChatMessage.Status.FAILED).exclude(content="")
    if session.summarised_till_id:
        messages = messages.filter(id__gt=session.summarised_till_id)
    return messages.order_by("id")


def _window(lengths: list[int], history_chars: int) -> int:
    """Index of the first message of the most recent run that fits in ``history_chars``
    (``lengths``: the messages' content lengths, oldest first)."""
    used = 0
    for index in range(len(lengths) - 1, -1, -1):
        used += lengths[index]
        if used > history_chars:
            return index + 1
    return 0


def load_history(session_id: int, history_chars: int) -> tuple[str, list[dict]]:
    """The session's summary and its recent messages as ``[{"role", "content"}]``.

    :raises ChatSession.DoesNotExist: no such session.
    """
    session = ChatSession.objects.get(pk=session_id)
    messages = list(_unsummarised(session))
    recent = messages[_window([len(m.content) for m in messages], history_chars):]
    return session.summary, [{"role": m.role, "content": m.content} for m in recent]


def recent(messages, history_chars: int) -> list[dict]:
    """A caller's own history (a stateless turn): the user and assistant messages with
    text, the most recent ones up to ``history_chars`` characters, as ``[{"role",
    "content"}]`` oldest first."""
    kept = [{"role": m["role"], "content": m["content"]} for m in messages
            if m.get("role") in (ChatMessage.Role.USER, ChatMessage.Role.ASSISTANT) and m.get("content")]
    return kept[_window([len(m["content"]) for m in kept], history_chars):]


def add_message(session_id: int, role: str, content: str, **fields) -> int:
    """Store one message (``fields``: status, route, domains, references, evaluation,
    warnings, error, timing); the session's title defaults to its first question.

    :returns: the new message id.
    """
    with transaction.atomic():
        message = ChatMessage.objects.create(session_id=session_id, role=role, content=content, **fields)
        session = ChatSession.objects.select_for_update().get(pk=session_id)
        if not session.title and role == ChatMessage.Role.USER:
            session.title = title_from(content)
        session.save(update_fields=["title", "updated_at"])
    return message.id


def messages_to_fold(session_id: int, history_chars: int) -> list[dict]:
    """Unsummarised messages older than the verbatim window, as
    ``[{"id", "role", "content"}]`` oldest first ([] when everything fits)."""
    session = ChatSession.objects.get(pk=session_id)
    messages = list(_unsummarised(session))
    older = messages[: _window([len(m.content) for m in messages], history_chars)]
    return [{"id": m.id, "role": m.role, "content": m.content} for m in older]


def store_summary(session_id: int, summary: str, last_folded_id: int) -> None:
    """Replace the running summary; messages up to ``last_folded_id`` are now in it."""
    ChatSession.objects.filter(pk=session_id).update(summary=summary, summarised_till_id=last_folded_id)
