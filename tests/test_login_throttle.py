"""Failed sign-ins are throttled per user name and address (chat/login_throttle.py) on
the site's and the admin's sign-in forms, with the counts in the process's cache or in
Redis (docs/security.md)."""

from __future__ import annotations

import os
import re

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.test import Client

from chat import login_throttle

pytestmark = pytest.mark.django_db
PASSWORD = "pw-carol-123"
THROTTLED = ("Too many failed sign-ins for this user name from your address. Try again in 15 minutes, "
             "or ask an administrator to reset your password.")


def use_cache(settings, kind: str) -> None:
    """The limits as shipped, the counts in a fresh cache: the process's memory, or Redis.
    Passwords hashed fast (MD5): these tests sign in dozens of times; the throttle is the
    same whatever the hasher."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    if kind == "redis":
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                       "LOCATION": os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")}}
    else:
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                       "LOCATION": "test-login-throttle"}}
    caches["default"].clear()
    assert (settings.KLEA_LOGIN_FAILURES, settings.KLEA_LOGIN_LOCKOUT_SECONDS) == (5, 900)


@pytest.fixture
def throttle(settings):
    use_cache(settings, "memory")
    yield
    caches["default"].clear()


def sign_in(path: str, username: str, password: str, address: str = "192.0.2.10"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password, "next": "/"})


def page_error(response) -> str:
    found = re.search(rb'<p class="error[^"]*"[^>]*>(.*?)</p>', response.content, re.S)
    return found[1].decode().strip() if found else ""


@pytest.mark.parametrize("path, kind", [("/accounts/login/", "memory"), ("/admin/login/", "memory"),
                                        ("/accounts/login/", "redis")])
def test_five_failures_lock_the_user_name_from_that_address(settings, path, kind):
    use_cache(settings, kind)
    User.objects.create_user("carol", password=PASSWORD, is_staff=True)
    for _ in range(5):
        refused = sign_in(path, "carol", "wrong")
        assert refused.status_code == 200 and THROTTLED.encode() not in refused.content
    locked = sign_in(path, "carol", PASSWORD)  # the right password no longer helps
    assert locked.status_code == 200 and "_auth_user_id" not in locked.client.session
    if path == "/accounts/login/":
        assert page_error(locked) == THROTTLED
    else:  # the admin shows the form's error as it is
        assert f'<p class="errornote">\n    {THROTTLED}\n</p>'.encode() in locked.content
    # another address, and another user name from the locked address, still sign in
    assert sign_in(path, "carol", PASSWORD, address="192.0.2.99").status_code == 302
    User.objects.create_user("dave", password=PASSWORD, is_staff=True)
    assert sign_in(path, "dave", PASSWORD).status_code == 302
    caches["default"].clear()


def test_a_success_clears_the_count_and_zero_turns_the_throttle_off(throttle, settings):
    User.objects.create_user("carol", password=PASSWORD)
    for _ in range(4):
        sign_in("/accounts/login/", "carol", "wrong")
    assert sign_in("/accounts/login/", "carol", PASSWORD).status_code == 302
    for _ in range(4):  # counted from zero again: four more failures do not lock
        sign_in("/accounts/login/", "carol", "wrong")
    assert sign_in("/accounts/login/", "carol", PASSWORD).status_code == 302
    settings.KLEA_LOGIN_FAILURES = 0
    for _ in range(6):
        sign_in("/accounts/login/", "carol", "wrong")
    assert sign_in("/accounts/login/", "carol", PASSWORD).status_code == 302


def test_the_wait_is_told_in_whole_minutes(throttle, settings):
    settings.KLEA_LOGIN_LOCKOUT_SECONDS = 61
    for _ in range(5):
        sign_in("/accounts/login/", "nobody", "wrong")  # an unknown user name counts the same
    assert page_error(sign_in("/accounts/login/", "nobody", "wrong")) == THROTTLED.replace("15 minutes", "2 minutes")
    request = Client(REMOTE_ADDR="192.0.2.10").get("/").wsgi_request
    assert 60 < login_throttle.locked_for("nobody", request) <= 61
