"""The chat websocket through the real ASGI stack (origin check, sessions, auth): a full
extractive turn, cancel, disconnect, busy, frame errors. Access control is in
test_ws_access.py."""

from __future__ import annotations

import json
import logging
import time

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections

from chat.models import ChatMessage, ChatSession
from klea_site.asgi import application

from .chat_world import session_cookie, world, ws_headers  # noqa: F401

pytestmark = pytest.mark.django_db
from .fake_ollama import Reply, ollama_backend

TIMEOUT = 60  # seconds; generous for a loaded machine (the first turn loads the embedding model)
IZH = "Which neuron model is as cheap to simulate as integrate-and-fire?"
STAGES = ["memory", "guard", "classify", "route", "pick_tools", "generate_queries", "retrieve", "join_tools",
          "answer", "evaluate", "remember", "respond", "summarise"]


@pytest_asyncio.fixture(autouse=True)
async def close_thread_connections():
    """The pipeline's ORM calls run in asgiref's worker thread: close its connection."""
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
def extractive(settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    settings.KLEA_RAG_GUARD_MODEL = ""


@pytest.fixture
def fake(settings):
    """A fake Ollama whose answer stalls after two pieces (something to cancel)."""
    with ollama_backend(settings, check=False, KLEA_RAG_CHAT_MODEL=settings.KLEA_RAG_CHAT_MODEL,
                        KLEA_RAG_GUARD_MODEL="", KLEA_LLM_TIMEOUT=30) as server:
        server.script(Reply.json({"queries": ["cheap neuron model"], "filters": {}}),
                      Reply.hang(pieces=["The Izhikevich model", " is cheap"]))
        yield server


async def connect(user=None) -> WebsocketCommunicator:
    cookie = await sync_to_async(session_cookie)(user) if user else None
    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=ws_headers(cookie))
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    return communicator


async def until(communicator, kind: str) -> list[dict]:
    """Frames up to and including the first of type ``kind``."""
    frames = []
    while not frames or frames[-1]["type"] != kind:
        frames.append(await communicator.receive_json_from(timeout=TIMEOUT))
    return frames


def starts(frames) -> list[str]:
    return [f["node"] for f in frames if f["type"] == "stage" and f["phase"] == "start"]


@sync_to_async
def stored(session_id: int) -> list[tuple]:
    return list(ChatMessage.objects.filter(session_id=session_id).order_by("id")
                .values_list("role", "status", "content"))


@pytest.mark.asyncio
async def test_a_full_extractive_turn_then_a_second_in_the_same_session(world, extractive):
    ws = await connect(world.bob)
    await ws.send_json_to({"type": "query", "session": None, "text": IZH, "domains": ["wsneuro"]})
    frames = await until(ws, "done")
    session_id = frames[0]["session"]
    assert frames[0] == {"type": "session", "session": session_id}
    assert starts(frames) == STAGES
    types = [f["type"] for f in frames]
    assert types.count("done") == 1 and types.count("answer") == 1 and "error" not in types
    # respond starts, sends references and the answer, ends; summarise; done
    assert types[-7:] == ["stage", "references", "answer", "stage", "stage", "stage", "done"]
    assert [(f["node"], f["phase"]) for f in frames[-7:] if f["type"] == "stage"] == [
        ("respond", "start"), ("respond", "end"), ("summarise", "start"), ("summarise", "end")]
    tokens = [f for f in frames if f["type"] == "token"]
    answer = next(f for f in frames if f["type"] == "answer")
    references = next(f for f in frames if f["type"] == "references")["references"]
    assert "".join(t["text"] for t in tokens) == answer["text"]
    assert types.index("token") < types.index("references") < types.index("answer")
    assert (answer["route"], answer["domains"], answer["session_id"]) == ("domains", ["wsneuro"], session_id)
    assert answer["citations"] == list(range(1, len(references) + 1))
    assert {r["domain"] for r in references} == {"wsneuro"}
    assert "izhikevich.md" in [r["file_name"] for r in references]
    assert frames[-1]["status"] == "complete" and frames[-1]["ttft_ms"] > 0
    assert await stored(session_id) == [("user", "complete", IZH), ("assistant", "complete", answer["text"])]
    owner = await sync_to_async(lambda: ChatSession.objects.get(pk=session_id).owner_id)()
    assert owner == world.bob.pk

    await ws.send_json_to({"type": "query", "session": session_id, "text": "And the Hodgkin-Huxley model?",
                           "domains": ["wsneuro"]})
    second = await until(ws, "done")
    assert second[0]["type"] == "stage" and starts(second) == STAGES
    assert second[-1]["status"] == "complete"
    assert [m[0] for m in await stored(session_id)] == ["user", "assistant", "user", "assistant"]
    await ws.disconnect()


