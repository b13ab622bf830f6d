"""Chat sessions as their owners see them (synchronous ORM; the websocket consumer calls
these through ``database_sync_to_async``).

A signed-in user owns the sessions whose ``owner`` is them. An anonymous visitor (only
with KLEA_CHAT_PUBLIC) owns the owner-less sessions listed under :data:`ANON_KEY` in their
Django session, so one visitor never reaches another's (or a command-line) session.
Anything not owned is reported as missing, never as forbidden.
"""

from __future__ import annotations

from .models import ChatMessage, ChatSession

ANON_KEY = "klea_chat_sessions"
TITLE_MAX = 200


def anon_ids(django_session) -> list[int]:
    """Session ids an anonymous visitor created (``django_session`` may be None)."""
    if django_session is None:
        return []
    return [int(i) for i in django_session.get(ANON_KEY, [])]


def remember_anon(django_session, session_id: int) -> None:
    """Record a new owner-less session in the visitor's Django session (not saved here)."""
    if django_session is not None:
        django_session[ANON_KEY] = anon_ids(django_session) + [session_id]


def owned(user, anon: list[int]):
    """The sessions ``user`` owns, most recently updated first (a QuerySet)."""
    if user.is_authenticated:
        return ChatSession.objects.filter(owner=user)
    return ChatSession.objects.filter(owner__isnull=True, pk__in=anon)


def get_owned(user, anon: list[int], session_id) -> ChatSession:
    """:raises ChatSession.DoesNotExist: no such session, or not ``user``'s."""
    if not isinstance(session_id, int) or isinstance(session_id, bool):
        raise ChatSession.DoesNotExist
    return owned(user, anon).get(pk=session_id)


def create(user, title: str = "") -> ChatSession:
    """A new session owned by ``user`` (owner-less for an anonymous visitor)."""
    owner = user if user.is_authenticated else None
    return ChatSession.objects.create(owner=owner, title=title[:TITLE_MAX])


def session_payload(session: ChatSession) -> dict:
    """``{"id", "title", "created_at", "updated_at"}`` (ISO 8601 times)."""
    return {
        "id": session.pk,
        "title": session.title,
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
    }


def message_payload(message: ChatMessage) -> dict:
    """One stored message: ``{"id", "role", "content", "status", "route", "domains",
    "references", "warnings", "error", "created_at"}``."""
    return {
        "id": message.pk,
        "role": message.role,
        "content": message.content,
        "status": message.status,
        "route": message.route,
        "domains": message.domains,
        "references": message.references,
        "warnings": message.warnings,
        "error": message.error,
        "created_at": message.created_at.isoformat(),
    }
