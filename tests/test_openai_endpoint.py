"""The OpenAI-compatible endpoint driven by the official ``openai`` client (sync and
streaming) against a live daphne: models per user, answers with their [n] markers, the
Sources list and the references field, errors in the protocol's shape (401, 404, 400,
429), history from the request, and a client that goes away mid-stream."""

from __future__ import annotations

import os
import time

import httpx
import openai
import pytest
import redis

from chat import tokens
from chat.turn_lock import TooManyTurns, UserTurns

from .chat_world import SECRET_TEXT, in_thread, world  # noqa: F401
from .fake_ollama import FakeOllama, Reply
from .live_daphne import LiveDaphne
from .test_pipeline_ollama import scores

pytestmark = pytest.mark.django_db
ZORBLAX = "How long does the Zorblax protein take to fold?"
SOURCES = "\n\nSources:\n- [1] Zorblax folding notes (zorblax.md — Notes > Folding)"
TIMEOUT = 60


def client(server: LiveDaphne, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=token, max_retries=0, timeout=TIMEOUT)


def token_of(user, name="test") -> str:
    return in_thread(tokens.create_token, user, name)[1]


def ws_models(api: openai.OpenAI) -> list[str]:
    return [m.id for m in api.models.list() if m.id == "klea" or m.id.startswith("klea/ws")]


def test_models_answers_and_access(world, tmp_path):
    alice, bob = token_of(world.alice), token_of(world.bob)
    with LiveDaphne(tmp_path / "daphne.log") as server:
        a, b = client(server, alice), client(server, bob)
        assert ws_models(a) == ["klea", "klea/wsarrays", "klea/wsneuro", "klea/wssecret"]
        assert ws_models(b) == ["klea", "klea/wsarrays", "klea/wsneuro"]
        assert a.models.retrieve("klea/wssecret").model_dump(exclude_unset=True) == {
            "id": "klea/wssecret", "object": "model", "created": 0, "owned_by": "klea"}

        # a domain bob may not query is a missing model to him: same 404 as a missing one
        for model in ("klea/wssecret", "klea/nowhere"):
            with pytest.raises(openai.NotFoundError) as caught:
                b.chat.completions.create(model=model, messages=[{"role": "user", "content": ZORBLAX}])
            assert caught.value.body == {"message": f"The model {model!r} does not exist or you do not have "
                                         "access to it.", "type": "invalid_request_error", "param": "model",
                                         "code": "model_not_found"}
            with pytest.raises(openai.NotFoundError):
                b.models.retrieve(model)
        # ... and the classifier never routes him there: no chunk of it reaches him
        answer = b.chat.completions.create(model="klea", messages=[{"role": "user", "content": ZORBLAX}])
        assert "Zorblax protein folds" not in answer.choices[0].message.content
        assert all(ref["domain"] != "wssecret" for ref in answer.model_extra["references"])
        # no domain fits: the hint names the models to ask (there is nothing to tick)
        off = b.chat.completions.create(model="klea", messages=[
            {"role": "user", "content": "What is the capital of Australia?"}]).choices[0].message.content
        assert off.startswith("This question does not match any of the available domains (")
        assert off.endswith('). Ask the model "klea/<domain>" to ask one directly.')

        # non-streaming: the answer, its [n] markers, the Sources list, the references field
        messages = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": ZORBLAX}]
        done = a.chat.completions.create(model="klea/wssecret", messages=messages, temperature=0.2, max_tokens=50)
        content = done.choices[0].message.content
        assert content.endswith(SOURCES) and "[1]" in content[: -len(SOURCES)]
        assert SECRET_TEXT[:40] in content
        assert (done.object, done.model, done.choices[0].finish_reason) == ("chat.completion", "klea/wssecret", "stop")
        [reference] = done.model_extra["references"]
        assert (reference["number"], reference["domain"], reference["file_name"], reference["title"]) == (
            1, "wssecret", "zorblax.md", "Zorblax folding notes")

        # streaming: the same text in chunks, the last one with finish_reason and references
        chunks = list(a.chat.completions.create(model="klea/wssecret", messages=messages, stream=True))
        assert chunks[0].choices[0].delta.role == "assistant"
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == content
        assert {c.id for c in chunks} == {chunks[0].id} and chunks[0].object == "chat.completion.chunk"
        assert [c.choices[0].finish_reason for c in chunks].count("stop") == 1
        assert chunks[-1].choices[0].finish_reason == "stop"
        assert chunks[-1].model_extra["references"] == done.model_extra["references"]
        assert done.model_extra["warnings"] == chunks[-1].model_extra["warnings"] == []

        # the raw stream ends with data: [DONE]
        with httpx.stream("POST", f"{server.url}/v1/chat/completions", timeout=TIMEOUT,
                          headers={"Authorization": f"Bearer {alice}"},
                          json={"model": "klea/wssecret", "messages": messages, "stream": True}) as raw:
            assert raw.headers["content-type"] == "text/event-stream"
            lines = [line for line in raw.iter_lines() if line]
        assert lines[-1] == "data: [DONE]" and all(line.startswith("data: {") for line in lines[:-1])
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