@pytest.mark.asyncio
async def test_cancel_ends_the_turn_within_two_seconds(world, fake):
    ws = await connect(world.bob)
    await ws.send_json_to({"type": "query", "session": None, "text": IZH, "domains": ["wsneuro"]})
    frames = await until(ws, "token")
    session_id = frames[0]["session"]
    started = time.monotonic()
    await ws.send_json_to({"type": "cancel"})
    rest = await until(ws, "done")
    assert time.monotonic() - started < 2.0
    assert [(f["type"], f.get("code"), f.get("fatal"), f.get("status")) for f in rest if f["type"] != "token"] == [
        ("error", "interrupted", True, None), ("done", None, None, "interrupted")]
    assert fake.disconnected.wait(5), "the model stream was not closed"
    assert (await stored(session_id))[-1] == ("assistant", "interrupted", "The Izhikevich model is cheap")
    await ws.send_json_to({"type": "cancel"})
    assert await ws.receive_json_from(timeout=TIMEOUT) == {
        "type": "error", "code": "idle", "message": "no turn is running", "node": "", "fatal": False,
        "refused": "cancel"}
    await ws.disconnect()


@pytest.mark.asyncio
async def test_disconnect_mid_answer_stores_the_partial_answer_as_interrupted(world, fake, caplog):
    caplog.set_level(logging.WARNING)
    ws = await connect(world.bob)
    await ws.send_json_to({"type": "query", "session": None, "text": IZH, "domains": ["wsneuro"]})
    frames = await until(ws, "token")
    session_id = frames[0]["session"]
    await ws.disconnect(timeout=10)  # the consumer waits for the cancelled turn to store its answer
    assert fake.disconnected.wait(5), "the model stream was not closed"
    messages = await stored(session_id)
    assert messages[-1][:2] == ("assistant", "interrupted")
    assert messages[-1][2] in ("The Izhikevich model", "The Izhikevich model is cheap")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.asyncio
async def test_a_second_query_while_one_runs_is_busy(world, fake):
    ws = await connect(world.bob)
    await ws.send_json_to({"type": "query", "session": None, "text": IZH, "domains": ["wsneuro"]})
    frames = await until(ws, "token")
    session_id = frames[0]["session"]
    await ws.send_json_to({"type": "query", "session": session_id, "text": "Another one?"})
    busy = bad("busy", "a turn is running; wait for done or cancel it")
    rest = await until(ws, "error")
    assert rest[-1] == busy
    # another socket (another tab) on the same session is refused too
    other = await connect(world.bob)
    await other.send_json_to({"type": "query", "session": session_id, "text": "And from here?"})
    assert await other.receive_json_from(timeout=TIMEOUT) == {
        **busy, "message": "this session is answering another question"}
    await ws.send_json_to({"type": "cancel"})
    assert (await until(ws, "done"))[-1]["status"] == "interrupted"
    await other.disconnect()
    await ws.disconnect()


def bad(code: str, message: str, refused: str = "query") -> dict:
    """A protocol error answering a frame of kind ``refused`` (docs/api.md)."""
    return {"type": "error", "code": code, "message": message, "node": "", "fatal": False, "refused": refused}


