"""Abuse replay: the kinds of issue 16 against a live daphne on loopback, each outcome printed.

Starts one daphne (as ``make run`` does, extractive backend) on a free loopback port
against the benchmark database (bench/common.py), with one small domain (this
project's docs/security.md) and one user. Every case is bounded (timeouts, sizes) and
talks to 127.0.0.1 only. Printed per case: what the server answered and how long it
took (milliseconds, as the client sees it); at the end the server's resident memory
after a warm-up turn and after all cases. The hostile-text cases run in this process (they are pure functions)
and time the bibliographic patterns on the inputs that used to stall a worker.

    python bench/abuse.py
    python bench/abuse.py --sockets 8        # sockets of one user asking at once
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import command_line, setup_django  # noqa: E402

DOMAIN = "bench-abuse-docs"
USER = "bench-abuse"
TIMEOUT = 120.0  # seconds any one case may wait
QUESTION = "Which limits bound the work one caller can cause?"


def prepare() -> dict:
    """The domain, the user, two signed-in sessions and an API token in the benchmark database."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from chat.tokens import create_token
    from domains.embedded_postgres import database_url
    from domains.models import Domain
    from ingestion.runs.ingest import ingest

    Domain.objects.get_or_create(name=DOMAIN, defaults={"description": "Klea's security notes: limits, threats."})
    source = Path(tempfile.mkdtemp(prefix="bench-abuse-"))
    (source / "security.md").write_text((ROOT / "docs" / "security.md").read_text(encoding="utf-8"), encoding="utf-8")
    ingest(source, f"{DOMAIN}-store", DOMAIN, mirror=True)
    user, _ = User.objects.get_or_create(username=USER)
    cookies = []
    for _ in range(2):
        client = Client()
        client.force_login(user)
        cookies.append(client.cookies["sessionid"].value)
    _, token = create_token(user, "bench-abuse")
    return {"database_url": database_url(connection.settings_dict), "cookies": cookies, "token": token}