def test_errors_have_the_protocols_shape(world, tmp_path):
    row, token = in_thread(tokens.create_token, world.bob, "revoked soon")
    with LiveDaphne(tmp_path / "daphne.log") as server:
        api = client(server, token)
        with pytest.raises(openai.BadRequestError) as caught:
            api.chat.completions.create(model="klea", messages=[{"role": "assistant", "content": "Hello"}])
        assert caught.value.body == {"message": "the last message must be the user's, with text",
                                     "type": "invalid_request_error", "param": None, "code": "bad_request"}
        with pytest.raises(openai.BadRequestError) as caught:  # zero-width spaces show nothing
            api.chat.completions.create(model="klea", messages=[{"role": "user", "content": "\u200b \u200b\ufeff"}])
        assert caught.value.body["message"] == "the last message must be the user's, with text"
        with pytest.raises(openai.BadRequestError, match="must be an object with a"):
            api.chat.completions.create(model="klea", messages=["hi"])
        response = httpx.post(f"{server.url}/v1/chat/completions", content=b"{nope",
                              headers={"Authorization": f"Bearer {token}"})
        assert (response.status_code, response.json()["error"]["code"]) == (400, "bad_json")
        deep = b'{"model": "klea", "messages": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
        response = httpx.post(f"{server.url}/v1/chat/completions", content=deep,
                              headers={"Authorization": f"Bearer {token}"})
        assert (response.status_code, response.json()["error"]["code"], response.json()["error"]["message"]) == (
            400, "bad_json", "not valid JSON: nested too deeply")
        assert httpx.get(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {token}"}
                         ).status_code == 405
        response = httpx.get(f"{server.url}/v1/models")  # no token: nobody (KLEA_CHAT_PUBLIC is off)
        assert (response.status_code, response.json()["error"]["code"]) == (401, "not_authenticated")
        in_thread(tokens.revoke, row)  # takes effect on the next request
        with pytest.raises(openai.AuthenticationError) as caught:
            api.chat.completions.create(model="klea", messages=[{"role": "user", "content": ZORBLAX}])
        assert caught.value.body == {"message": "the API token is unknown, revoked, or its user is inactive",
                                     "type": "invalid_request_error", "param": None, "code": "invalid_token"}


