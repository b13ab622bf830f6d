"""Crossref, OpenAlex and Semantic Scholar as small local HTTP servers (real sockets on
127.0.0.1) that answer like the real APIs, for ``bench/biblio.py`` and the tests (kept
here so that bench/ does not depend on tests/).

Each service serves the same records in its own JSON shape; a script per service can
make its next requests answer 429, 500, a timeout, a record without a title, 404 or an
HTML error page. Every request is logged (service, raw path, query, headers).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

SERVICES = ("crossref", "openalex", "semanticscholar")
PREFIXES = {"crossref": "/works/", "openalex": "/works/doi:", "semanticscholar": "/graph/v1/paper/DOI:"}
SETTINGS = {
    "crossref": "KLEA_CROSSREF_URL",
    "openalex": "KLEA_OPENALEX_URL",
    "semanticscholar": "KLEA_SEMANTIC_SCHOLAR_URL",
}


@dataclass(frozen=True)
class Seen:
    service: str
    path: str  # raw, as sent (percent-encoding visible)
    query: dict
    headers: dict


def _split(name: str) -> tuple[str, str]:
    given, _, family = name.rpartition(" ")
    return given, family


def crossref_work(doi: str, rec: dict) -> dict:
    authors = [
        {"name": a} if "et al" in a or "Collaboration" in a
        else {"given": _split(a)[0], "family": _split(a)[1], "sequence": "additional", "affiliation": []}
        for a in rec.get("authors", [])
    ]
    message = {
        "DOI": doi, "type": "journal-article", "URL": f"https://doi.org/{doi}",
        "title": [rec["title"]] if rec.get("title") else [],
        "author": authors, "container-title": [rec["journal"]] if rec.get("journal") else [],
        "publisher": "Test Publisher", "reference-count": 0,
    }
    if rec.get("year"):
        message["published-print"] = {"date-parts": [[rec["year"], 3]]}
        message["issued"] = {"date-parts": [[rec["year"], 3, 1]]}
    return {"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": message}


def openalex_work(doi: str, rec: dict) -> dict:
    return {
        "id": "https://openalex.org/W2100000001", "doi": f"https://doi.org/{doi.lower()}",
        "title": rec.get("title"), "display_name": rec.get("title"),
        "publication_year": rec.get("year"), "type": "article",
        "authorships": [
            {"author_position": "middle", "author": {"id": "https://openalex.org/A1", "display_name": a},
             "raw_author_name": a, "institutions": []}
            for a in rec.get("authors", [])
        ],
        "primary_location": {"source": {"display_name": rec.get("journal")}} if rec.get("journal") else None,
        "keywords": [{"id": "https://openalex.org/keywords/k", "display_name": k, "score": 0.5}
                     for k in rec.get("keywords", [])],
    }


def semanticscholar_paper(doi: str, rec: dict) -> dict:
    return {
        "paperId": "649def34f8be52c8b66281af98ae884c09aef38b", "externalIds": {"DOI": doi},
        "title": rec.get("title"), "year": rec.get("year"), "venue": rec.get("journal") or "",
        "journal": {"name": rec.get("journal"), "volume": "1"} if rec.get("journal") else None,
        "authors": [{"authorId": str(i), "name": a} for i, a in enumerate(rec.get("authors", []))],
    }


FORMATS = {"crossref": crossref_work, "openalex": openalex_work, "semanticscholar": semanticscholar_paper}


class FakeDoiServices:
    """Three fake services serving ``records`` ({doi (any case): {title, authors, year,
    journal, keywords}}). ``script(service, "429", "timeout", ...)`` queues answers."""

    def __init__(self, records: dict[str, dict] | None = None):
        self.records = {k.lower(): (k, v) for k, v in (records or {}).items()}
        self.seen: list[Seen] = []
        self._scripts = {name: deque() for name in SERVICES}
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._servers: dict[str, ThreadingHTTPServer] = {}

    def script(self, service: str, *answers: str) -> None:
        self._scripts[service].extend(answers)

    def settings(self) -> dict[str, str]:
        return {SETTINGS[name]: f"http://127.0.0.1:{srv.server_address[1]}" for name, srv in self._servers.items()}

    def services_asked(self) -> list[str]:
        return [s.service for s in self.seen]

    def start(self) -> FakeDoiServices:
        for name in SERVICES:
            server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(name))
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
            self._servers[name] = server
        return self

    def stop(self) -> None:
        self._release.set()
        for server in self._servers.values():
            server.shutdown()
            server.server_close()

    def _answer(self, service: str, raw_path: str) -> tuple[int, str, bytes]:
        with self._lock:
            action = self._scripts[service].popleft() if self._scripts[service] else "ok"
        if action == "timeout":
            self._release.wait(10)
            return 504, "text/plain", b"late"
        if action in ("429", "500", "503"):
            return int(action), "application/json", json.dumps({"message": "Too many requests"}).encode()
        if action == "html":
            return 200, "text/html", b"<html><body>Proxy error</body></html>"
        prefix = PREFIXES[service]
        path = urlsplit(raw_path).path
        doi = unquote(path[len(prefix):]) if path.startswith(prefix) else ""
        found = self.records.get(doi.lower())
        if action == "404" or found is None:
            body = b"Resource not found." if service == "crossref" else json.dumps({"error": f"{doi} not found"}).encode()
            return 404, "text/plain" if service == "crossref" else "application/json", body
        stored_doi, record = found
        if action == "notitle":
            record = {k: v for k, v in record.items() if k != "title"}
        return 200, "application/json", json.dumps(FORMATS[service](stored_doi, record)).encode()

    def _handler(self, service: str):
        fakes = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
                with fakes._lock:
                    fakes.seen.append(Seen(service, urlsplit(self.path).path, query, dict(self.headers)))
                status, kind, body = fakes._answer(service, self.path)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, *args):
                pass

        return Handler
