"""Personal API tokens: stored hashed and shown once, Bearer on the JSON API and the
websocket (acting as the user, same domain groups, no CSRF), revocation on the next
request, last use recorded; the tokens page, the admin and ``manage.py apitoken``."""

from __future__ import annotations

import hashlib
import json
import re
from io import StringIO

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connections
from django.test import Client

from chat import tokens
from chat.models import ApiToken

from .chat_world import in_thread, world, ws_headers  # noqa: F401
from .test_api import setup  # noqa: F401  (fixture: alice in group lab may query neuro; bob may not)

pytestmark = pytest.mark.django_db
INVALID = {"error": {"code": "invalid_token", "type": "invalid_request_error", "param": None,
                     "message": "the API token is unknown, revoked, or its user is inactive"}}
TOKEN = re.compile(r"^klea_[A-Za-z0-9_-]{43}$")


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def domain_names(response) -> list[str]:
    return [d["name"] for d in response.json()["domains"]]


def test_a_token_is_stored_as_its_digest_only(setup):
    row, token = tokens.create_token(setup["alice"], "  open  webui ")
    assert TOKEN.match(token)
    row.refresh_from_db()
    assert (row.name, row.prefix, row.digest) == ("open webui", token[:12], hashlib.sha256(token.encode()).hexdigest())
    assert not ApiToken.objects.filter(digest=token).exists() and token not in str(ApiToken.objects.values().get())
    with pytest.raises(ValueError, match="a token needs a name"):
        tokens.create_token(setup["alice"], " \n")


def test_a_token_acts_as_its_user_with_the_same_domain_groups(setup):
    _, alice = tokens.create_token(setup["alice"], "script")
    _, bob = tokens.create_token(setup["bob"], "script")
    client = Client()  # no session: the token alone
    assert domain_names(client.get("/api/domains", **bearer(alice))) == ["arrays", "empty", "neuro"]
    assert domain_names(client.get("/api/domains", **bearer(bob))) == ["arrays", "empty"]
    # a POST needs no CSRF token with a Bearer header (browsers never add one by themselves)
    csrf_client = Client(enforce_csrf_checks=True)
    body = json.dumps({"text": "Which neuron model is cheap?", "domains": ["neuro"]})
    response = csrf_client.post("/api/query", body, content_type="application/json", **bearer(bob))
    assert (response.status_code, response.json()["error"]["code"]) == (400, "unknown_domain")
    response = csrf_client.post("/api/sessions", "{}", content_type="application/json", **bearer(alice))
    assert response.status_code == 201
    # the same POST with the session cookie alone still needs the CSRF token
    csrf_client.force_login(setup["alice"])
    response = csrf_client.post("/api/sessions", "{}", content_type="application/json")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "csrf_failed")


def test_last_use_is_recorded(setup):
    row, token = tokens.create_token(setup["alice"], "script")
    assert row.last_used_at is None
    Client().get("/api/domains", **bearer(token))
    row.refresh_from_db()
    first = row.last_used_at
    assert first is not None
    Client().get("/api/sessions", **bearer(token))
    row.refresh_from_db()
    assert row.last_used_at > first


def test_a_bad_token_gets_401_even_with_a_signed_in_session_or_public_chat(setup, settings):
    row, token = tokens.create_token(setup["alice"], "script")
    client = Client()
    client.force_login(setup["alice"])
    assert client.get("/api/domains", **bearer(token)).status_code == 200
    tokens.revoke(row)  # takes effect on the next request
    settings.KLEA_CHAT_PUBLIC = True
    for header in (f"Bearer {token}", f"bearer {token}", "Bearer ", "Bearer klea_nope"):
        response = client.get("/api/domains", HTTP_AUTHORIZATION=header)
        assert (response.status_code, response.json()) == (401, INVALID), header
        assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert tokens.revoke(row) is False
    _, other = tokens.create_token(setup["bob"], "script")
    User.objects.filter(pk=setup["bob"].pk).update(is_active=False)
    assert Client().get("/api/domains", **bearer(other)).status_code == 401
    # another scheme is not a token: the request is simply not signed in
    settings.KLEA_CHAT_PUBLIC = False
    assert Client().get("/api/domains", HTTP_AUTHORIZATION="Basic YTpi").status_code == 401


