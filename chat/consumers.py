"""The chat websocket (``/ws/chat/``): query and cancel frames in, pipeline events out.

Protocol (docs/api.md): the client sends ``{"type": "query", "session": id | null,
"text": str, "domains"?: [str], "filters"?: {...}}`` or ``{"type": "cancel"}``; the
server sends ``{"type": "session", "session": id}`` when it created the session, then
the turn's events (``stage``, ``token``, ``tool``, ``references``, ``answer``,
``error``, ``done``) exactly as ``Event.as_dict()`` gives them. Protocol errors are
``error`` events too (``fatal`` false, the socket stays open; fields are checked by
chat/parsing.py): ``bad_json``,
``bad_request``, ``unknown_type``, ``too_large``, ``busy``, ``not_found``,
``unknown_domain``, ``idle``, ``unavailable`` (Redis, which holds the session locks,
did not answer). An anonymous socket without KLEA_CHAT_PUBLIC gets one
``not_authenticated`` error and is closed with code 4401.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import aclose_old_connections, database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from domains.access import may_chat

from .parsing import BadRequest, decode_json
from .pipeline import Done, Error, Turn
from .turn_lock import LockUnavailable, TurnLock
from .turn_setup import PreparedTurn, prepare_turn

logger = logging.getLogger("klea.chat")
CLOSE_NOT_AUTHENTICATED = 4401
# Seconds a disconnect waits for the cancelled turn to store its partial answer.
CANCEL_WAIT = 5.0


def error(code: str, message: str) -> dict:
    return Error(code=code, message=message).as_dict()


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

    async def connect(self):
        await self.accept()
        if not may_chat(self.scope.get("user")):
            await self.send_json({**error("not_authenticated", "sign in to chat"), "fatal": True})
            await self.close(code=CLOSE_NOT_AUTHENTICATED)

    async def receive(self, text_data=None, bytes_data=None):
        limit = settings.KLEA_WS_MAX_FRAME_BYTES
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > limit:
            return await self.send_json(error("too_large", f"frame of {size} bytes; the limit is {limit} bytes"))
        if text_data is None:
            return await self.send_json(error("bad_json", "send JSON in text frames"))
        try:
            content = decode_json(text_data)
        except BadRequest as exc:
            return await self.send_json(error(exc.code, exc.message))
        await self.receive_json(content)

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict) or not isinstance(content.get("type"), str):
            return await self.send_json(error("bad_request", 'a frame is a JSON object with a "type"'))
        handler = {"query": self.on_query, "cancel": self.on_cancel}.get(content["type"])
        if handler is None:
            return await self.send_json(error("unknown_type", f"unknown frame type {content['type']!r}"))
        await handler(content)

    async def on_cancel(self, content):
        if not self.running or self.turn is None:
            return await self.send_json(error("idle", "no turn is running"))
        self.turn.cancel()  # the turn ends with error "interrupted" and done "interrupted"

    async def on_query(self, content):
        if self.running:
            return await self.send_json(error("busy", "a turn is running; wait for done or cancel it"))
        try:
            await aclose_old_connections()
            prepared = await self.prepare(content)
        except BadRequest as exc:
            return await self.send_json(error(exc.code, exc.message))
        request = prepared.request
        lock = TurnLock(request.session_id)
        try:
            acquired = await lock.acquire()
        except LockUnavailable as exc:
            return await self.send_json(error("unavailable", str(exc)))
        if not acquired:
            return await self.send_json(error("busy", "this session is answering another question"))
        if prepared.created:
            await self.send_json({"type": "session", "session": request.session_id})
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

    @database_sync_to_async
    def prepare(self, content: dict) -> PreparedTurn:
        """:func:`chat.turn_setup.prepare_turn` for this socket's user; a session created
        for an anonymous visitor is saved in their Django session at once (no response
        will carry it). :raises BadRequest: as prepare_turn."""
        django_session = self.scope.get("session")
        user = self.scope["user"]
        prepared = prepare_turn(user, django_session, content)
        if prepared.created and not user.is_authenticated and django_session is not None:
            django_session.save()
        return prepared

    async def disconnect(self, code):
        self.closed = True
        if self.turn is not None and not self.turn.finished:
            self.turn.cancel()  # the partial answer is stored as "interrupted"
        if self.forward_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self.forward_task), CANCEL_WAIT)
            except asyncio.TimeoutError:
                logger.warning("turn of a closed websocket still running after %.0f s", CANCEL_WAIT)
