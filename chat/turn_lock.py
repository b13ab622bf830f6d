"""One turn at a time per chat session, and a bounded number of turns at once per user
across every transport (chat socket, HTTP API, OpenAI-compatible endpoint, MCP server),
session and server process (docs/security.md).

With REDIS_URL set the session lock is a Redis key (``SET NX`` with an expiry, so a
crashed process cannot hold a session forever) and a user's running turns are members
of a Redis sorted set scored by their start time (members older than LOCK_SECONDS, the
turns of a crashed process, stop counting); without REDIS_URL both live in this
process (the in-memory channel layer means one server process anyway).
"""

from __future__ import annotations

import logging
import time
import uuid

from django.conf import settings
from redis.exceptions import RedisError

# A turn longer than this (seconds) loses its lock; far above any real turn.
LOCK_SECONDS = 900
# Seconds to wait for Redis; generous, as a busy event loop delays reading the reply.
REDIS_TIMEOUT = 10.0
logger = logging.getLogger("klea.chat")
_local: set[int] = set()
_KEY = "klea:turn:{}"


class LockUnavailable(Exception):
    """Redis, which holds the locks, did not answer."""


class TooManyTurns(Exception):
    """The user already runs KLEA_MAX_TURNS_PER_USER turns (code ``too_many_turns``)."""

    code = "too_many_turns"

    def __init__(self, limit: int):
        super().__init__(f"you already have {limit} questions being answered; wait for one to finish "
                         f"(KLEA_MAX_TURNS_PER_USER)")


class TurnLock:
    """``await lock.acquire()`` -> bool (False: the session is busy); ``await lock.release()``.

    With an ``owner`` (:func:`chat.turn_setup.turn_owner`) the turn also takes one of
    the owner's KLEA_MAX_TURNS_PER_USER slots (:class:`UserTurns`), shared with the
    owner's turns on every other transport.

    Usage::

        lock = TurnLock(session_id, owner)
        if not await lock.acquire():
            ...  # busy
        try: ... finally: await lock.release()
    """

    def __init__(self, session_id: int, owner: str | None = None):
        self.session_id = session_id
        self.token = uuid.uuid4().hex
        self._held = False
        self.slot = UserTurns(owner, settings.KLEA_MAX_TURNS_PER_USER) if owner is not None else None

    async def acquire(self) -> bool:
        """:returns: False when the session is busy.
        :raises TooManyTurns: the owner already runs KLEA_MAX_TURNS_PER_USER turns (the
            session lock is given back).
        :raises LockUnavailable: Redis did not answer."""
        if not await self._acquire_session():
            return False
        if self.slot is not None:
            try:
                taken = await self.slot.acquire()
            except BaseException:
                await self.release()
                raise
            if not taken:
                await self.release()
                raise TooManyTurns(self.slot.limit)
        return True

    async def _acquire_session(self) -> bool:
        if settings.REDIS_URL:
            client = _client()
            try:
                self._held = bool(await client.set(_KEY.format(self.session_id), self.token, nx=True,
                                                   ex=LOCK_SECONDS))
            except RedisError as exc:
                raise LockUnavailable(f"the session lock store (Redis) did not answer: {exc}") from None
            finally:
                await client.aclose()
        elif self.session_id not in _local:
            _local.add(self.session_id)
            self._held = True
        return self._held

    async def release(self) -> None:
        """Idempotent; removes the Redis key only while it is still ours."""
        if self.slot is not None:
            await self.slot.release()
        if not self._held:
            return
        self._held = False
        if settings.REDIS_URL:
            client = _client()
            try:
                await client.eval(_RELEASE, 1, _KEY.format(self.session_id), self.token)
            except RedisError:  # the key expires after LOCK_SECONDS anyway
                logger.warning("could not release the turn lock of session %s", self.session_id, exc_info=True)
            finally:
                await client.aclose()
        else:
            _local.discard(self.session_id)


# Delete the key only if it still holds our token (it may have expired and been retaken).
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def _client():
    import redis.asyncio as aioredis

    return aioredis.Redis.from_url(settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT,
                                    socket_connect_timeout=REDIS_TIMEOUT)


class UserTurns:
    """At most ``limit`` turns running at once per user key (``"user:<id>"``, an
    anonymous visitor's ``"anon:<session key>"``), counted together across transports
    (``limit`` defaults to KLEA_MAX_TURNS_PER_USER): the chat takes a slot through
    :class:`TurnLock`, the OpenAI-compatible endpoint and the MCP server directly (their
    turns have no chat session to lock). Each turn is a member of a Redis sorted
    set scored by its start time with REDIS_URL (members older than LOCK_SECONDS stop
    counting, so a crashed process cannot hold slots), else of a set in this process.

    Usage::

        slot = UserTurns(user_key)
        if not await slot.acquire():
            ...  # too many turns (429)
        try: ... finally: await slot.release()
    """

    def __init__(self, user_key: str, limit: int | None = None):
        self.key = f"klea:user-turns:{user_key}"
        self.limit = settings.KLEA_MAX_TURNS_PER_USER if limit is None else limit
        self.token = uuid.uuid4().hex
        self._held = False

    async def acquire(self) -> bool:
        """:raises LockUnavailable: Redis did not answer."""
        if settings.REDIS_URL:
            client = _client()
            try:
                self._held = bool(await client.eval(_TAKE_SLOT, 1, self.key, self.token, time.time(),
                                                    LOCK_SECONDS, self.limit))
            except RedisError as exc:
                raise LockUnavailable(f"the turn counter store (Redis) did not answer: {exc}") from None
            finally:
                await client.aclose()
        else:
            running = _user_turns.setdefault(self.key, set())
            self._held = len(running) < self.limit
            if self._held:
                running.add(self.token)
        return self._held

    async def release(self) -> None:
        """Idempotent."""
        if not self._held:
            return
        self._held = False
        if settings.REDIS_URL:
            client = _client()
            try:
                await client.zrem(self.key, self.token)
            except RedisError:  # the member stops counting after LOCK_SECONDS anyway
                logger.warning("could not release a turn slot of %s", self.key, exc_info=True)
            finally:
                await client.aclose()
        else:
            running = _user_turns.get(self.key, set())
            running.discard(self.token)
            if not running:
                _user_turns.pop(self.key, None)


_user_turns: dict[str, set[str]] = {}
# Drop members older than LOCK_SECONDS (turns of a crashed process), then add ours if
# fewer than the limit run. ARGV: token, now (s), LOCK_SECONDS, limit.
_TAKE_SLOT = """
redis.call('zremrangebyscore', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
redis.call('expire', KEYS[1], ARGV[3])
return 1
"""
