"""Model server failures and cancellation: each a single error event, never a hang,
never answer text; cancelled turns stop the stream and store the partial answer."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.management import CommandError, call_command

from chat.models import ChatMessage, ChatSession
from chat.backends import ModelNotFound
from chat.pipeline import Token, Turn, TurnFailed, TurnRequest, TurnResult, run_turn

from .fake_ollama import Reply, closed_port_url
from .pipeline_helpers import run, trace
from .test_pipeline_loops import IZH, cheap
from .test_pipeline_ollama import domains, domains_reply, fake, queries_reply, scores  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_guard(fake, settings):
    settings.KLEA_RAG_GUARD_MODEL = ""


def test_model_not_pulled_is_one_fatal_error(fake, domains):
    fake.script(Reply.not_found("qwen3:0.6b"))
    result = run(IZH, [domains["neuro"]])
    assert trace(result) == [
        "memory: no session",
        "guard: skipped (no guard model)",
        "> classify",
        f"error model_not_found (classify, fatal): model 'qwen3:0.6b' is not on the Ollama server at {fake.url}; "
        "run `ollama pull qwen3:0.6b`",
        "done failed",
    ]
    assert result.answer is None
    with pytest.raises(ModelNotFound, match=r"run `ollama pull qwen3:0.6b`$"):
        result.raise_for_error()


def test_connection_refused_is_one_fatal_error(fake, domains, settings):
    url = closed_port_url()
    settings.OLLAMA_HOST = url
    result = run(IZH, [domains["neuro"]])
    assert trace(result)[2:] == [
        "> classify",
        f"error unreachable (classify, fatal): cannot reach the Ollama server at {url} (is it running?)",
        "done failed",
    ]


def test_connection_refused_for_the_guard_declines(fake, domains, settings):
    url = closed_port_url()
    settings.OLLAMA_HOST = url
    settings.KLEA_RAG_GUARD_MODEL = "llama-guard3:1b"
    result = run(IZH, [domains["neuro"]])
    assert trace(result, tokens=False)[1:4] == [
        "> guard",
        f"error unreachable (guard): cannot reach the Ollama server at {url} (is it running?) "
        "(KLEA_RAG_GUARD_ON_ERROR=decline)",
        "< guard: failed (unreachable); policy decline",
    ]
    assert (result.answer.route, result.done.status) == ("declined", "complete")


def test_silent_server_times_out(fake, domains, settings):
    settings.KLEA_LLM_TIMEOUT = 0.5
    fake.script(Reply.hang())
    result = run(IZH, [domains["neuro"]])
    assert trace(result)[2:] == [
        "> classify",
        f"error timeout (classify, fatal): the Ollama server at {fake.url} sent nothing for 0.5 s "
        "(model 'qwen3:0.6b')",
        "done failed",
    ]


def test_stream_that_stalls_times_out_and_stores_a_failed_message(fake, domains, settings):
    settings.KLEA_LLM_TIMEOUT = 0.5
    session = ChatSession.objects.create()
    fake.script(domains_reply("neuro"), queries_reply("cheap neuron model"),
                Reply.hang(pieces=["The Izhikevich", " model"]))
    result = run(IZH, [domains["neuro"]], session_id=session.pk)
    assert trace(result)[8:] == [
        "> answer",
        "token 1: The Izhikevich",
        "token 1:  model",
        f"error timeout (answer, fatal): the Ollama server at {fake.url} sent nothing for 0.5 s (model 'qwen3:0.6b')",
        "done failed",
    ]
    messages = list(session.messages.values_list("role", "status", "content", "error"))
    assert messages == [
        ("user", "complete", IZH, ""),
        ("assistant", "failed", "", f"the Ollama server at {fake.url} sent nothing for 0.5 s (model 'qwen3:0.6b')"),
    ]


def test_server_error_is_reported_with_its_message(fake, domains):
    fake.script(domains_reply("neuro"), queries_reply("cheap neuron model"), cheap(),
                Reply.http_error(500, "out of memory"))
    result = run(IZH, [domains["neuro"]])
    assert trace(result)[-2:] == [
        "error server_error (evaluate, fatal): Ollama server error for model 'qwen3:0.6b': out of memory",
        "done failed",
    ]


def _start_answer(fake):
    fake.script(domains_reply("neuro"), queries_reply("cheap neuron model"),
                Reply.hang(pieces=["The Izhikevich model", " is cheap"]))


def test_cancel_stops_the_stream_and_stores_the_partial_answer(fake, domains):
    _start_answer(fake)
    session = ChatSession.objects.create()

    async def scenario() -> TurnResult:
        turn = Turn(TurnRequest(IZH, domains=[domains["neuro"]], session_id=session.pk)).start()
        result = TurnResult()
        async for event in turn:
            result.events.append(event)
            if sum(isinstance(e, Token) for e in result.events) == 2:
                turn.cancel()
        return result

    result = async_to_sync(scenario)()
    assert trace(result)[8:] == [
        "> answer",
        "token 1: The Izhikevich model",
        "token 1:  is cheap",
        "error interrupted (answer, fatal): the turn was cancelled",
        "done interrupted",
    ]
    assert fake.disconnected.wait(10), "the model stream was not closed"
    with pytest.raises(TurnFailed, match=r"^interrupted: the turn was cancelled$"):
        result.raise_for_error()
    assistant = session.messages.get(role=ChatMessage.Role.ASSISTANT)
    assert (assistant.status, assistant.content, assistant.route, assistant.domains) == (
        "interrupted", "The Izhikevich model is cheap", "domains", ["neuro"],
    )


def test_closing_the_event_stream_cancels_the_turn(fake, domains):
    _start_answer(fake)
    session = ChatSession.objects.create()

    async def scenario() -> list[str]:
        seen = []
        async for event in run_turn(TurnRequest(IZH, domains=[domains["neuro"]], session_id=session.pk)):
            seen.append(event.type)
            if event.type == "token":
                break  # e.g. the websocket went away
        return seen

    assert async_to_sync(scenario)()[-1] == "token"
    assert fake.disconnected.wait(10)
    assert session.messages.get(role="assistant").status == "interrupted"


def test_cancel_after_the_turn_ended_changes_nothing(fake, domains):
    fake.script(domains_reply("neuro"), queries_reply("cheap neuron model"), cheap(), scores())

    async def scenario():
        turn = Turn(TurnRequest(IZH, domains=[domains["neuro"]])).start()
        events = [event async for event in turn]
        turn.cancel()
        await turn.wait()
        return events

    events = async_to_sync(scenario)()
    assert [e.type for e in events[-5:]] == ["answer", "stage", "stage", "stage", "done"]
    assert events[-1].status == "complete"


def test_ask_command_exits_non_zero_on_a_fatal_error(fake, domains, settings):
    url = closed_port_url()
    settings.OLLAMA_HOST = url
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match=rf"^unreachable: cannot reach the Ollama server at {url} \(is it running\?\)$"):
        call_command("ask", IZH, "--backend", "ollama", stdout=out, stderr=err)
    lines = [re.sub(r" \(\d+ ms\)$", "", line) for line in out.getvalue().splitlines()]
    assert lines == ["· memory: no session", "· guard: skipped (no guard model)"]
    assert err.getvalue() == ""


def test_a_malformed_server_reply_is_an_internal_error_without_its_text(fake, domains, caplog):
    # a 200 body that is not Ollama's API: the client library raises inside the classify step
    fake.script(Reply.malformed({"model": "qwen3:0.6b", "done": True,
                                 "message": {"role": "assistant", "content": {"secret": "/srv/klea/x"}}}))
    with caplog.at_level("ERROR", logger="klea.pipeline"):
        result = run(IZH, [domains["neuro"]])
    assert trace(result)[2:] == [
        "> classify",
        "error internal (classify, fatal): internal error (ValidationError)",
        "done failed",
    ]
    assert [(r.getMessage(), "/srv/klea/x" in r.exc_text) for r in caplog.records] == [
        ("pipeline failed in node classify", True)]  # the details stay in the log
