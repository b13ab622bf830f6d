"""Failed sign-ins throttled per user name and client address (docs/security.md).

Every form that signs in with a password (the site's ``/accounts/login/``, the admin's
``/admin/login/``) calls ``django.contrib.auth.authenticate`` with the request. Each
failure (the ``user_login_failed`` signal) counts for that user name from that address;
after KLEA_LOGIN_FAILURES failures within KLEA_LOGIN_LOCKOUT_SECONDS, the pair is locked
for KLEA_LOGIN_LOCKOUT_SECONDS: :class:`LoginThrottleBackend`, first of
AUTHENTICATION_BACKENDS, refuses every attempt of the pair, the right password too, with
a form error saying when to try again, before any password is checked. A successful
sign-in clears the pair's count. Other user names, and the same name from another
address, are not affected, so nobody can lock a user out from elsewhere.

The counts live in Django's default cache: Redis when REDIS_URL is set (shared by every
server process), else the process's memory. The address is ``REMOTE_ADDR``: behind a
proxy every client has the proxy's, and the pair is then in effect the user name.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from redis.exceptions import RedisError

logger = logging.getLogger("klea.chat")

THROTTLED = ("Too many failed sign-ins for this user name from your address. Try again in {minutes}, "
             "or ask an administrator to reset your password.")


def _keys(username: str, request) -> tuple[str, str]:
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    digest = hashlib.sha256(f"{username}\0{address}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"klea:login-failures:{digest}", f"klea:login-locked:{digest}"


def _minutes(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return "1 minute" if minutes == 1 else f"{minutes} minutes"


def locked_for(username: str, request) -> float:
    """Seconds the pair stays locked (0.0: not locked, or Redis did not answer: the
    password is still checked)."""
    try:
        until = cache.get(_keys(username, request)[1])
    except RedisError:
        logger.warning("the sign-in throttle could not read Redis", exc_info=True)
        return 0.0
    return max(0.0, until - time.time()) if until else 0.0


def record_failure(username: str, request) -> None:
    """Count one failure; the KLEA_LOGIN_FAILURES-th locks the pair."""
    window = settings.KLEA_LOGIN_LOCKOUT_SECONDS
    failures, locked = _keys(username, request)
    cache.add(failures, 0, timeout=window)  # the window starts at the first failure
    try:
        count = cache.incr(failures)
    except ValueError:  # expired between add and incr
        cache.add(failures, 1, timeout=window)
        count = 1
    if count >= settings.KLEA_LOGIN_FAILURES:
        cache.set(locked, time.time() + window, timeout=window)
        cache.delete(failures)


def clear(username: str, request) -> None:
    cache.delete(_keys(username, request)[0])


class LoginThrottleBackend:
    """First of AUTHENTICATION_BACKENDS: refuses a locked pair with a form error
    (``ValidationError``, code ``throttled``, which a login form shows as its error);
    otherwise answers None, so the next backend checks the password. It has no
    ``get_user``: it never signs anyone in, so no session names it (and Django's test
    client's ``force_login`` passes it by)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or username is None or settings.KLEA_LOGIN_FAILURES <= 0:
            return None
        wait = locked_for(username, request)
        if wait:
            raise ValidationError(THROTTLED.format(minutes=_minutes(wait)), code="throttled")
        return None


def record_failed_sign_in(sender, credentials, request=None, **kwargs):
    """``user_login_failed`` receiver (connected in ``ChatConfig.ready``)."""
    username = credentials.get("username")
    if request is not None and username is not None and settings.KLEA_LOGIN_FAILURES > 0:
        try:
            record_failure(username, request)
        except RedisError:  # the sign-in form still answers; this failure goes uncounted
            logger.warning("the sign-in throttle could not count a failure in Redis", exc_info=True)


def clear_on_sign_in(sender, request, user, **kwargs):
    """``user_logged_in`` receiver (connected in ``ChatConfig.ready``)."""
    if request is not None:
        try:
            clear(user.get_username(), request)
        except RedisError:
            logger.warning("the sign-in throttle could not clear a count in Redis", exc_info=True)
