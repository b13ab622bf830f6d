"""Sign-in and per-domain access on the websocket: anonymous sockets, a domain restricted
to a group, another user's session. Nothing of a domain a user may not query (its name,
its chunks, its place among the classifier's options) ever reaches that user."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import connections
from django.test import Client

from chat import tokens, turn_lock
from chat.models import ApiToken, ChatSession
from domains.access import queryable_domains
from klea_site.asgi import application

from .chat_world import SECRET_TEXT, in_thread, session_cookie, world, ws_headers  # noqa: F401
from .test_ws_chat import TIMEOUT, bad, connect, until

pytestmark = pytest.mark.django_db
ZORBLAX = "How long does the Zorblax protein take to fold?"


@pytest_asyncio.fixture(autouse=True)
async def close_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture(autouse=True)
def extractive(settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    settings.KLEA_RAG_GUARD_MODEL = ""


def names(user) -> set[str]:
    return set(in_thread(lambda: list(queryable_domains(user).values_list("name", flat=True))))


def test_queryable_domains(world, settings):
    from django.contrib.auth.models import AnonymousUser

    test_domains = {"wsneuro", "wsarrays", "wssecret"}
    assert names(world.alice) & test_domains == test_domains
    assert names(world.bob) & test_domains == {"wsneuro", "wsarrays"}
    assert names(AnonymousUser()) == set()
    settings.KLEA_CHAT_PUBLIC = True
    assert names(AnonymousUser()) & test_domains == {"wsneuro", "wsarrays"}


@pytest.mark.asyncio
async def test_an_anonymous_socket_is_closed_with_a_clear_error(world):
    ws = WebsocketCommunicator(application, "/ws/chat/", headers=ws_headers())
    assert (await ws.connect(timeout=TIMEOUT))[0]
    assert await ws.receive_json_from(timeout=TIMEOUT) == {
        "type": "error", "code": "not_authenticated", "message": "sign in to chat", "node": "", "fatal": True}
    assert await ws.receive_output(timeout=TIMEOUT) == {"type": "websocket.close", "code": 4401}


@pytest.mark.asyncio
async def test_a_foreign_origin_is_refused(world):
    ws = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"origin", b"http://evil.example")])
    assert await ws.connect(timeout=TIMEOUT) == (False, 1000)


@pytest.mark.asyncio
async def test_public_chat_lets_anonymous_visitors_ask_open_domains_only(world, settings):
    settings.KLEA_CHAT_PUBLIC = True
    ws = await connect()
    await ws.send_json_to({"type": "query", "session": None, "text": ZORBLAX, "domains": ["wssecret"]})
    assert await ws.receive_json_from(timeout=TIMEOUT) == bad(
        "unknown_domain", "no domain named 'wssecret' is available to you")
    await ws.send_json_to({"type": "query", "session": None, "text": "What does the Hodgkin-Huxley model describe?",
                           "domains": ["wsneuro"]})
    frames = await until(ws, "done")
    session_id = frames[0]["session"]
    assert frames[-1]["status"] == "complete"
    owner = await sync_to_async(lambda: ChatSession.objects.get(pk=session_id).owner_id)()
    assert owner is None
    # another anonymous visitor cannot continue that session
    other = await connect()
    await other.send_json_to({"type": "query", "session": session_id, "text": "More?"})
    assert await other.receive_json_from(timeout=TIMEOUT) == bad("not_found", f"no session {session_id}")
    await other.disconnect()
    await ws.disconnect()


@pytest.mark.asyncio
async def test_a_restricted_domain_is_invisible_to_non_members(world):
    bob = await connect(world.bob)
    # asking for it by name: the same answer as for a domain that does not exist
    for name in ("wssecret", "no-such-domain"):
        await bob.send_json_to({"type": "query", "session": None, "text": ZORBLAX, "domains": ["wsneuro", name]})
        assert await bob.receive_json_from(timeout=TIMEOUT) == bad(
            "unknown_domain", f"no domain named {name!r} is available to you")
    # asking without a pick: the classifier never sees it, nothing of it comes back
    await bob.send_json_to({"type": "query", "session": None, "text": ZORBLAX})
    frames = await until(bob, "done")
    text = json.dumps(frames)
    assert "wssecret" not in text and "seven minutes" not in text and "zorblax.md" not in text
    answer = next(f for f in frames if f["type"] == "answer")
    assert "wssecret" not in answer["domains"]
    classify = next(f for f in frames if f["type"] == "stage" and f["node"] == "classify" and f["phase"] == "end")
    assert "wssecret" not in classify["detail"]
    await bob.disconnect()

    alice = await connect(world.alice)
    await alice.send_json_to({"type": "query", "session": None, "text": ZORBLAX, "domains": ["wssecret"]})
    frames = await until(alice, "done")
    references = next(f for f in frames if f["type"] == "references")["references"]
    assert [(r["domain"], r["file_name"]) for r in references] == [("wssecret", "zorblax.md")]
    assert references[0]["chunks"][0]["text"] == SECRET_TEXT
    alice_session = frames[0]["session"]
    await alice.disconnect()

    # bob cannot read or continue alice's session
    bob = await connect(world.bob)
    await bob.send_json_to({"type": "query", "session": alice_session, "text": "And then?"})
    assert await bob.receive_json_from(timeout=TIMEOUT) == bad("not_found", f"no session {alice_session}")
    await bob.send_json_to({"type": "query", "session": 999_999_999, "text": "And then?"})
    assert await bob.receive_json_from(timeout=TIMEOUT) == bad("not_found", "no session 999999999")
    await bob.disconnect()


SIGNED_OUT = {"type": "error", "code": "not_authenticated", "message": "signed out; sign in again to chat",
              "node": "", "fatal": True}


def owner_less_sessions() -> int:
    return in_thread(lambda: ChatSession.objects.filter(owner__isnull=True).count())


def logout(cookie: str) -> int:
    def post():
        client = Client()
        client.cookies["sessionid"] = cookie
        return client.post("/accounts/logout/").status_code

    return in_thread(post)


@pytest.mark.asyncio
async def test_a_query_sent_after_the_4401_close_creates_nothing(world, settings):
    settings.REDIS_URL = ""  # the in-process turn locks, which this test can see
    before = owner_less_sessions()
    ws = WebsocketCommunicator(application, "/ws/chat/", headers=ws_headers())
    assert (await ws.connect(timeout=TIMEOUT))[0]
    await ws.send_json_to({"type": "query", "session": None, "text": ZORBLAX})
    assert (await ws.receive_json_from(timeout=TIMEOUT))["code"] == "not_authenticated"
    assert await ws.receive_output(timeout=TIMEOUT) == {"type": "websocket.close", "code": 4401}
    assert await ws.receive_nothing(timeout=1)
    assert (owner_less_sessions(), turn_lock._local) == (before, set())


@pytest.mark.asyncio
async def test_signing_out_closes_the_open_socket_of_that_session(world):
    cookie = await sync_to_async(session_cookie)(world.bob)
    ws = WebsocketCommunicator(application, "/ws/chat/", headers=ws_headers(cookie))
    assert (await ws.connect(timeout=TIMEOUT))[0]
    other = await connect(world.bob)  # bob's other browser: another session, stays open
    assert logout(cookie) == 302
    assert await ws.receive_json_from(timeout=TIMEOUT) == SIGNED_OUT
    assert await ws.receive_output(timeout=TIMEOUT) == {"type": "websocket.close", "code": 4401}
    await other.send_json_to({"type": "cancel"})
    assert await other.receive_json_from(timeout=TIMEOUT) == bad("idle", "no turn is running", "cancel")
    await other.disconnect()


@pytest.mark.asyncio
async def test_sign_in_is_checked_again_on_every_query_frame(world):
    cookie = await sync_to_async(session_cookie)(world.bob)
    signed_out = WebsocketCommunicator(application, "/ws/chat/", headers=ws_headers(cookie))
    assert (await signed_out.connect(timeout=TIMEOUT))[0]
    # the session row goes away as another server process's sign-out would remove it
    in_thread(lambda: Session.objects.filter(session_key=cookie).delete())
    deactivated = await connect(world.alice)
    in_thread(lambda: User.objects.filter(pk=world.alice.pk).update(is_active=False))
    sessions_before = in_thread(lambda: ChatSession.objects.count())
    for ws in (signed_out, deactivated):
        await ws.send_json_to({"type": "query", "session": None, "text": ZORBLAX})
        assert await ws.receive_json_from(timeout=TIMEOUT) == SIGNED_OUT
        assert await ws.receive_output(timeout=TIMEOUT) == {"type": "websocket.close", "code": 4401}
    assert in_thread(lambda: ChatSession.objects.count()) == sessions_before


@pytest.mark.asyncio
async def test_a_token_revoked_while_its_socket_is_open_asks_no_more(world):
    row, token = in_thread(tokens.create_token, world.bob, "socket")
    headers = ws_headers() + [(b"authorization", f"Bearer {token}".encode())]
    ws = WebsocketCommunicator(application, "/ws/chat/", headers=headers)
    assert (await ws.connect(timeout=TIMEOUT))[0]
    in_thread(tokens.revoke, row)
    await ws.send_json_to({"type": "query", "session": None, "text": ZORBLAX})
    assert await ws.receive_json_from(timeout=TIMEOUT) == SIGNED_OUT
    assert await ws.receive_output(timeout=TIMEOUT) == {"type": "websocket.close", "code": 4401}
    in_thread(lambda: ApiToken.objects.filter(pk=row.pk).delete())
