"""A small fake Ollama server: real HTTP on 127.0.0.1, scripted replies in order.

It speaks the parts of Ollama's API the product uses: ``POST /api/chat`` (one JSON reply,
or NDJSON lines with chunked transfer when ``"stream": true``, like the real server) and
``POST /api/embed``. Each request takes the next scripted :class:`Reply`; a request with
nothing scripted gets HTTP 500 and is recorded in ``unexpected``.

Requests that offer tools (a non-empty ``"tools"`` list in the body; the ollama client
sends ``"tools": []`` with every chat request) take their replies from a queue of
their own (:meth:`FakeOllama.script_tools`): the pipeline asks for tool calls while it
generates queries, so the two kinds of request arrive in no fixed order. A tool reply
looks like the real server's: ``message.tool_calls`` = ``[{"id", "function": {"index",
"name", "arguments" (an object)}}]`` with empty ``content``.

Usage::

    with FakeOllama() as fake:
        fake.script(Reply.text("safe"), Reply.json({"query_domains": ["neuroml"]}))
        fake.script_tools(Reply.tools(("channel_density", {"channel": "Nav1.6"})))
        ... OLLAMA_HOST=fake.url ...
        assert fake.paths() == ["/api/chat", "/api/chat", "/api/chat"]
        assert fake.tool_bodies()[0]["tools"] == [...]
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CREATED_AT = "2025-01-01T00:00:00.000000Z"
# Handlers never block longer than this (a forgotten release cannot hang the tests).
MAX_BLOCK_SECONDS = 30


@dataclass
class Reply:
    """One scripted reply.

    ``content``: the assistant text (split into ``pieces`` when streamed); ``status``:
    an HTTP error status with ``error`` as Ollama's ``{"error": ...}`` body; ``block``:
    send the pieces, then hold the connection open until released (``block_before``:
    before sending anything).
    """

    content: str = ""
    pieces: list[str] | None = None
    status: int = 200
    error: str = ""
    block: bool = False
    block_before: bool = False
    embeddings: list[list[float]] = field(default_factory=list)
    compute: object = None  # body -> Reply, for replies that depend on the request
    tool_calls: list[tuple[str, dict]] | None = None
    raw: dict | None = None  # sent as the whole 200 body, as is (a malformed server reply)

    @classmethod
    def tools(cls, *calls: tuple[str, dict]) -> Reply:
        """A reply calling tools: ``("name", {arguments})`` pairs, in order (none = no call)."""
        return cls(tool_calls=list(calls))

    @classmethod
    def using(cls, compute) -> Reply:
        """A reply computed from the request body (e.g. citing a source by its number)."""
        return cls(compute=compute)

    @classmethod
    def text(cls, content: str, pieces: list[str] | None = None) -> Reply:
        return cls(content=content, pieces=pieces)

    @classmethod
    def json(cls, value) -> Reply:
        return cls(content=json.dumps(value))

    @classmethod
    def malformed(cls, body: dict) -> Reply:
        """A 200 reply whose body is ``body`` as is (not what Ollama's API promises)."""
        return cls(raw=body)

    @classmethod
    def http_error(cls, status: int, message: str) -> Reply:
        return cls(status=status, error=message)

    @classmethod
    def not_found(cls, model: str) -> Reply:
        """What Ollama answers for a model that was never pulled."""
        return cls(status=404, error=f'model "{model}" not found, try pulling it first')

    @classmethod
    def hang(cls, pieces: list[str] | None = None) -> Reply:
        """Stream ``pieces`` (or nothing) and then stall."""
        return cls(pieces=pieces or [], block=True, block_before=not pieces)

    @classmethod
    def vectors(cls, embeddings: list[list[float]]) -> Reply:
        return cls(embeddings=embeddings)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format, *args):  # keep test output clean
        pass

    def do_GET(self):
        with self.server.fake.lock:
            self.server.fake.gets.append(self.path)
        if self.path in ("/", "/api/version"):
            return self._send_json(200, {"version": "0.6.3-fake"})
        return self._send_json(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        fake = self.server.fake
        with fake.lock:
            fake.requests.append({"path": self.path, "body": body})
            queue = fake.tool_replies if body.get("tools") else fake.replies
            reply = queue.popleft() if queue else None
            if reply is None:
                fake.unexpected.append({"path": self.path, "body": body})
        if reply is None:
            return self._send_json(500, {"error": "fake ollama: nothing scripted for this request"})
        if reply.compute is not None:
            reply = reply.compute(body)
        if reply.status != 200:
            return self._send_json(reply.status, {"error": reply.error})
        if reply.raw is not None:
            return self._send_json(200, reply.raw)
        if reply.block_before:
            self._block()
            return
        if self.path == "/api/embed":
            return self._send_json(200, {"model": body.get("model"), "embeddings": reply.embeddings})
        model = body.get("model", "")
        if body.get("stream"):
            return self._stream(model, reply)
        self._send_json(200, self._final(model, reply.content, reply.tool_calls))

    def _final(self, model: str, content: str, tool_calls: list | None = None) -> dict:
        message = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{index}", "function": {"index": index, "name": name, "arguments": arguments}}
                for index, (name, arguments) in enumerate(tool_calls)
            ]
        return {
            "model": model,
            "created_at": CREATED_AT,
            "message": message,
            "done_reason": "stop",
            "done": True,
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": 1,
            "prompt_eval_duration": 10,
            "eval_count": 1,
            "eval_duration": 10,
        }

    def _stream(self, model: str, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces = reply.pieces if reply.pieces is not None else [reply.content]
        try:
            for piece in pieces:
                line = {"model": model, "created_at": CREATED_AT,
                        "message": {"role": "assistant", "content": piece}, "done": False}
                self._chunk(json.dumps(line) + "\n")
            if reply.block:
                self._block()
                return
            final = self._final(model, "")
            self._chunk(json.dumps(final) + "\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.server.fake.disconnected.set()

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _block(self) -> None:
        """Hold the connection until released, noticing when the client hangs up."""
        fake = self.server.fake
        waited = 0.0
        while not fake.release.wait(0.02) and waited < MAX_BLOCK_SECONDS:
            waited += 0.02
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        fake.disconnected.set()
                        break
                except OSError:
                    fake.disconnected.set()
                    break
        self.close_connection = True

    def _send_json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOllama


class FakeOllama:
    """The fake server (a context manager). ``url`` is its OLLAMA_HOST."""

    def __init__(self):
        self.replies: deque[Reply] = deque()
        self.tool_replies: deque[Reply] = deque()
        self.requests: list[dict] = []
        self.gets: list[str] = []  # paths of GET requests (health probes), in order
        self.unexpected: list[dict] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.disconnected = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOllama:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def script(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def script_tools(self, *replies: Reply) -> None:
        """Replies for requests that offer tools (see the module docstring)."""
        with self.lock:
            self.tool_replies.extend(replies)

    def tool_bodies(self) -> list[dict]:
        """The bodies of the requests that offered tools."""
        return [r["body"] for r in self.requests if r["body"].get("tools")]

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]

    def bodies(self, tools: bool = True) -> list[dict]:
        """Request bodies in arrival order (``tools=False``: without the tool requests)."""
        return [r["body"] for r in self.requests if tools or not r["body"].get("tools")]

    @property
    def pending(self) -> int:
        return len(self.replies) + len(self.tool_replies)


@contextmanager
def ollama_backend(settings, *, check: bool = True, **overrides):
    """A FakeOllama that the pytest-django ``settings`` point the chat backend at (chat
    model qwen3:0.6b unless overridden; ``overrides``: other settings by name). With
    ``check``, the test must have used exactly the scripted replies."""
    with FakeOllama() as server:
        settings.KLEA_LLM_BACKEND = "ollama"
        settings.OLLAMA_HOST = server.url
        settings.KLEA_RAG_CHAT_MODEL = "qwen3:0.6b"
        for name, value in overrides.items():
            setattr(settings, name, value)
        yield server
        if check:
            assert server.unexpected == []
            assert server.pending == 0


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
