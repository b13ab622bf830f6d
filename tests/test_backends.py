"""The backends on their own: the factory, Ollama embed, the OpenAI-compatible backend
against a small fake server (real HTTP, server-sent events), the extractive backend."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from asgiref.sync import async_to_sync

from chat.backends import BackendError, ModelNotFound, NotSupported, Timeout, Unreachable, get_backend
from chat.backends.extractive import ExtractiveBackend, looks_like_code, split_sentences
from chat.backends.ollama import OllamaBackend
from chat.backends.openai import OpenAIBackend

from .fake_ollama import FakeOllama, Reply, closed_port_url


def call(coroutine_function, *args, **kwargs):
    async def main():
        backend = kwargs.pop("backend")
        try:
            result = coroutine_function(backend, *args, **kwargs)
            if hasattr(result, "__aiter__"):
                return [piece async for piece in result]
            return await result
        finally:
            await backend.aclose()

    return async_to_sync(main)()


async def _chat(backend, messages, **kw):
    return await backend.chat(messages, **kw)


def _stream(backend, messages, **kw):
    return backend.stream(messages, **kw)


async def _embed(backend, texts):
    return await backend.embed(texts)


USER = [{"role": "user", "content": "Hi"}]


def test_factory_follows_the_setting(settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    assert isinstance(get_backend(), ExtractiveBackend)
    settings.OLLAMA_HOST = "http://127.0.0.1:1"
    assert get_backend("ollama").host == "http://127.0.0.1:1"
    settings.KLEA_OPENAI_BASE_URL = "http://127.0.0.1:2/v1/"
    assert get_backend("openai").base_url == "http://127.0.0.1:2/v1"
    with pytest.raises(ValueError, match=r"unknown LLM backend 'gpt'; allowed: extractive, ollama, openai"):
        get_backend("gpt")


def test_ollama_embed_and_errors():
    with FakeOllama() as fake:
        fake.script(Reply.vectors([[0.1, 0.2], [0.3, 0.4]]), Reply.not_found("all-minilm"))
        backend = lambda: OllamaBackend(fake.url, chat_model="m", embedding_model="all-minilm", timeout=5)  # noqa: E731
        assert call(_embed, ["a", "b"], backend=backend()) == [[0.1, 0.2], [0.3, 0.4]]
        assert fake.bodies()[0] == {"model": "all-minilm", "input": ["a", "b"]}
        with pytest.raises(ModelNotFound, match=r"run `ollama pull all-minilm`"):
            call(_embed, ["a"], backend=backend())


def test_ollama_structured_call_sends_the_schema():
    with FakeOllama() as fake:
        fake.script(Reply.json({"a": 1}))
        backend = OllamaBackend(fake.url, chat_model="qwen3:0.6b", timeout=5)
        assert call(_chat, USER, schema={"type": "object"}, backend=backend) == '{"a": 1}'
        body = fake.bodies()[0]
        assert (body["format"], body["options"], body["stream"]) == ({"type": "object"}, {"temperature": 0}, False)


class _FakeOpenAI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    replies: list = []
    requests: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        status, payload = self.replies.pop(0)
        if body.get("stream") and status == 200:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for piece in payload:
                event = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            return
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def openai_server():
    _FakeOpenAI.replies, _FakeOpenAI.requests = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _FakeOpenAI
    server.shutdown()
    server.server_close()


def test_openai_compatible_chat_stream_embed(openai_server):
    url, handler = openai_server
    handler.replies = [
        (200, {"choices": [{"message": {"role": "assistant", "content": '{"ok": true}'}}]}),
        (200, ["Hel", "lo"]),
        (200, {"data": [{"index": 1, "embedding": [0.2]}, {"index": 0, "embedding": [0.1]}]}),
        (404, {"error": {"message": "model 'nope' not found"}}),
        (500, {"error": "overloaded"}),
    ]
    make = lambda: OpenAIBackend(url, chat_model="qwen", embedding_model="emb", api_key="k", timeout=5)  # noqa: E731
    assert call(_chat, USER, schema={"type": "object"}, backend=make()) == '{"ok": true}'
    assert call(_stream, USER, backend=make()) == ["Hel", "lo"]
    assert call(_embed, ["a", "b"], backend=make()) == [[0.1], [0.2]]
    with pytest.raises(ModelNotFound, match=rf"model 'qwen' is not served at {url}: model 'nope' not found"):
        call(_chat, USER, backend=make())
    with pytest.raises(BackendError, match=rf"server error 500 from {url}: overloaded"):
        call(_chat, USER, backend=make())
    first = handler.requests[0]
    assert (first["path"], first["auth"]) == ("/v1/chat/completions", "Bearer k")
    assert first["body"]["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "reply", "schema": {"type": "object"}, "strict": True},
    }
    assert handler.requests[1]["body"]["stream"] is True
    assert handler.requests[2]["path"] == "/v1/embeddings"


def test_openai_compatible_unreachable_and_timeout():
    url = closed_port_url()
    with pytest.raises(Unreachable, match=rf"cannot reach the OpenAI-compatible server at {url}/v1"):
        call(_chat, USER, backend=OpenAIBackend(url + "/v1", chat_model="m", timeout=5))
    with FakeOllama() as fake:  # any server that never answers will do
        fake.script(Reply.hang())
        with pytest.raises(Timeout, match=r"sent nothing for 0.3 s"):
            call(_chat, USER, backend=OpenAIBackend(fake.url, chat_model="m", timeout=0.3))


def test_backend_errors_name_the_server_without_credentials():
    url = closed_port_url().replace("http://", "http://klea:hunter2-pw@")
    public = url.replace("klea:hunter2-pw@", "")
    with pytest.raises(Unreachable) as openai_failed:
        call(_chat, USER, backend=OpenAIBackend(url + "/v1?key=tok-abcdef", chat_model="m", timeout=5))
    assert str(openai_failed.value) == f"cannot reach the OpenAI-compatible server at {public}/v1"
    with pytest.raises(Unreachable) as ollama_failed:
        call(_chat, USER, backend=OllamaBackend(url, chat_model="m", timeout=5))
    assert str(ollama_failed.value) == f"cannot reach the Ollama server at {public} (is it running?)"


def test_extractive_backend_writes_no_text_but_embeds():
    with pytest.raises(NotSupported, match="the extractive backend writes no free text"):
        call(_chat, USER, backend=ExtractiveBackend())
    vectors = call(_embed, ["a neuron", "an array"], backend=ExtractiveBackend())
    assert (len(vectors), len(vectors[0])) == (2, 384)


@pytest.mark.parametrize("sentence, code", [
    ("export DATABASE_URL=postgres://klea:secret@db.example.org:5432/klea", True),
    ('astream = rag.astream("How are BM25 and vector results fused?")', True),
    ("# ['How is the BM25 score of a chunk computed', 'how do I use an existing PostgreSQL']", True),
    ("pip install pyNeuroML", True),
    (">>> ds.sel(time='2020-01')", True),
    ("return answer, pieces, astream.citations", True),
    ("If you want to use the netCDF4 backend to read a file, name the engine.", False),
    ("The server needs pgvector >= 0.6 installed (CREATE EXTENSION vector is run by the first migration).", False),
    ("Use xr.open_mfdataset() to open many netCDF files as one dataset.", False),
    ("To install pyNeuroML, run pip install pyneuroml in a virtual environment.", False),
    # Asides in parentheses after a space are prose, however many; a call's are code.
    ("Supported file formats: Markdown (`.md`, `.markdown`), reStructuredText (`.rst`, `.rest`), "
     "HTML (`.html`, `.htm`), Word (`.docx`) and PDF (`.pdf`).", False),
    ("ds.sel(time=slice(a, b)).mean(dim).plot(x)", True),
])
def test_extractive_answers_leave_out_lines_of_code(sentence, code):
    assert looks_like_code(sentence) is code


def test_extractive_sentences_do_not_end_at_abbreviations():
    text = ("- RRF (default; Cormack et al. 2009): score = the sum of 1 / (60 + rank). Fused lists, "
            "e.g. BM25 and dense, are cut to k. See Fig. 3 on p. 4 for the figures of the benchmark.\n"
            "A line break always ends a sentence, et al.\nNothing joins across it at all. Tablets from "
            "Babylonia, ca. 1740 BC. Read Eq. 2 in Vol. 3 of the series. Choose one of the options a, b or c. "
            "Then take the tram to the museum on Main St. The museum opens at nine every day.")
    assert split_sentences(text) == [
        "- RRF (default; Cormack et al. 2009): score = the sum of 1 / (60 + rank).",
        "Fused lists, e.g. BM25 and dense, are cut to k.",
        "See Fig. 3 on p. 4 for the figures of the benchmark.",
        "A line break always ends a sentence, et al.",
        "Nothing joins across it at all.",
        "Tablets from Babylonia, ca. 1740 BC.",
        "Read Eq. 2 in Vol. 3 of the series.",
        "Choose one of the options a, b or c.",
        "Then take the tram to the museum on Main St.",
        "The museum opens at nine every day.",
    ]


def test_extractive_sentences_do_not_end_at_a_name_initial():
    text = ("Peter W. Shor and Nancy A. Lynch (J. W. Van Orden too) wrote it. See panel A. It shows the rate.\n"
            "Peter W.\nA line break ends it.")
    assert split_sentences(text, min_chars=1) == [
        "Peter W. Shor and Nancy A. Lynch (J. W. Van Orden too) wrote it.",
        "See panel A.",  # after a word in lower case a capital letter is no initial
        "It shows the rate.",
        "Peter W.",
        "A line break ends it.",
    ]


def test_extractive_sentences_keep_their_closing_quotes_and_quoted_questions():
    text = ('The trial asked "Who wrote it?" Then it asked again. So "In what year was the paper published?" '
            "reaches the papers domain (as the docs say.) The end follows here.")
    assert split_sentences(text, min_chars=1) == [
        'The trial asked "Who wrote it?"',
        "Then it asked again.",
        'So "In what year was the paper published?" reaches the papers domain (as the docs say.)',
        "The end follows here.",
    ]
