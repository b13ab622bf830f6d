"""One set-up of a question for every transport (``POST /api/query``, the ``/ws/chat/``
websocket): the query's fields checked (chat/parsing.py), the domains the user may ask
and their pick, and the chat session found (the user's own) or created.

Errors are :class:`chat.parsing.BadRequest` with the codes of docs/api.md:
``bad_request`` (a field), ``unknown_domain``, ``not_found`` (a session that is missing
or not the user's); :data:`HTTP_STATUS` gives each its HTTP status.
"""

from __future__ import annotations

from dataclasses import dataclass

from domains.access import UnknownDomain, pick_domains

from . import sessions
from .models import ChatSession
from .parsing import BadRequest, parse_query
from .pipeline import TurnRequest

# HTTP status of a set-up error (400 for any other code).
HTTP_STATUS = {"not_found": 404}


@dataclass
class PreparedTurn:
    """``request``: what the pipeline runs; ``created``: the session is new (the
    websocket announces it with a ``session`` frame); ``owner``: who asks, for the
    per-user turn limit (:func:`turn_owner`)."""

    request: TurnRequest
    created: bool
    owner: str = ""


def turn_owner(user, django_session) -> str:
    """``"user:<id>"`` for a signed-in user; ``"anon:<session key>"`` for an anonymous
    visitor (the Django session is saved first when it has no key yet)."""
    if user.is_authenticated:
        return f"user:{user.pk}"
    if django_session is None:
        return "anon:"
    if not django_session.session_key:
        django_session.save()
    return f"anon:{django_session.session_key}"


def prepare_turn(user, django_session, content: dict) -> PreparedTurn:
    """A client's query frame or body -> the turn to run (synchronous ORM).

    :param user: the request's user (anonymous only with KLEA_CHAT_PUBLIC).
    :param django_session: the visitor's Django session (None without one); a session
        created for an anonymous visitor is recorded in it (not saved here).
    :param content: ``{"text", "session"?, "domains"?, "filters"?}``.
    :raises BadRequest: ``bad_request``, ``unknown_domain``, ``not_found``.
    """
    query = parse_query(content)
    try:
        allowed, pick = pick_domains(user, query["domains"])
    except UnknownDomain as exc:
        raise BadRequest(exc.code, str(exc)) from None
    created = query["session"] is None
    if created:
        session = sessions.create(user)
        if not user.is_authenticated:
            sessions.remember_anon(django_session, session.pk)
    else:
        try:
            session = sessions.get_owned(user, sessions.anon_ids(django_session), query["session"])
        except ChatSession.DoesNotExist:
            raise BadRequest("not_found", f"no session {query['session']}") from None
    request = TurnRequest(query["text"], domains=allowed, session_id=session.pk, pick=pick, filters=query["filters"])
    return PreparedTurn(request, created, turn_owner(user, django_session))