@pytest.mark.asyncio
async def test_malformed_frames_get_typed_errors_and_the_socket_stays_open(world, settings):
    settings.KLEA_WS_MAX_FRAME_BYTES = 1000
    ws = await connect(world.bob)
    cases = [
        ("{not json", bad("bad_json", "not valid JSON (expecting property name enclosed in double quotes at "
                                      "line 1, column 2)", "frame")),
        ("[1, 2]", bad("bad_request", 'a frame is a JSON object with a "type"', "frame")),
        ('{"text": "no type"}', bad("bad_request", 'a frame is a JSON object with a "type"', "frame")),
        ('{"type": "dance"}', bad("unknown_type", "unknown frame type 'dance'", "frame")),
        ('{"type": "query", "text": 5}', bad("bad_request", '"text" must be a non-empty string')),
        ('{"type": "query", "text": "  "}', bad("bad_request", '"text" must be a non-empty string')),
        ('{"type": "query", "text": "\\u200b\\ufeff\\u200e"}', bad("bad_request", '"text" must be a non-empty string')),
        ('{"type": "query", "text": "hi", "session": "7"}',
         bad("bad_request", '"session" must be a session id (integer) or null')),
        ('{"type": "query", "text": "hi", "domains": "wsneuro"}',
         bad("bad_request", '"domains" must be a list of domain names')),
        ('{"type": "query", "text": "hi", "filters": [1]}',
         bad("bad_request", '"filters" must be an object (the filter DSL)')),
        (json.dumps({"type": "query", "text": "x" * 1000}),
         bad("too_large", "frame of 1029 bytes; the limit is 1000 bytes", "frame")),
    ]
    for frame, expected in cases:
        await ws.send_to(text_data=frame)
        assert await ws.receive_json_from(timeout=TIMEOUT) == expected, frame
    await ws.send_to(bytes_data=b"\x00\x01")
    assert await ws.receive_json_from(timeout=TIMEOUT) == bad("bad_json", "send JSON in text frames", "frame")
    await ws.send_json_to({"type": "cancel"})  # still usable
    assert await ws.receive_json_from(timeout=TIMEOUT) == bad("idle", "no turn is running", "cancel")
    await ws.disconnect()


@pytest.mark.asyncio
async def test_the_default_limit_is_64_kib(world):
    ws = await connect(world.bob)
    # 40,046 characters, 80,046 bytes in UTF-8: the limit counts bytes
    await ws.send_to(text_data=json.dumps({"type": "query", "session": None, "text": "é" * 40_000},
                                          ensure_ascii=False))
    assert await ws.receive_json_from(timeout=TIMEOUT) == bad(
        "too_large", "frame of 80046 bytes; the limit is 65536 bytes", "frame")
    await ws.disconnect()


@pytest.mark.asyncio
async def test_deep_json_nul_and_lone_surrogates_get_typed_errors(world):
    ws = await connect(world.bob)
    surrogate = bad("bad_request", '"text" contains a NUL character or a lone surrogate')
    cases = [
        ("[" * 30000 + "]" * 30000, bad("bad_json", "not valid JSON: nested too deeply", "frame")),
        ('{"type": "query", "text": "hi", "filters": {"year": ' + "[" * 30000 + "]" * 30000 + "}}",
         bad("bad_json", "not valid JSON: nested too deeply", "frame")),
        ('{"type": "query", "text": "hi", "session": ' + "1" * 5000 + "}",
         bad("bad_json", "not valid JSON: a number of more than 4300 digits", "frame")),  # was "not UTF-8 text"
        ('{"type": "query", "text": "hello\\u0000world"}', surrogate),
        ('{"type": "query", "text": "hi \\ud800 there"}', surrogate),
        ('{"type": "query", "text": "hi", "filters": {"authors": "Sinha\\u0000"}}',
         bad("bad_request", '"filters" contains a NUL character or a lone surrogate')),
    ]
    for frame, expected in cases:
        await ws.send_to(text_data=frame)
        assert await ws.receive_json_from(timeout=TIMEOUT) == expected, frame[:60]
    await ws.send_json_to({"type": "cancel"})  # still open and usable
    assert await ws.receive_json_from(timeout=TIMEOUT) == bad("idle", "no turn is running", "cancel")
    await ws.disconnect()


@pytest.mark.asyncio
async def test_a_turn_cancelled_at_once_keeps_the_question(world, fake):
    ws = await connect(world.bob)
    await ws.send_json_to({"type": "query", "session": None, "text": IZH, "domains": ["wsneuro"]})
    await ws.send_json_to({"type": "cancel"})
    frames = await until(ws, "done")
    session_id = frames[0]["session"]
    assert [(f["type"], f.get("code"), f.get("status")) for f in frames if f["type"] in ("error", "done")] == [
        ("error", "interrupted", None), ("done", None, "interrupted")]
    assert await stored(session_id) == [("user", "complete", IZH), ("assistant", "interrupted", "")]
    # closing the socket right after the first event keeps the question too
    await ws.send_json_to({"type": "query", "session": session_id, "text": "And the cost?", "domains": ["wsneuro"]})
    assert (await ws.receive_json_from(timeout=TIMEOUT))["type"] == "stage"
    await ws.disconnect(timeout=10)
    assert (await stored(session_id))[2:] == [("user", "complete", "And the cost?"), ("assistant", "interrupted", "")]
