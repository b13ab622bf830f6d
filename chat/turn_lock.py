"""One turn at a time per chat session, and at most KLEA_API_CONCURRENT_TURNS turns at
once per user of the OpenAI-compatible endpoint and the MCP server, across every server
process.

With REDIS_URL set the lock is a Redis key (``SET NX`` with an expiry, so a crashed
process cannot hold a session forever); without it, a set in this process (the
in-memory channel layer means one server process anyway).
"""

from __future__ import annotations

import logging
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


class TurnLock:
    """``await lock.acquire()`` -> bool (False: the session is busy); ``await lock.release()``.

    Usage::

        lock = TurnLock(session_id)
        if not await lock.acquire():
            ...  # busy
        try: ... finally: await lock.release()
    """

    def __init__(self, session_id: int):
        self.session_id = session_id
        self.token = uuid.uuid4().hex
        self._held = False

    async def acquire(self) -> bool:
        """:raises LockUnavailable: Redis did not answer."""
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
    """At most ``limit`` turns running at once per user through the OpenAI-compatible
    endpoint and the MCP server (KLEA_API_CONCURRENT_TURNS; their turns have no chat
    session to lock). A Redis counter with REDIS_URL (it expires LOCK_SECONDS after the
    last turn started, so a crashed process cannot hold slots forever), else a counter
    in this process.

    Usage::

        slot = UserTurns(user_key)
        if not await slot.acquire():
            ...  # busy (429)
        try: ... finally: await slot.release()
    """

    def __init__(self, user_key: str, limit: int | None = None):
        self.key = f"klea:user-turns:{user_key}"
        self.limit = settings.KLEA_API_CONCURRENT_TURNS if limit is None else limit
        self._held = False

    async def acquire(self) -> bool:
        """:raises LockUnavailable: Redis did not answer."""
        if settings.REDIS_URL:
            client = _client()
            try:
                count = await client.incr(self.key)
                await client.expire(self.key, LOCK_SECONDS)
                if count > self.limit:
                    await client.decr(self.key)
                    return False
            except RedisError as exc:
                raise LockUnavailable(f"the turn counter store (Redis) did not answer: {exc}") from None
            finally:
                await client.aclose()
        else:
            if _user_turns.get(self.key, 0) >= self.limit:
                return False
            _user_turns[self.key] = _user_turns.get(self.key, 0) + 1
        self._held = True
        return True

    async def release(self) -> None:
        """Idempotent."""
        if not self._held:
            return
        self._held = False
        if settings.REDIS_URL:
            client = _client()
            try:
                await client.eval(_DECREMENT, 1, self.key)
            except RedisError:  # the counter expires after LOCK_SECONDS anyway
                logger.warning("could not release a turn slot of %s", self.key, exc_info=True)
            finally:
                await client.aclose()
        else:
            _user_turns[self.key] -= 1


_user_turns: dict[str, int] = {}
# Never below zero (the key may have expired and been recreated meanwhile).
_DECREMENT = "local n = redis.call('decr', KEYS[1]) if n < 0 then redis.call('set', KEYS[1], 0) end return n"