def test_history_busy_and_a_client_going_away(world, tmp_path):
    token = token_of(world.bob)
    log = tmp_path / "daphne.log"
    with FakeOllama() as fake:
        env = {"KLEA_LLM_BACKEND": "ollama", "OLLAMA_HOST": fake.url, "KLEA_MAX_TURNS_PER_USER": "1"}
        with LiveDaphne(log, **env) as server:
            api = client(server, token)
            history = [{"role": "user", "content": "Which neuron model is cheap?"},
                       {"role": "assistant", "content": "The Izhikevich model [1]."},
                       {"role": "user", "content": [{"type": "text", "text": "And how many parameters"},
                                                    {"type": "text", "text": "does it have?"}]}]
            fake.script(Reply.json({"queries": ["Izhikevich model parameters"], "filters": {}}),
                        Reply.hang(pieces=["It has four"]))
            stream = api.chat.completions.create(model="klea/wsneuro", messages=history, stream=True)
            pieces = iter(stream)
            assert next(pieces).choices[0].delta.role == "assistant"
            assert next(pieces).choices[0].delta.content == "It has four"
            # the earlier messages were the conversation; the last one the question
            first = fake.bodies()[0]["messages"][-1]["content"]
            assert "user: Which neuron model is cheap?\nassistant: The Izhikevich model [1]." in first
            assert "And how many parameters\ndoes it have?" in first
            # one turn of this user is running (KLEA_MAX_TURNS_PER_USER 1): a second one is refused
            with pytest.raises(openai.RateLimitError) as caught:
                api.chat.completions.create(model="klea/wsneuro", messages=history)
            assert caught.value.body == {"message": str(TooManyTurns(1)), "type": "rate_limit_error", "param": None,
                                         "code": "too_many_turns"}
            assert caught.value.response.headers["Retry-After"] == "5"
            stream.close()  # the client goes away: the turn stops, the model stream is closed
            assert fake.disconnected.wait(10), "the model stream was not closed"
            # ... and the user's slot is free again
            fake.script(Reply.json({"queries": ["Izhikevich"], "filters": {}}), Reply.text("Four [1]."), scores())
            deadline = time.monotonic() + 10
            while True:
                try:
                    done = api.chat.completions.create(model="klea/wsneuro", messages=history)
                    break
                except openai.RateLimitError:
                    assert time.monotonic() < deadline, "the slot was never released"
                    time.sleep(0.2)
            assert done.choices[0].message.content.startswith("Four [1].\n\nSources:\n- [1] ")
            # a model server that fails: 502 with the pipeline's code, or one error event in a stream
            missing = f"model 'qwen3:0.6b' is not on the Ollama server at {fake.url}; run `ollama pull qwen3:0.6b`"
            fake.script(Reply.not_found("qwen3:0.6b"))
            with pytest.raises(openai.InternalServerError) as caught:
                api.chat.completions.create(model="klea/wsneuro", messages=history)
            assert caught.value.status_code == 502
            assert caught.value.body == {"message": missing, "type": "server_error", "param": None,
                                         "code": "model_not_found"}
            fake.script(Reply.not_found("qwen3:0.6b"))
            with pytest.raises(openai.APIError, match="is not on the Ollama server"):
                list(api.chat.completions.create(model="klea/wsneuro", messages=history, stream=True))
    assert "Traceback" not in log.read_text()
    assert fake.unexpected == []


@pytest.mark.asyncio
@pytest.mark.parametrize("redis_url", ["", os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")])
async def test_user_turns_are_counted_per_user_in_redis_or_in_process(settings, redis_url):
    settings.REDIS_URL = redis_url
    settings.KLEA_MAX_TURNS_PER_USER = 2
    key = f"test-{os.getpid()}"
    if redis_url:  # starts of an earlier run count for a minute (KLEA_TURNS_PER_MINUTE)
        redis.Redis.from_url(redis_url).delete(f"klea:user-starts:{key}", f"klea:user-starts:{key}-other")
    first, second, third, other = UserTurns(key), UserTurns(key), UserTurns(key), UserTurns(f"{key}-other")
    await first.acquire()
    await second.acquire()
    with pytest.raises(TooManyTurns, match=r"^you already have 2 questions being answered; wait for one to finish"):
        await third.acquire()
    await other.acquire()
    if redis_url:  # one member per running turn, expiring with the last one started
        client = redis.Redis.from_url(redis_url)
        assert client.zcard(f"klea:user-turns:{key}") == 2 and 0 < client.ttl(f"klea:user-turns:{key}") <= 900
    await first.release()
    await first.release()  # idempotent: frees one slot only
    await third.acquire()
    with pytest.raises(TooManyTurns):
        await UserTurns(key).acquire()
    for slot in (second, third, other):
        await slot.release()
    if redis_url:
        assert [client.zcard(f"klea:user-turns:{k}") for k in (key, f"{key}-other")] == [0, 0]