def http(url: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, dict | str, float]:
    """(status, JSON body or text, milliseconds)."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST" if body else "GET")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    elapsed = (time.perf_counter() - started) * 1000
    try:
        return status, json.loads(raw), elapsed
    except ValueError:
        return status, raw[:200].decode(errors="replace"), elapsed


def api_query(base: str, token: str, content: dict) -> tuple[int, dict | str, float]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return http(f"{base}/api/query", json.dumps(content).encode(), headers)


def error_of(body) -> str:
    return body["error"]["code"] if isinstance(body, dict) and "error" in body else str(body)[:80]


async def socket_for(port: int, cookie: str | None):
    import websockets

    headers = {"Cookie": f"sessionid={cookie}"} if cookie else {}
    return await websockets.connect(f"ws://127.0.0.1:{port}/ws/chat/", additional_headers=headers,
                                    origin=f"http://127.0.0.1:{port}", max_size=None, open_timeout=TIMEOUT)


async def next_frame(socket) -> dict:
    return json.loads(await asyncio.wait_for(socket.recv(), TIMEOUT))


async def until_done(socket) -> list[dict]:
    frames = [await next_frame(socket)]
    # a refused query (docs/api.md, "Protocol errors") and a closing socket send no "done"
    while frames[-1]["type"] != "done" and not (
            frames[-1].get("refused") or frames[-1].get("code") == "not_authenticated"):
        frames.append(await next_frame(socket))
    return frames


async def socket_cases(port: int, cookies: list[str], sockets: int) -> list[dict]:
    import websockets

    from asgiref.sync import sync_to_async

    from chat.models import ChatSession

    out = []
    socket = await socket_for(port, cookies[0])
    started = time.perf_counter()
    await socket.send(json.dumps({"type": "query", "session": None, "text": "x" * 60_000}))
    frame = await next_frame(socket)
    out.append({"case": "websocket question of 60,000 characters", "outcome": frame.get("code"),
                "ms": round((time.perf_counter() - started) * 1000, 1)})
    await socket.close()

    # one user asks on many sockets at once (a new chat session each)
    open_sockets = [await socket_for(port, cookies[0]) for _ in range(sockets)]
    started = time.perf_counter()
    for s in open_sockets:
        await s.send(json.dumps({"type": "query", "session": None, "text": QUESTION, "domains": [DOMAIN]}))
    endings = await asyncio.gather(*(until_done(s) for s in open_sockets))
    kinds = [f[-1]["code"] if f[-1]["type"] == "error" else f[-1]["status"] for f in endings]
    out.append({"case": f"{sockets} sockets of one user ask at once",
                "outcome": {k: kinds.count(k) for k in sorted(set(kinds))},
                "ms": round((time.perf_counter() - started) * 1000, 1)})
    for s in open_sockets:
        await s.close()

    # an anonymous socket that sends a query after the 4401 close began
    count = sync_to_async(lambda: ChatSession.objects.filter(owner__isnull=True).count())
    before = await count()
    anonymous = await socket_for(port, None)
    frames, code = [], None
    try:  # sent at once, racing the server's 4401 close
        await anonymous.send(json.dumps({"type": "query", "session": None, "text": QUESTION}))
        while True:
            frames.append(await next_frame(anonymous))
    except websockets.ConnectionClosed as closed:
        code = closed.rcvd.code if closed.rcvd else None
    await asyncio.sleep(1.0)  # a turn started by mistake would have created its session by now
    out.append({"case": "anonymous query sent after the 4401 close began",
                "outcome": {"frames": [f.get("code", f["type"]) for f in frames], "close": code,
                            "sessions_created": await count() - before}, "ms": None})

    # the session signs out while its socket is open
    socket = await socket_for(port, cookies[1])
    started = time.perf_counter()  # the sign-out request included
    status = await sync_to_async(logout)(port, cookies[1])
    try:
        frame = await next_frame(socket)
        await next_frame(socket)
        code = None
    except websockets.ConnectionClosed as closed:
        code = closed.rcvd.code if closed.rcvd else None
    out.append({"case": "sign-out while a socket is open", "outcome": {
        "logout": status, "frame": frame.get("code"), "close": code},
        "ms": round((time.perf_counter() - started) * 1000, 1)})
    return out


def logout(port: int, cookie: str) -> int:
    """Sign the session out as a browser would (the CSRF cookie from the sign-in page)."""
    from http.cookiejar import CookieJar

    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = f"http://127.0.0.1:{port}"
    opener.open(urllib.request.Request(f"{base}/accounts/login/"), timeout=TIMEOUT).read()
    csrf = next(c.value for c in jar if c.name == "csrftoken")
    request = urllib.request.Request(f"{base}/accounts/logout/", data=b"", method="POST", headers={
        "Cookie": f"sessionid={cookie}; csrftoken={csrf}", "X-CSRFToken": csrf})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def hostile_text_cases() -> list[dict]:
    """The bibliographic patterns on the inputs of the review, and the question path's
    (follow-up detection, passage choice) on long runs (in this process)."""
    from chat.backends.extractive.candidates import units_of
    from chat.backends.extractive.fits import bonus, enumerates, names_one, of_measure
    from chat.backends.extractive.stated import misspelt
    from chat.backends.extractive.text import matches, split_sentences
    from domains.front_matter import looks_like_front_matter
    from ingestion.convert.pdf_layout import Paragraph, merge_continued
    from ingestion.convert.pdf_lines import Line
    from chat.backends.extractive.shapes import shapes
    from chat.pipeline.follow_up import is_follow_up
    from domains.retrieval.acronyms import expansion
    from domains.retrieval.definitions import defines_subject
    from ingestion.metadata.biblio.doi import normalize_doi
    from tests.extractive_helpers import answer, source
    from ingestion.metadata.biblio.fields import year_candidates
    from ingestion.metadata.biblio.names import parse_byline

    cases = [
        ("DOI followed by 200,000 ')'", lambda: normalize_doi("10.1234/abc" + ")" * 200_000)),
        ("year patterns on 200,000 digits", lambda: year_candidates("1" * 200_000)),
        ("page-range line after 200,000 digits", lambda: year_candidates("1" * 200_000 + " 8(1): 7-10, 2009")),
        ("byline with 200,000 spaces", lambda: parse_byline("Ada Lovelace" + " " * 200_000 + "and Grace Hopper")),
        ("follow-up question with 200,000 spaces", lambda: is_follow_up("How long does" + " " * 200_000 + "it last?")),
        ("chunk line of 200,000 underscores", lambda: len(units_of("Name: Ada\n" + "_" * 200_000 + "\nDate: 2021"))),
        ("prose list after 100,000 'a.'", lambda: enumerates("a." * 100_000 + ", b and c")),
        # chunk text of characters that cost no token, which the chunker does not bound
        ("acronym spelled out beside 300,000 zero-width spaces",
         lambda: expansion("LEMS", "LEMS (a thing) here." + "\u200b" * 300_000 + " End.")),
        ("definition-list entry before 20,000 blank lines", lambda: defines_subject("domain", "Domain" + "\n" * 20_000)),
        ("answer from a chunk of 2,000,000 zero-width spaces",
         lambda: answer("Where does Klea store its documents?", source(
             1, "Klea stores its documents in PostgreSQL.\n\n" + "\u200b" * 2_000_000 + "\n\nThe end."))),
        ("number of the measure asked on 200,000 digits", lambda: of_measure(
            shapes("How many qubits, how long and how large?"), "1" * 200_000 + " x")),
        ("the one thing a 'which' question asks named after 100,000 'A.'", lambda: names_one(
            shapes("Which SDK does Klea use?"), "A." * 100_000 + " SDK")),
        # session 14: version numbers and the sign that a thing is done
        ("version number after 100,000 '1.'", lambda: bonus(
            shapes("Which Java versions is it tested with?"), "prose", "1." * 100_000 + " or later", False)),
        ("address of a 200,000-letter scheme", lambda: bonus(
            shapes("Which Java versions is it tested with?"), "prose", "a" * 200_000 + "://x.org/1.2", False)),
        ("sign after 50,000 'when it'", lambda: bonus(
            shapes("How do I know when it is done?"), "prose", "when it " * 50_000, False)),
        # session 15: substitutes, era years, keyword lists, misspelt names, sentence ends
        ("substitute after 50,000 'if you do not'", lambda: bonus(
            shapes("Can I make it without quark?"), "prose", "if you do not " * 50_000, False)),
        ("era year after 100,000 digits and spaces", lambda: bonus(
            shapes("How old is the recipe?"), "prose", "1 " * 100_000 + "x", False)),
        ("keyword query of 4,000 characters", lambda: sorted(shapes("spices " * 570))),
        ("misspelt question terms against 30,000 words of one first letter", lambda: sorted(misspelt(
            {f"a{i:05d}zzq" for i in range(500)}, " ".join(f"a{i:05d}yyq" for i in range(30_000))))),
        ("sentences of 100,000 'ca. 1'", lambda: len(split_sentences("ca. 1 " * 100_000))),
        # session 10 (breaker): front matter, prose lists, OCR paragraph re-joining, question terms
        ("front matter of 200,000 characters of 'a.'", lambda: looks_like_front_matter("a." * 100_000)),
        ("prose list of 50,000 items with no 'and'", lambda: enumerates("Ab, " * 50_000 + "end.")),
        ("50,000 one-line OCR paragraphs that all re-join", lambda: len(merge_continued(
            [Paragraph([Line(i // 50, 72.0, 600.0, 300.0, 610.0, size=9.0 + i % 3, bold=False,
                             text="the comput-" if i % 2 == 0 else "ing and", estimated=True, ocr=True)])
             for i in range(50_000)])[0].text)),
        ("3,000 question terms against 20,000 words", lambda: sorted(matches(
            {f"term{i}x" for i in range(3000)} | {"stir"}, " ".join(f"word{i}y" for i in range(20_000)) + " stirring"))),
    ]
    out = []
    for name, run in cases:
        started = time.perf_counter()
        result = run()
        out.append({"case": name, "outcome": result, "ms": round((time.perf_counter() - started) * 1000, 1)})
    return out


def hostile_pdf_case() -> dict:
    """extract_bibliography on a page one with 20,000 digits and a DOI then 20,000 ')'."""
    import resource

    from ingestion.metadata.biblio import extract_bibliography
    from tests.biblio_pdfs import article, write_pdf

    with tempfile.TemporaryDirectory() as folder:
        pdf = write_pdf(Path(folder) / "hostile.pdf", [article(
            header="1" * 20_000, footer="doi:10.1234/abc" + ")" * 20_000)])
        started = time.perf_counter()
        out = extract_bibliography(pdf, network=False)
        elapsed = time.perf_counter() - started
    return {"case": "hostile PDF through the bibliographic cascade",
            "outcome": {"doi": out.get("doi"), "sources": out["_sources"],
                        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)},
            "ms": round(elapsed * 1000, 1)}


def hostile_name_case() -> dict:
    """A folder holding a file whose name is not UTF-8 beside a good one, ingested as
    ``Knowledge.add`` does (session 11: the run failed whole with a DataError and left its
    job running; now that file alone fails, named with U+FFFD)."""
    import os

    from ingestion.models import IngestionJob
    from ingestion.runs.ingest import ingest

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "good.md").write_text("# Good\n\nSourdough needs flour and water.\n", encoding="utf-8")
        with open(os.path.join(os.fsencode(folder), b"bad\xff\xfe.md"), "wb") as fh:
            fh.write(b"# Bad name\n\nThe name of this file is not UTF-8.\n")
        started = time.perf_counter()
        try:
            report = ingest(folder, f"{DOMAIN}-names", DOMAIN, create=True, force=True)
            job = IngestionJob.objects.get(pk=report.job_id)
            outcome = {"outcomes": {o.file_name: o.status for o in report.outcomes}, "job": job.status}
        except Exception as exc:  # what it did before the fix
            outcome = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
                       "jobs_left_running": IngestionJob.objects.filter(
                           status="running", store__name=f"{DOMAIN}-names").count()}
    return {"case": "a folder with a file name that is not UTF-8, through ingest()", "outcome": outcome,
            "ms": round((time.perf_counter() - started) * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=6, help="sockets of one user asking at once")
    args = parser.parse_args()
    setup_django()
    from django.conf import settings

    from bench.load import Servers

    world = prepare()
    log = ROOT / "var" / "bench-abuse-daphne.log"
    print(f"$ {command_line()}")
    results = []
    with Servers(1, world["database_url"], log) as servers:
        port = servers.ports[0]
        base = f"http://127.0.0.1:{port}"
        status, body, ms = http(f"{base}/health")
        results.append({"case": "anonymous GET /health", "outcome": {"status": status, "body": body},
                        "ms": round(ms, 1)})
        # a warm-up turn (the embedding model is in memory afterwards), not reported
        api_query(base, world["token"], {"text": QUESTION, "domains": [DOMAIN]})
        rss_before = servers.rss()
        for name, content in [
            ("HTTP question of 2,400,000 characters", {"text": "x" * 2_400_000}),
            (f"HTTP question of {settings.KLEA_MAX_QUESTION_CHARS + 1} characters",
             {"text": "x" * (settings.KLEA_MAX_QUESTION_CHARS + 1)}),
            ("HTTP question of 4,000 characters, a run of spaces before its 'it'",
             {"text": "How long does" + " " * 3978 + "it last?", "domains": [DOMAIN]}),
            ("filter $in with 10,000 values", {"text": QUESTION, "filters": {"year": {"$in": list(range(10_000))}}}),
            ("filter $contains with 10,000 values",
             {"text": QUESTION, "filters": {"keywords": {"$contains": [str(n) for n in range(10_000)]}}}),
        ]:
            status, body, ms = api_query(base, world["token"], content)
            results.append({"case": name, "outcome": {"status": status, "code": error_of(body)}, "ms": round(ms, 1)})
        results += asyncio.run(socket_cases(port, world["cookies"], args.sockets))
        rss_after = servers.rss()
    results += hostile_text_cases()
    results.append(hostile_pdf_case())
    results.append(hostile_name_case())
    for row in results:
        print(json.dumps(row))
    print(json.dumps({"daphne_rss_mib": {"after_warm_up": round(rss_before / 2**20),
                                         "after_cases": round(rss_after / 2**20)}}))


if __name__ == "__main__":
    main()
