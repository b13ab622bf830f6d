"""Request body limits enforced inside daphne, before a body is read or parsed.

daphne hands a request to the ASGI app only after twisted has received its whole body,
then queues that body into the app at once; twisted also parses a form POST into memory
(about 10x its size) although daphne never uses the result. So a check in Django comes
too late: a 200 MB form POST to ``/health`` took daphne from 2 GB to 4 GB. This module
makes daphne use :class:`LimitedWebRequest`, which:

- answers **413** ``too_large`` (JSON, ``Connection: close``) as soon as the headers
  announce a ``Content-Length`` over the path's limit, without reading the body;
- counts a body without ``Content-Length`` (chunked) as it arrives and answers the same
  413 once it passes the limit, discarding the rest;
- never parses a form body (ASGI passes the raw bytes to Django, which parses it itself).

Limits (bytes): ``KLEA_UPLOAD_MAX_BYTES`` for the admin upload page, else
``KLEA_REQUEST_MAX_BYTES``. What daphne still holds is one accepted body (up to the
limit) in its app queue; the reverse proxy's body limit (docs/deployment.md) keeps the
rest away from it.
"""

from __future__ import annotations

import json
from functools import lru_cache

from daphne import http_protocol
from django.conf import settings
from django.urls import reverse


@lru_cache(maxsize=1)
def _upload_path() -> bytes:
    return reverse("admin:ingestion_ingestionjob_upload").encode()


def body_limit(raw_path: bytes) -> int:
    """Largest body in bytes accepted for ``raw_path`` (the request target, query included)."""
    if raw_path.split(b"?", 1)[0] == _upload_path():
        return settings.KLEA_UPLOAD_MAX_BYTES
    return settings.KLEA_REQUEST_MAX_BYTES


def too_large_response(limit: int) -> bytes:
    """The whole HTTP/1.1 413 response (bytes) for a body over ``limit`` bytes."""
    body = json.dumps({"error": {"code": "too_large",
                                 "message": f"the request body is larger than {limit} bytes"}}).encode()
    head = ("HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    return head + body


class _Discard:
    """Stands in for the body file of a refused request: keeps nothing."""

    closed = False

    def write(self, data):
        pass

    def read(self, size=-1):
        return b""

    def seek(self, *args):
        return 0

    def close(self):
        self.closed = True


class LimitedWebRequest(http_protocol.WebRequest):
    """daphne's request with the body limits above (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._parsePOSTFormSubmission = False  # daphne passes the raw body on; never parse it
        self._body_limit = 0
        self._body_seen = 0
        self._refused = False

    def gotLength(self, length):
        self._body_limit = body_limit(getattr(self.channel, "_path", b"/"))
        if length is not None and length > self._body_limit:
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data):
        if self._refused:
            return
        self._body_seen += len(data)
        if self._body_seen > self._body_limit:
            self._refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if not self._refused:  # a refused request's body may end before the socket closes
            super().requestReceived(command, path, version)

    def _refuse(self):
        self._refused = True
        if getattr(self, "content", None) is not None:
            self.content.close()
        self.content = _Discard()
        # No "100 Continue" after the 413 (twisted sends it after gotLength).
        self.requestHeaders.removeHeader(b"Expect")
        transport = self.channel.transport
        transport.write(too_large_response(self._body_limit))
        transport.loseConnection()


def install() -> None:
    """Make daphne build :class:`LimitedWebRequest` for every HTTP request (daphne has
    no option for its request class; its factory looks the name up when it builds one)."""
    http_protocol.WebRequest = LimitedWebRequest
