"""The chat websocket (``/ws/chat/``): query and cancel frames in, pipeline events out.

Protocol (docs/api.md): the client sends ``{"type": "query", "session": id | null,
"text": str, "domains"?: [str], "filters"?: {...}}`` or ``{"type": "cancel"}``; the
server sends ``{"type": "session", "session": id}`` when it created the session, then
the turn's events (``stage``, ``token``, ``tool``, ``references``, ``answer``,
``error``, ``done``) exactly as ``Event.as_dict()`` gives them. Protocol errors are
``error`` events too (``fatal`` false, the socket stays open; fields are checked by
chat/parsing.py), with ``refused`` naming the frame they answer (``query``: no turn
runs for it, and no ``done`` follows; ``cancel``; ``frame``: unreadable): ``bad_json``,
``bad_request``, ``unknown_type``, ``too_large``, ``busy``, ``not_found``,
``unknown_domain``, ``idle``, ``too_many_turns`` (KLEA_MAX_TURNS_PER_USER),
``rate_limited`` (KLEA_TURNS_PER_MINUTE; the message says when to ask again),
``unavailable`` (Redis, which holds the session locks, did not answer). An anonymous socket without KLEA_CHAT_PUBLIC gets one
``not_authenticated`` error and is closed with code 4401.

Sign-in is checked again on every query frame, as the HTTP API checks it on every
request: a socket whose Django session was signed out, or whose user was deactivated,
gets that ``not_authenticated`` error and 4401 instead of a turn. Signing out also
closes this process's open sockets of that session at once (their running turns are
cancelled). Frames that arrive once the socket is closing are ignored, and a session
created for a query whose ``session`` frame could not be sent is deleted: no row or
lock outlives a socket that could not hear about it (docs/security.md).
"""

from __future__ import annotations

import asyncio
import logging

from importlib import import_module
from types import SimpleNamespace

from channels.db import aclose_old_connections, database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import AnonymousUser

from domains.access import may_chat

from .models import ChatSession
from .parsing import BadRequest, decode_json
from .tokens import authenticate as authenticate_token
from .pipeline import Done, Error, Turn
from .turn_lock import LockUnavailable, TurnLimit, TurnLock
from .turn_setup import PreparedTurn, prepare_turn

logger = logging.getLogger("klea.chat")
CLOSE_NOT_AUTHENTICATED = 4401
SessionStore = import_module(settings.SESSION_ENGINE).SessionStore
# Seconds a disconnect waits for the cancelled turn to store its partial answer.
CANCEL_WAIT = 5.0


# What a protocol error's ``refused`` names: the client frame that was not acted on.
QUERY, CANCEL, FRAME = "query", "cancel", "frame"


def error(code: str, message: str, refused: str) -> dict:
    """A protocol error: ``fatal`` false, and ``refused`` says which frame it answers
    (QUERY: no turn runs for that query, and no ``done`` follows; CANCEL; FRAME: one
    that could not be read as either), so a client leaves its waiting state on the
    server's word rather than on a list of codes (docs/api.md, "Protocol errors")."""
    return {**Error(code=code, message=message).as_dict(), "refused": refused}


class SignedOut(Exception):
    """The socket's user is no longer signed in and active (checked per query frame)."""


def current_user(scope):
    """The user the socket's Django session belongs to now (synchronous ORM).

    The scope's user was read once, at connect; this reads the session again from its
    store, so a signed-out session (deleted), a changed password (its hash no longer
    matches) or a deactivated user (the backend refuses it) all give AnonymousUser, as
    ``django.contrib.auth.get_user`` does for an HTTP request. A socket opened with an
    API token checks the token again (revoked, or its user inactive: AnonymousUser).
    """
    user = scope.get("user")
    session = scope.get("session")
    if user is None or not user.is_authenticated:
        return user
    if scope.get("api_token") is not None:  # a Bearer socket: the token must still be valid
        return authenticate_token(scope["api_token"]) or AnonymousUser()
    if session is None or not session.session_key:
        return AnonymousUser()
    fresh = auth.get_user(SimpleNamespace(session=SessionStore(session.session_key)))
    return fresh if fresh.pk == user.pk else AnonymousUser()


# This process's open chat sockets, for closing those of a session that signs out.
_open: set[ChatConsumer] = set()


def close_signed_out(session_key: str | None) -> int:
    """Close this process's sockets of Django session ``session_key`` (from any thread).
    :returns: how many were told to close."""
    targets = [c for c in list(_open) if session_key and c.session_key == session_key]
    for consumer in targets:
        asyncio.run_coroutine_threadsafe(consumer.end_signed_out(), consumer.loop)
    return len(targets)


# The chat consumer subscribes to no channel layer: a turn's events come from the Turn
# running in this process, and the socket's frames from daphne. A subscription would hold
# a blocking Redis read per open socket, and under load (an event loop busy with many
# turns) redis-py times those reads out, which killed sockets with 1011 in bench/load.py.
# An alias that names no configured layer makes Channels skip it.
NO_CHANNEL_LAYER = "klea-chat-needs-no-layer"