def test_the_tokens_page_creates_shows_once_and_revokes(setup):
    client = Client()
    assert client.get("/tokens/").status_code == 302  # sign in first
    client.force_login(setup["bob"])
    created = client.post("/tokens/", {"action": "create", "name": "editor"})
    assert (created.status_code, created["Location"]) == (302, "/tokens/")  # a reload makes no second token
    page = client.get("/tokens/")
    token = re.search(r'value="(klea_[^"]+)"', page.content.decode()).group(1)
    assert page["Cache-Control"] == "no-store"
    row = ApiToken.objects.get(user=setup["bob"])
    assert (row.name, row.digest) == ("editor", tokens.digest(token))
    listing = client.get("/tokens/").content.decode()
    assert token not in listing and f"{token[:12]}…" in listing and "never" in listing
    assert "a token needs a name" in client.post("/tokens/", {"action": "create", "name": " "}).content.decode()
    # hostile form values: a NUL in the name (was a database error, 500), an id past bigint
    refused = client.post("/tokens/", {"action": "create", "name": "ed\x00itor"})
    assert (refused.status_code, "a token name cannot contain a NUL character" in refused.content.decode()) == (
        200, True)
    assert "no such token" in client.post("/tokens/", {"action": "revoke", "token": "9" * 30}).content.decode()
    assert ApiToken.objects.filter(user=setup["bob"]).count() == 1
    # another user's token cannot be revoked from here
    other, _ = tokens.create_token(setup["alice"], "hers")
    assert "no such token" in client.post("/tokens/", {"action": "revoke", "token": other.pk}).content.decode()
    assert client.post("/tokens/", {"action": "revoke", "token": row.pk}).status_code == 302
    row.refresh_from_db()
    other.refresh_from_db()
    assert row.revoked_at is not None and other.revoked_at is None
    assert "revoked" in client.get("/tokens/").content.decode()


def test_the_admin_adds_a_token_shown_once_and_revokes_tokens(setup):
    admin = User.objects.create_superuser("root", password="pw-root-123")
    client = Client()
    client.force_login(admin)
    response = client.post("/admin/chat/apitoken/add/", {"user": setup["bob"].pk, "name": "lab robot"}, follow=True)
    token = re.search(r"copy it now\): (klea_\S+?)<", response.content.decode()).group(1)
    row = ApiToken.objects.get(user=setup["bob"])
    assert (row.name, row.digest) == ("lab robot", tokens.digest(token))
    assert token not in client.get(f"/admin/chat/apitoken/{row.pk}/change/").content.decode()
    client.post("/admin/chat/apitoken/", {"action": "revoke_tokens", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.revoked_at is not None


def test_the_apitoken_command(setup):
    out, err = StringIO(), StringIO()
    call_command("apitoken", "create", "bob", "--name", "nightly", stdout=out, stderr=err)
    token = out.getvalue().strip()
    row = ApiToken.objects.get(user=setup["bob"])
    assert row.digest == tokens.digest(token)
    assert err.getvalue() == f"Token {row.pk} (nightly) for bob; it is shown only now:\n"
    out = StringIO()
    call_command("apitoken", "list", "bob", stdout=out)
    created = row.created_at.isoformat(timespec="seconds")
    assert out.getvalue() == f"{row.pk}\tbob\tnightly\t{token[:12]}…\tcreated {created}\tlast used never\tactive\n"
    out = StringIO()
    call_command("apitoken", "revoke", str(row.pk), stdout=out)
    assert out.getvalue() == f"Revoked token {row.pk} (nightly) of bob.\n"
    assert Client().get("/api/domains", **bearer(token)).status_code == 401
    with pytest.raises(CommandError, match=f"token {row.pk} was already revoked"):
        call_command("apitoken", "revoke", str(row.pk))
    with pytest.raises(CommandError, match="no user named 'carol'"):
        call_command("apitoken", "create", "carol", "--name", "x")
    with pytest.raises(CommandError, match="no token with id 999999"):
        call_command("apitoken", "revoke", "999999")


@pytest.mark.asyncio
async def test_a_websocket_opened_with_a_token_is_its_user(world):
    from klea_site.asgi import application

    row, token = in_thread(tokens.create_token, world.bob, "socket")
    headers = ws_headers() + [(b"authorization", f"Bearer {token}".encode())]
    ws = WebsocketCommunicator(application, "/ws/chat/", headers=headers)
    assert (await ws.connect(timeout=30))[0]
    await ws.send_json_to({"type": "query", "session": None, "text": "Zorblax?", "domains": ["wssecret"]})
    assert await ws.receive_json_from(timeout=30) == {
        "type": "error", "code": "unknown_domain", "message": "no domain named 'wssecret' is available to you",
        "node": "", "fatal": False, "refused": "query"}
    await ws.disconnect()
    in_thread(tokens.revoke, row)
    ws = WebsocketCommunicator(application, "/ws/chat/", headers=headers)
    assert await ws.connect(timeout=30) == (False, 4401)
    in_thread(lambda: ApiToken.objects.filter(pk=row.pk).delete())
    await sync_to_async(connections.close_all)()  # the consumer's thread connections


def test_a_token_gets_no_chunk_of_a_domain_its_user_may_not_query(setup):
    from domains.models import Chunk

    chunk = Chunk.objects.filter(store__domain__name="neuro").first()
    _, alice = tokens.create_token(setup["alice"], "script")
    _, bob = tokens.create_token(setup["bob"], "script")
    assert Client().get(f"/api/chunks/{chunk.pk}/source", **bearer(alice)).json()["chunk_id"] == chunk.pk
    refused = Client().get(f"/api/chunks/{chunk.pk}/source", **bearer(bob))
    missing = Client().get("/api/chunks/999999999/source", **bearer(bob))
    assert (refused.status_code, refused.json()) == (404, {"error": {
        "code": "not_found", "message": f"no chunk {chunk.pk}"}})
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
