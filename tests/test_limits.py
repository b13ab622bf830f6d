"""Documented limits on the work one caller can cause (docs/security.md): question
length on HTTP and the websocket, values per filter list, turns per user at once and
per minute across sockets and sessions, and the database statement timeout of retrieval."""

from __future__ import annotations

import json
import os
import re
import time
from collections import deque

import openai
import pytest
import redis
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from chat import tokens, turn_lock
from chat.models import ChatMessage, ChatSession
from chat.turn_lock import TooManyTurns, TooManyTurnsPerMinute, TurnLock, UserTurns
from domains import embeddings
from domains.retrieval import FieldSpec, compile_filter, retrieve
from domains.retrieval.filters import MAX_FILTER_VALUES

from .chat_world import in_thread, world  # noqa: F401
from .live_daphne import LiveDaphne
from .table_lock import table_locked
from .test_mcp_server import error_text, http_session
from .test_ws_chat import TIMEOUT, bad, connect, until

pytestmark = pytest.mark.django_db
HH = "What does the Hodgkin-Huxley model describe?"
TOO_MANY = ("you already have 2 questions being answered; wait for one to finish "
            "(KLEA_MAX_TURNS_PER_USER)")


@pytest.fixture
def limits(settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    settings.KLEA_RAG_GUARD_MODEL = ""
    settings.REDIS_URL = ""
    settings.KLEA_MAX_QUESTION_CHARS = 50
    settings.KLEA_MAX_TURNS_PER_USER = 2


def api_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def ask(client, body: dict):
    response = client.post("/api/query", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def hold(owner: str, *session_ids: int) -> list[TurnLock]:
    locks = [TurnLock(session_id, owner) for session_id in session_ids]
    for lock in locks:
        assert async_to_sync(lock.acquire)()
    return locks


def release(locks: list[TurnLock]) -> None:
    for lock in locks:
        async_to_sync(lock.release)()


def test_http_questions_and_filter_lists_over_the_limits_are_too_large(limits):
    bob = api_client(User.objects.create_user("bob", password="pw-bob-123"))
    assert ask(bob, {"text": "x" * 51}) == (400, {"error": {"code": "too_large", "message": (
        '"text" has 51 characters; the limit is 50 (KLEA_MAX_QUESTION_CHARS)')}})
    many = list(range(MAX_FILTER_VALUES + 1))
    for filters in ({"year": {"$in": many}}, {"keywords": {"$contains": many}}, {"$and": [{"year": many}]}):
        assert ask(bob, {"text": "hi", "filters": filters}) == (400, {"error": {"code": "too_large", "message": (
            f'"filters" has a list of {MAX_FILTER_VALUES + 1} values; the limit is {MAX_FILTER_VALUES}')}})
    assert (ChatSession.objects.count(), ChatMessage.objects.count()) == (0, 0)


def test_the_filter_compiler_bounds_in_and_contains_lists():
    specs = [FieldSpec("year", "int"), FieldSpec("keywords", "list")]
    assert compile_filter({"year": {"$in": list(range(MAX_FILTER_VALUES))}}, specs).params["f0"] == list(
        range(MAX_FILTER_VALUES))
    for op, field in (("$in", "year"), ("$contains", "keywords")):
        with pytest.raises(ValueError, match=rf"^filter on '{field}': \{op} takes at most 100 values, got 101$"):
            compile_filter({field: {op: ["1"] * 101}}, specs)


def test_http_turns_per_user_are_limited_across_sessions(limits):
    alice = User.objects.create_user("alice", password="pw-alice-123")
    sessions = [ChatSession.objects.create(owner=alice).pk for _ in range(3)]
    running = hold(f"user:{alice.pk}", sessions[0], sessions[1])
    try:
        assert ask(api_client(alice), {"text": HH, "session": sessions[2]}) == (
            429, {"error": {"code": "too_many_turns", "message": TOO_MANY}})
        # another user is not affected by alice's turns
        assert ask(api_client(User.objects.create_user("bob", password="pw-bob-123")), {"text": HH})[0] == 200
    finally:
        release(running)
    assert turn_lock._local == set() and turn_lock._user_turns == {}
    assert ask(api_client(alice), {"text": HH, "session": sessions[2]})[0] == 200


def test_turn_slots_in_redis_count_across_processes_and_forget_crashed_turns(settings):
    settings.REDIS_URL = os.environ["TEST_REDIS_URL"]
    settings.KLEA_MAX_TURNS_PER_USER = 2
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = "klea:user-turns:user:test-slots"
    client.delete(key)
    client.zadd(key, {"crashed-turn": 1.0})  # started in 1970: a crashed process's turn
    running = hold("user:test-slots", 990_001, 990_002)
    try:
        third = TurnLock(990_003, "user:test-slots")
        with pytest.raises(TooManyTurns, match="^you already have 2 questions being answered"):
            async_to_sync(third.acquire)()
        assert client.exists("klea:turn:990003") == 0  # the session lock was given back
        assert client.zcard(key) == 2
    finally:
        release(running)
    assert client.zcard(key) == 0
    assert async_to_sync(TurnLock(990_003, "user:test-slots").acquire)()
    client.delete(key, "klea:turn:990003")


def per_minute(retry: int, limit: int = 2) -> str:
    return f"you asked {limit} questions in the last minute; ask again in {retry} s (KLEA_TURNS_PER_MINUTE)"


@pytest.mark.parametrize("redis_url", ["", os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")])
def test_turns_per_minute_count_starts_in_the_last_minute_in_redis_or_in_process(settings, redis_url):
    """Starts of 50 and 40 s ago fill a limit of 2: the next turn is refused until the
    older one is a minute old (10 s); a start 61 s ago no longer counts; a finished turn
    still counts, a refused one (too many at once) does not; 0 turns the limit off."""
    settings.REDIS_URL = redis_url
    settings.KLEA_TURNS_PER_MINUTE = 2
    settings.KLEA_MAX_TURNS_PER_USER = 1
    owner = f"user:rate-{os.getpid()}"
    key = f"klea:user-starts:{owner}"

    def started(*ages: float) -> None:  # turns that started ``ages`` seconds ago
        now = time.time()
        if redis_url:
            client.delete(key)
            client.zadd(key, {f"earlier-{age}": now - age for age in ages})
        else:
            turn_lock._user_starts[key] = deque(now - age for age in ages)

    def take() -> UserTurns:
        slot = UserTurns(owner)
        async_to_sync(slot.acquire)()
        return slot

    client = redis.Redis.from_url(redis_url) if redis_url else None
    started(50, 40)
    with pytest.raises(TooManyTurnsPerMinute) as caught:
        take()
    assert (str(caught.value), caught.value.code, caught.value.retry_after) == (per_minute(10), "rate_limited", 10)
    started(61, 30)
    running = take()
    with pytest.raises(TooManyTurnsPerMinute, match=f"^{re.escape(per_minute(30))}$"):
        take()
    async_to_sync(running.release)()  # a finished turn still counts among the starts
    with pytest.raises(TooManyTurnsPerMinute, match=f"^{re.escape(per_minute(30))}$"):
        take()
    settings.KLEA_TURNS_PER_MINUTE = 3
    started(30)
    running = take()
    with pytest.raises(TooManyTurns):  # refused: not a start, so the third may start once this ends
        take()
    async_to_sync(running.release)()
    async_to_sync(take().release)()
    with pytest.raises(TooManyTurnsPerMinute, match=f"^{re.escape(per_minute(30, limit=3))}$"):
        take()
    settings.KLEA_TURNS_PER_MINUTE = 0
    async_to_sync(take().release)()
    if redis_url:
        assert 0 < client.ttl(key) <= 60  # the starts expire with the window
        client.delete(key)
    else:
        turn_lock._user_starts.pop(key)


def test_http_turns_per_minute_are_refused_with_retry_after(limits, settings):
    settings.KLEA_TURNS_PER_MINUTE = 1
    alice = api_client(User.objects.create_user("alice", password="pw-alice-123"))
    status, body = ask(alice, {"text": HH})
    assert status == 200
    response = alice.post("/api/query", json.dumps({"text": HH, "session": body["session"]}),
                          content_type="application/json")
    retry = int(response["Retry-After"])
    assert (response.status_code, response.json()) == (429, {"error": {"code": "rate_limited", "message": (
        per_minute(retry, limit=1))}})
    assert 0 < retry <= 60
    assert ChatMessage.objects.filter(session_id=body["session"]).count() == 2  # the refused turn left no row


@pytest.mark.asyncio
async def test_the_default_turns_per_minute_refuse_the_31st_question_on_the_websocket(world, settings):
    """The setting as shipped (no override): 30 questions within a minute are answered,
    the 31st gets ``rate_limited`` with the seconds to wait, and the socket stays open."""
    settings.KLEA_LLM_BACKEND = "extractive"
    settings.KLEA_RAG_GUARD_MODEL = ""
    settings.REDIS_URL = ""
    assert settings.KLEA_TURNS_PER_MINUTE == 30
    ws = await connect(world.bob)
    started = time.time()
    session = None
    for _ in range(30):
        await ws.send_json_to({"type": "query", "session": session, "text": HH, "domains": ["wsneuro"]})
        frames = await until(ws, "done")
        session = session or frames[0]["session"]
        assert frames[-1]["status"] == "complete"
    await ws.send_json_to({"type": "query", "session": session, "text": HH, "domains": ["wsneuro"]})
    refused = await ws.receive_json_from(timeout=TIMEOUT)
    elapsed = time.time() - started
    if elapsed >= 59:  # the first start left the window already: a slow machine, not a wrong limit
        pytest.fail(f"30 turns took {elapsed:.0f} s; the test needs them within a minute")
    retry = int(re.fullmatch(r"you asked 30 questions in the last minute; ask again in (\d+) s "
                             r"\(KLEA_TURNS_PER_MINUTE\)", refused["message"])[1])
    assert refused == bad("rate_limited", per_minute(retry, limit=30))
    assert 60 - elapsed - 1 <= retry <= 60 - elapsed + 1
    await ws.send_json_to({"type": "cancel"})
    assert await ws.receive_json_from(timeout=TIMEOUT) == bad("idle", "no turn is running", "cancel")
    await ws.disconnect()


@pytest.mark.asyncio
async def test_v1_and_mcp_questions_over_the_limit_are_too_large(world, tmp_path):
    """The question length limit holds on every entry point, not only /api/query and the
    websocket: a long question on /v1 or MCP ask is refused before any retrieval."""
    token = in_thread(tokens.create_token, world.bob, "long questions")[1]
    log = tmp_path / "daphne.log"
    with LiveDaphne(log, KLEA_MAX_QUESTION_CHARS="50", KLEA_WARM_START="false") as server:
        api = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=token, max_retries=0, timeout=TIMEOUT)
        with pytest.raises(openai.BadRequestError) as caught:
            await api.chat.completions.create(model="klea", messages=[
                {"role": "assistant", "content": "Ask me."}, {"role": "user", "content": " " + "x" * 51 + " "}])
        assert caught.value.body == {"message": '"messages[1].content" has 51 characters; the limit is 50 '
                                     "(KLEA_MAX_QUESTION_CHARS)", "type": "invalid_request_error", "param": None,
                                     "code": "too_large"}
        async with http_session(server, token) as session:
            result = await session.call_tool("ask", {"question": "y" * 51})
            assert error_text(result) == (
                'too_large: "question" has 51 characters; the limit is 50 (KLEA_MAX_QUESTION_CHARS)')
    assert (await sync_to_async(ChatMessage.objects.count)(), "Traceback" in log.read_text()) == (0, False)


@pytest.mark.asyncio
async def test_websocket_limits_question_length_and_turns_per_user(world, limits):
    ws = await connect(world.bob)
    await ws.send_json_to({"type": "query", "session": None, "text": "y" * 51})
    assert await ws.receive_json_from(timeout=TIMEOUT) == bad(
        "too_large", '"text" has 51 characters; the limit is 50 (KLEA_MAX_QUESTION_CHARS)')
    running = await sync_to_async(hold)(f"user:{world.bob.pk}", 990_101, 990_102)
    try:
        await ws.send_json_to({"type": "query", "session": None, "text": HH})
        assert await ws.receive_json_from(timeout=TIMEOUT) == bad("too_many_turns", TOO_MANY)
    finally:
        await sync_to_async(release)(running)
    await ws.disconnect()


def test_a_retrieval_statement_over_the_timeout_fails_its_list(world, settings):
    """Another transaction holds the chunk table: without a statement timeout retrieval
    would wait for it (here 20 s, then succeed)."""
    settings.KLEA_RETRIEVAL_STATEMENT_TIMEOUT = 0.2
    vectors = embeddings.embed_queries([HH])  # the model loads before the table is held
    with table_locked("domains_chunk", 20):
        result = retrieve(HH, [world.domains["wsneuro"]], k=3, query_vectors=vectors)
    assert (result.retrieval_failed, result.failures, result.results) == (True, [
        "wsneuro-store:vector (domain wsneuro): statement timeout",  # BM25 reads no chunk rows
        "database: statement timeout"], [])  # the chunks' years
    with connection.cursor() as cursor:  # the caller's transaction keeps its own setting
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"
