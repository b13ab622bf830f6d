"""One turn at a time per chat session, and per user a bounded number of turns at once
and of turns started per minute, across every transport (chat socket, HTTP API,
OpenAI-compatible endpoint, MCP server), session and server process (docs/security.md).

With REDIS_URL set the session lock is a Redis key (``SET NX`` with an expiry, so a
crashed process cannot hold a session forever), a user's running turns are members
of a Redis sorted set scored by their start time (members older than LOCK_SECONDS, the
turns of a crashed process, stop counting) and the turns they started in the last
minute members of another; without REDIS_URL all three live in this process (the
in-memory channel layer means one server process anyway).
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import deque

from django.conf import settings
from redis.exceptions import RedisError

# A turn longer than this (seconds) loses its lock; far above any real turn.
LOCK_SECONDS = 900
# The window of KLEA_TURNS_PER_MINUTE (seconds).
RATE_WINDOW = 60
# Seconds to wait for Redis; generous, as a busy event loop delays reading the reply.
REDIS_TIMEOUT = 10.0
logger = logging.getLogger("klea.chat")
_local: set[int] = set()
_KEY = "klea:turn:{}"


class LockUnavailable(Exception):
    """Redis, which holds the locks, did not answer."""


class TurnLimit(Exception):
    """A per-user limit refused the turn (HTTP 429): ``code``, the message, and
    ``retry_after``, seconds after which asking again may succeed (``Retry-After``)."""

    code = ""
    retry_after = 1


class TooManyTurns(TurnLimit):
    """The user already runs KLEA_MAX_TURNS_PER_USER turns (code ``too_many_turns``)."""

    code = "too_many_turns"
    # A guess: a turn on the extractive backend takes a few seconds.
    retry_after = 5

    def __init__(self, limit: int):
        super().__init__(f"you already have {limit} questions being answered; wait for one to finish "
                         f"(KLEA_MAX_TURNS_PER_USER)")


class TooManyTurnsPerMinute(TurnLimit):
    """The user started KLEA_TURNS_PER_MINUTE turns in the last minute (code
    ``rate_limited``); ``retry_after`` is when the oldest of them leaves the window."""

    code = "rate_limited"

    def __init__(self, limit: int, retry_after: int):
        super().__init__(f"you asked {limit} questions in the last minute; ask again in {retry_after} s "
                         f"(KLEA_TURNS_PER_MINUTE)")
        self.retry_after = retry_after


class TurnLock:
    """``await lock.acquire()`` -> bool (False: the session is busy); ``await lock.release()``.

    With an ``owner`` (:func:`chat.turn_setup.turn_owner`) the turn also takes one of
    the owner's KLEA_MAX_TURNS_PER_USER slots and counts among their
    KLEA_TURNS_PER_MINUTE (:class:`UserTurns`), shared with the owner's turns on every
    other transport.

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
        self.slot = UserTurns(owner) if owner is not None else None

    async def acquire(self) -> bool:
        """:returns: False when the session is busy.
        :raises TooManyTurns: the owner already runs KLEA_MAX_TURNS_PER_USER turns;
        :raises TooManyTurnsPerMinute: the owner started KLEA_TURNS_PER_MINUTE turns in the
            last minute (either way the session lock is given back);
        :raises LockUnavailable: Redis did not answer."""
        if not await self._acquire_session():
            return False
        if self.slot is not None:
            try:
                await self.slot.acquire()
            except BaseException:
                await self.release()
                raise
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
    """Per user key (``"user:<id>"``, an anonymous visitor's ``"anon:<session key>"``),
    counted together across transports: at most ``limit`` turns running at once
    (default KLEA_MAX_TURNS_PER_USER) and at most ``per_minute`` started in the last
    RATE_WINDOW seconds (default KLEA_TURNS_PER_MINUTE; 0: no such limit). The chat
    takes a slot through :class:`TurnLock`, the OpenAI-compatible endpoint and the MCP
    server directly (their turns have no chat session to lock). With REDIS_URL each
    running turn is a member of a Redis sorted set scored by its start time (members
    older than LOCK_SECONDS stop counting, so a crashed process cannot hold slots) and
    each start one of another (members older than RATE_WINDOW are dropped), both checked
    and added in one script; else both live in this process. A refused turn does not
    count among the starts.

    Usage::

        slot = UserTurns(user_key)
        await slot.acquire()  # raises TooManyTurns / TooManyTurnsPerMinute (429)
        try: ... finally: await slot.release()
    """

    def __init__(self, user_key: str, limit: int | None = None, per_minute: int | None = None):
        self.key = f"klea:user-turns:{user_key}"
        self.starts_key = f"klea:user-starts:{user_key}"
        self.limit = settings.KLEA_MAX_TURNS_PER_USER if limit is None else limit
        self.per_minute = settings.KLEA_TURNS_PER_MINUTE if per_minute is None else per_minute
        self.token = uuid.uuid4().hex
        self._held = False

    async def acquire(self) -> None:
        """Take a slot and count the start.

        :raises TooManyTurnsPerMinute: ``per_minute`` turns started in the last minute
            (checked first: waiting for a running turn would not help);
        :raises TooManyTurns: ``limit`` turns are running;
        :raises LockUnavailable: Redis did not answer."""
        now = time.time()
        if settings.REDIS_URL:
            client = _client()
            try:
                taken, oldest = await client.eval(_TAKE_SLOT, 2, self.key, self.starts_key, self.token, now,
                                                  LOCK_SECONDS, self.limit, self.per_minute, RATE_WINDOW)
            except RedisError as exc:
                raise LockUnavailable(f"the turn counter store (Redis) did not answer: {exc}") from None
            finally:
                await client.aclose()
            oldest = float(oldest)
        else:
            taken, oldest = self._take_local(now)
        if taken == _RATE:
            raise TooManyTurnsPerMinute(self.per_minute, max(1, math.ceil(oldest + RATE_WINDOW - now)))
        if taken == _BUSY:
            raise TooManyTurns(self.limit)
        self._held = True

    def _take_local(self, now: float) -> tuple[int, float]:
        """:returns: (_RATE with the oldest start | _BUSY | _TAKEN, 0.0), as _TAKE_SLOT."""
        starts = _user_starts.pop(self.starts_key, deque())
        while starts and starts[0] <= now - RATE_WINDOW:
            starts.popleft()
        try:
            if self.per_minute > 0 and len(starts) >= self.per_minute:
                return _RATE, starts[0]
            running = _user_turns.setdefault(self.key, set())
            if len(running) >= self.limit:
                return _BUSY, 0.0
            running.add(self.token)
            if self.per_minute > 0:
                starts.append(now)
            return _TAKEN, 0.0
        finally:
            if starts:  # an empty log is not kept
                _user_starts[self.starts_key] = starts

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
_user_starts: dict[str, deque[float]] = {}
# _TAKE_SLOT's answers: refused by the rate, refused as too many at once, taken.
_RATE, _BUSY, _TAKEN = -1, 0, 1
# KEYS: running turns, starts. ARGV: token, now (s), LOCK_SECONDS, limit, per minute,
# RATE_WINDOW. Drop starts older than the window and, with a per-minute limit, refuse
# when it is reached (answering the oldest start, as a string: Lua numbers reach the
# client as integers); drop running members older than LOCK_SECONDS (turns of a crashed
# process) and refuse when the limit runs; else add the turn to both sets.
_TAKE_SLOT = """
local now = tonumber(ARGV[2])
local window = tonumber(ARGV[6])
local per_minute = tonumber(ARGV[5])
redis.call('zremrangebyscore', KEYS[2], '-inf', now - window)
if per_minute > 0 and redis.call('zcard', KEYS[2]) >= per_minute then
  return {-1, redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')[2]}
end
redis.call('zremrangebyscore', KEYS[1], '-inf', now - tonumber(ARGV[3]))
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[4]) then return {0, '0'} end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
redis.call('expire', KEYS[1], ARGV[3])
if per_minute > 0 then
  redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
  redis.call('expire', KEYS[2], window)
end
return {1, '0'}
"""
