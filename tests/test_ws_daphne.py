"""Real daphne processes: frames above daphne's default 1 MiB cap get the chat's own
``too_large`` error (the socket stays open; only frames above the cap ``make run`` sets
make daphne drop the socket); two daphne processes on one Redis serve one site (a
session busy on one is busy on the other); a browser closed mid-answer leaves an
interrupted answer and a clean log; /health is 503 without a database."""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request

import pytest
import redis
import websockets

from chat.models import ChatMessage

from .chat_world import in_thread, session_cookie, world  # noqa: F401
from .fake_ollama import FakeOllama, Reply, closed_port_url
from .live_daphne import READY_LOG, LiveDaphne

pytestmark = pytest.mark.django_db
REDIS_URL = os.environ.get("KLEA_TEST_WS_REDIS_URL", "redis://127.0.0.1:6379/7")
TIMEOUT = 60


def ws_url(server: LiveDaphne) -> str:
    return server.url.replace("http://", "ws://") + "/ws/chat/"


def open_socket(server: LiveDaphne, cookie: str):
    return websockets.connect(ws_url(server), origin=server.url, additional_headers={"Cookie": f"sessionid={cookie}"},
                              max_size=None, open_timeout=TIMEOUT)


async def receive(socket) -> dict:
    return json.loads(await asyncio.wait_for(socket.recv(), TIMEOUT))


async def until(socket, kind: str) -> list[dict]:
    frames = [await receive(socket)]
    while frames[-1]["type"] != kind:
        frames.append(await receive(socket))
    return frames


@pytest.mark.asyncio
async def test_a_2_mib_frame_gets_too_large_and_the_socket_stays_open(world, tmp_path):
    cookie = session_cookie(world.bob)
    with LiveDaphne(tmp_path / "daphne.log", KLEA_WARM_START="false") as server:  # no question is answered
        async with open_socket(server, cookie) as socket:
            await socket.send(json.dumps({"type": "query", "session": None, "text": "x" * (2 * 1024 * 1024)}))
            assert await receive(socket) == {"type": "error", "code": "too_large", "node": "", "fatal": False,
                                             "message": "frame of 2097198 bytes; the limit is 65536 bytes",
                                             "refused": "frame"}
            await socket.send(json.dumps({"type": "cancel"}))
            assert (await receive(socket))["code"] == "idle"
        # above daphne's cap (8 MiB, as make run sets it) daphne drops the connection
        with pytest.raises(websockets.ConnectionClosed):
            async with open_socket(server, cookie) as socket:
                await socket.send("x" * (9 * 1024 * 1024))
                await receive(socket)
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


@pytest.mark.asyncio
async def test_two_daphne_processes_on_redis_share_the_session_locks(world, tmp_path):
    client = redis.Redis.from_url(REDIS_URL)
    client.ping()  # a missing Redis is an error, never a skip
    client.flushdb()
    cookie = session_cookie(world.bob)
    with FakeOllama() as fake:
        fake.script(Reply.json({"queries": ["cheap neuron model"], "filters": {}}),
                    Reply.hang(pieces=["The Izhikevich model"]))
        env = {"REDIS_URL": REDIS_URL, "KLEA_LLM_BACKEND": "ollama", "OLLAMA_HOST": fake.url}
        with LiveDaphne(tmp_path / "a.log", **env) as first, LiveDaphne(tmp_path / "b.log", **env) as second:
            async with open_socket(first, cookie) as a, open_socket(second, cookie) as b:
                await a.send(json.dumps({"type": "query", "session": None, "text": "Which model is cheap?",
                                         "domains": ["wsneuro"]}))
                frames = await until(a, "token")
                session = frames[0]["session"]
                assert client.exists(f"klea:turn:{session}") == 1
                await b.send(json.dumps({"type": "query", "session": session, "text": "And here?"}))
                assert await receive(b) == {"type": "error", "code": "busy", "node": "", "fatal": False,
                                            "message": "this session is answering another question",
                                            "refused": "query"}
                await a.send(json.dumps({"type": "cancel"}))
                assert (await until(a, "done"))[-1]["status"] == "interrupted"
                assert client.exists(f"klea:turn:{session}") == 0
    client.flushdb()
    for log in ("a.log", "b.log"):
        assert "Traceback" not in (tmp_path / log).read_text()


def last_assistant(session_id: int):
    return in_thread(lambda: ChatMessage.objects.filter(session_id=session_id, role="assistant")
                     .values_list("status", "content").last())


@pytest.mark.asyncio
async def test_closing_the_browser_mid_answer_stores_it_as_interrupted_and_logs_nothing(world, tmp_path):
    cookie = session_cookie(world.bob)
    with FakeOllama() as fake:
        fake.script(Reply.json({"queries": ["cheap neuron model"], "filters": {}}),
                    Reply.hang(pieces=["The Izhikevich model"]))
        log = tmp_path / "daphne.log"
        with LiveDaphne(log, KLEA_LLM_BACKEND="ollama", OLLAMA_HOST=fake.url) as server:
            async with open_socket(server, cookie) as socket:
                await socket.send(json.dumps({"type": "query", "session": None, "text": "Which model is cheap?",
                                              "domains": ["wsneuro"]}))
                session = (await until(socket, "token"))[0]["session"]
            # the socket is closed: the turn is cancelled and its partial answer stored
            deadline = time.monotonic() + 10
            while last_assistant(session) is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert last_assistant(session) == ("interrupted", "The Izhikevich model")
            assert fake.disconnected.wait(5), "the model stream was not closed"
    text = log.read_text()
    assert "WSDISCONNECT /ws/chat/" in text
    assert [line for line in text.splitlines() if not line.startswith("127.0.0.1:")
            and not READY_LOG.search(line)] == []


def test_health_is_503_when_the_database_is_down(tmp_path):
    url = closed_port_url().replace("http://", "postgres://klea@") + "/klea"
    log = tmp_path / "daphne.log"
    with LiveDaphne(log, ready_status=503, DATABASE_URL=url, KLEA_WARM_START="false",
                    DJANGO_SECRET_KEY="change-me") as server:
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(f"{server.url}/health", timeout=10)
        body = json.loads(failed.value.read())
    assert (failed.value.code, body) == (503, {"status": "down", "ready": False})  # no driver text for strangers
    # a weak SECRET_KEY with DEBUG off: said once at startup (chat.W001)
    assert log.read_text().count(
        "WARNING klea: DJANGO_SECRET_KEY is weak (under 50 characters, under 5 distinct ones, or starting with "
        "'django-insecure-') and DEBUG is off. Set a long random value, or unset it to use a generated key "
        "(var/secret_key, docs/security.md).") == 1
