"""Chat sessions as their owners see them (synchronous ORM; the websocket consumer calls
these through ``database_sync_to_async``).

A signed-in user owns the sessions whose ``owner`` is them. An anonymous visitor (only
with KLEA_CHAT_PUBLIC) owns the owner-less sessions listed under :data:`ANON_KEY` in their
Django session, so one visitor never reaches another's (or a command-line) session.
Anything not owned is reported as missing, never as forbidden.

Stored answers follow the user's access *now* (docs/security.md): an answer that drew on
a domain the user may no longer query (a group was taken away, the domain restricted)
is shown as :data:`HIDDEN_ANSWER`, and each reference of such a domain only as
``{"number", "kind", "hidden": true}`` — no text, title or domain name.
"""

from __future__ import annotations

from .models import ChatMessage, ChatSession

ANON_KEY = "klea_chat_sessions"
TITLE_MAX = 200
HIDDEN_ANSWER = "(hidden: this answer used a domain that is no longer available to you)"


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


def message_payload(message: ChatMessage, allowed: set[str] | None = None) -> dict:
    """One stored message: ``{"id", "role", "content", "status", "route", "domains",
    "references", "warnings", "error", "created_at"}``.

    :param allowed: names of the domains the reader may query now; None shows all.
        Content and references of domains outside it are hidden (module docstring).
    """
    content, domains, references = message.content, message.domains or [], message.references or []
    if allowed is not None:
        revoked = {d for d in domains if d not in allowed}
        revoked |= {r.get("domain") for r in references if r.get("domain") and r.get("domain") not in allowed}
        if revoked:
            content = HIDDEN_ANSWER if message.role == ChatMessage.Role.ASSISTANT else content
            domains = [d for d in domains if d in allowed]
            references = [
                {"number": r.get("number"), "kind": r.get("kind"), "hidden": True} if r.get("domain") in revoked else r
                for r in references
            ]
    return {
        "id": message.pk,
        "role": message.role,
        "content": content,
        "status": message.status,
        "route": message.route,
        "domains": domains,
        "references": references,
        "warnings": message.warnings,
        "error": message.error,
        "created_at": message.created_at.isoformat(),
    }