class ChatConsumer(AsyncJsonWebsocketConsumer):
    """One browser tab's chat: at most one running turn, cancelled on ``cancel`` or disconnect."""

    channel_layer_alias = NO_CHANNEL_LAYER
    turn: Turn | None = None
    forward_task: asyncio.Task | None = None
    running = False  # a turn of this socket is running (until just before its "done" is sent)
    closed = False
    session_key: str | None = None  # the Django session's key at connect
    loop: asyncio.AbstractEventLoop | None = None

    async def connect(self):
        await self.accept()
        if not may_chat(self.scope.get("user")):
            return await self.refuse()
        session = self.scope.get("session")
        self.session_key = session.session_key if session is not None else None
        self.loop = asyncio.get_running_loop()
        _open.add(self)

    async def refuse(self, message: str = "sign in to chat") -> None:
        """One fatal ``not_authenticated`` error, then close with 4401; later frames are ignored."""
        self.closed = True
        _open.discard(self)
        await self.send_json(Error(code="not_authenticated", message=message, fatal=True).as_dict())
        await self.close(code=CLOSE_NOT_AUTHENTICATED)

    async def end_signed_out(self) -> None:
        """The session signed out (another request, this process): stop the turn and close."""
        if self.closed:
            return
        if self.turn is not None and not self.turn.finished:
            self.turn.cancel()
        await self.refuse("signed out; sign in again to chat")

    async def receive(self, text_data=None, bytes_data=None):
        if self.closed:  # refused or closing: nothing more is read
            return
        limit = settings.KLEA_WS_MAX_FRAME_BYTES
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > limit:
            return await self.send_json(error("too_large", f"frame of {size} bytes; the limit is {limit} bytes", FRAME))
        if text_data is None:
            return await self.send_json(error("bad_json", "send JSON in text frames", FRAME))
        try:
            content = decode_json(text_data)
        except BadRequest as exc:
            return await self.send_json(error(exc.code, exc.message, FRAME))
        await self.receive_json(content)

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict) or not isinstance(content.get("type"), str):
            return await self.send_json(error("bad_request", 'a frame is a JSON object with a "type"', FRAME))
        handler = {"query": self.on_query, "cancel": self.on_cancel}.get(content["type"])
        if handler is None:
            return await self.send_json(error("unknown_type", f"unknown frame type {content['type']!r}", FRAME))
        await handler(content)

    async def on_cancel(self, content):
        if not self.running or self.turn is None:
            return await self.send_json(error("idle", "no turn is running", CANCEL))
        self.turn.cancel()  # the turn ends with error "interrupted" and done "interrupted"

    async def on_query(self, content):
        if self.running:
            return await self.send_json(error("busy", "a turn is running; wait for done or cancel it", QUERY))
        try:
            await aclose_old_connections()
            prepared = await self.prepare(content)
        except SignedOut:
            return await self.refuse("signed out; sign in again to chat")
        except BadRequest as exc:
            return await self.send_json(error(exc.code, exc.message, QUERY))
        request = prepared.request
        lock = TurnLock(request.session_id, prepared.owner)
        try:
            acquired = await lock.acquire()
        except TurnLimit as exc:
            return await self.send_json(error(exc.code, str(exc), QUERY))
        except LockUnavailable as exc:
            return await self.send_json(error("unavailable", str(exc), QUERY))
        if not acquired:
            return await self.send_json(error("busy", "this session is answering another question", QUERY))
        if self.closed or (prepared.created and not await self.announce(request.session_id)):
            await lock.release()  # the client went away while the turn was being set up
            if prepared.created:
                await database_sync_to_async(ChatSession.objects.filter(pk=request.session_id).delete)()
            return
        self.turn = Turn(request).start()
        self.running = True
        self.forward_task = asyncio.create_task(self.forward(self.turn, lock))

    async def forward(self, turn: Turn, lock: TurnLock) -> None:
        try:
            async for event in turn:  # drained to the end: the turn stores its answer
                if isinstance(event, Done):
                    # free the socket and the session before the client hears "done", so
                    # that its next query (sent on "done") is never refused as busy
                    await lock.release()
                    self.running = False
                if self.closed:  # never send after the client went away
                    continue
                try:
                    await self.send_json(event.as_dict())
                except Exception:  # the socket went away under us: stop the turn quietly
                    logger.info("websocket closed while sending; cancelling the turn")
                    self.closed = True
                    turn.cancel()
        finally:
            self.running = False
            await lock.release()

    async def announce(self, session_id: int) -> bool:
        """Send the ``session`` frame of a new session; False when the socket is gone."""
        try:
            await self.send_json({"type": "session", "session": session_id})
        except Exception:  # closed under us (daphne raises on a send after close)
            self.closed = True
            return False
        return not self.closed

    @database_sync_to_async
    def prepare(self, content: dict) -> PreparedTurn:
        """:func:`chat.turn_setup.prepare_turn` for this socket's user, checked again
        (:func:`current_user`); a session created for an anonymous visitor is saved in
        their Django session at once (no response will carry it).
        :raises SignedOut: the user signed out or was deactivated since connecting.
        :raises BadRequest: as prepare_turn."""
        django_session = self.scope.get("session")
        user = current_user(self.scope)
        if not may_chat(user):
            raise SignedOut
        prepared = prepare_turn(user, django_session, content)
        if prepared.created and not user.is_authenticated and django_session is not None:
            django_session.save()
        return prepared

    async def disconnect(self, code):
        self.closed = True
        _open.discard(self)
        if self.turn is not None and not self.turn.finished:
            self.turn.cancel()  # the partial answer is stored as "interrupted"
        if self.forward_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self.forward_task), CANCEL_WAIT)
            except asyncio.TimeoutError:
                logger.warning("turn of a closed websocket still running after %.0f s", CANCEL_WAIT)
