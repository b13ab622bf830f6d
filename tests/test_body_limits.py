"""Request bodies over their path's limit are refused by daphne itself with 413, before
the body is read (klea_site/body_limits.py, docs/security.md#request-bodies): a real
daphne, raw sockets, exact responses."""

from __future__ import annotations

import json
import socket

import pytest

from klea_site.body_limits import too_large_response

from .live_daphne import LiveDaphne

REQUEST_MAX, UPLOAD_MAX = 100_000, 300_000
UPLOAD = "/admin/ingestion/ingestionjob/upload/"


def exchange(port: int, head: str, body: bytes = b"", chunked: bytes | None = None) -> bytes:
    """Send ``head`` (request line and headers), then ``body``, or ``chunked`` as 64 KiB
    chunks; return everything the server sent until it closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode() + b"\r\n" + body)
        try:
            if chunked is not None:
                for start in range(0, len(chunked), 65536):
                    piece = chunked[start:start + 65536]
                    sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused mid-body: the server closed; its answer is already on the way
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def status_and_json(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


@pytest.mark.django_db(transaction=True)
def test_daphne_refuses_an_oversized_body_before_reading_it(tmp_path):
    log = tmp_path / "daphne.log"
    with LiveDaphne(log, KLEA_WARM_START="false", KLEA_REQUEST_MAX_BYTES=str(REQUEST_MAX),
                    KLEA_UPLOAD_MAX_BYTES=str(UPLOAD_MAX)) as server:
        port = server.port
        # Announced too large: answered from the headers alone (no body is ever sent).
        announced = exchange(port, "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: multipart/form-data; boundary=x\r\n"
                                   "Content-Length: 200000000\r\nExpect: 100-continue\r\n")
        assert announced == too_large_response(REQUEST_MAX)
        assert status_and_json(announced) == (413, {"error": {
            "code": "too_large", "message": "the request body is larger than 100000 bytes"}})
        # Chunked, so no length announced: counted as it arrives.
        streamed = exchange(port, "POST /api/query HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
                            chunked=b"x" * 1_000_000)
        assert streamed == too_large_response(REQUEST_MAX)
        # The upload page has the upload limit: over it, refused; under it, Django's answer
        # (a POST without a CSRF token: 403).
        assert exchange(port, f"POST {UPLOAD} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              f"Content-Length: {UPLOAD_MAX + 1}\r\n") == too_large_response(UPLOAD_MAX)
        under = exchange(port, f"POST {UPLOAD} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                               f"Content-Type: application/octet-stream\r\nContent-Length: {REQUEST_MAX + 1}\r\n",
                         b"y" * (REQUEST_MAX + 1))
        assert under.split(b"\r\n", 1)[0] == b"HTTP/1.1 403 Forbidden"
        assert b"CSRF verification failed" in under
        # A body at the limit reaches Klea: /api/query's own answer (no account: 401).
        body = json.dumps({"text": "what?", "pad": "z" * (REQUEST_MAX - 40)}).encode()
        body += b" " * (REQUEST_MAX - len(body))
        at_limit = exchange(port, f"POST /api/query HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n", body)
        assert status_and_json(at_limit)[0] == 401
        health = exchange(port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n")
        assert status_and_json(health)[0] == 200
    assert "Traceback" not in log.read_text()
