"""The chat UI in a real browser (Debian's headless Chromium driven by Playwright, see
tests/browser.py) against a real daphne server: sign in, ask about a small ingested
domain, watch the answer stream in, open a reference; stop an answer, then rename, reopen
and delete the conversation. Screenshots go to test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from domains.models import Domain
from ingestion.models import IngestionJob, StagedFile
from ingestion.runs.ingest import ingest

from .browser import DESKTOP, PHONE, browser_page, screenshot, sign_in, unreadable_buttons
from .chat_world import PASSWORD, in_thread, world  # noqa: F401
from .fake_ollama import FakeOllama, Reply
from .live_daphne import LiveDaphne

pytestmark = pytest.mark.django_db
DOCS = ("getting-started.md", "configuration.md", "domains.md")
QUESTION = "How do I point Klea at my own PostgreSQL database?"
CITATION = re.compile(r"\[(\d+)\]")


@pytest.fixture
def web_docs(world, tmp_path):
    """Three files of the project's docs/ ingested as the committed domain ``webdocs``."""
    root = tmp_path / "webdocs"
    root.mkdir()
    for name in DOCS:
        shutil.copy(Path(settings.BASE_DIR, "docs", name), root / name)

    def create():
        Domain.objects.filter(name="webdocs").delete()
        Domain.objects.create(name="webdocs", description="Klea's own documentation: running, configuring, "
                              "PostgreSQL, Redis, domains and stores.")
        return ingest(root, "webdocs-store", "webdocs", mirror=True)

    def remove():
        Domain.objects.filter(name="webdocs").delete()
        IngestionJob.objects.filter(arguments__directory=str(root)).delete()
        StagedFile.objects.filter(directory=str(root)).delete()

    report = in_thread(create)
    try:
        yield report
    finally:
        in_thread(remove)


def test_sign_in_ask_stream_and_open_a_reference(world, web_docs, tmp_path):
    frames: list[dict] = []
    in_thread(lambda: Domain.objects.filter(name="webdocs").update(examples=f"{QUESTION}\nSecond example?"))
    with LiveDaphne(tmp_path / "daphne.log") as server, browser_page() as page:
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(json.loads(payload))))

        # sign in
        page.goto(f"{server.url}/")
        expect(page).to_have_url(f"{server.url}/accounts/login/?next=/")
        page.get_by_label("User name").fill(world.bob.username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(f"{server.url}/")
        expect(page.locator(".who")).to_have_text("ws-bob")

        # the picker offers bob's domains only
        expect(page.get_by_label("webdocs")).to_be_visible()
        expect(page.get_by_label("wsneuro")).to_be_visible()
        assert page.get_by_label("wssecret").count() == 0

        # the empty chat lists each domain with its description and example questions
        names = page.evaluate("fetch('/api/domains').then((r) => r.json())")["domains"]
        hint = page.locator("#empty-hint")
        expect(hint.locator(".hint-domain strong")).to_have_text([d["name"] for d in names])
        expect(hint.locator(".hint-domain > span")).to_have_text([d["description"] for d in names])
        expect(hint.locator(".example")).to_have_text([QUESTION, "Second example?"])
        screenshot(page, "chat-empty-hint")
        assert unreadable_buttons(page) == {}  # the examples, Send, New conversation

        # click an example: it is asked; the answer streams in, then the references
        page.get_by_label("webdocs").check()
        hint.get_by_role("button", name=QUESTION).click()
        expect(page.locator(".message.user .text")).to_have_text(QUESTION)
        expect(hint).to_be_hidden()
        answer = page.locator(".message.assistant .text")
        expect(page.locator(".message.assistant .references")).to_be_visible()
        expect(page.locator(".message.assistant.streaming")).to_have_count(0)
        expect(page.locator("#stage")).to_be_hidden()
        done = next(f for f in frames if f["type"] == "done")
        final = next(f for f in frames if f["type"] == "answer")
        assert done["status"] == "complete" and final["route"] == "domains" and final["domains"] == ["webdocs"]
        kinds = [f["type"] for f in frames]
        assert kinds.index("token") < kinds.index("answer")  # text streamed before the final answer
        stages = {f["node"] for f in frames if f["type"] == "stage"}
        assert {"classify", "retrieve", "answer", "evaluate"} <= stages
        # the answer shown is the final text (as Markdown); each [n] of a reference is a button
        assert page.evaluate("document.querySelector('.message.assistant').kleaText") == final["text"]
        numbers = {ref["number"] for ref in next(f for f in frames if f["type"] == "references")["references"]}
        markers = [m.group(0) for m in CITATION.finditer(final["text"]) if int(m.group(1)) in numbers]
        assert "[1]" in markers
        expect(answer.locator("button.cite")).to_have_text(markers)

        # references: title, file, cited text on demand
        references = next(f for f in frames if f["type"] == "references")["references"]
        first = page.locator(".reference").first
        expect(first.locator(".ref-title")).to_have_text(references[0]["title"] or references[0]["file_name"])
        expect(first.locator(".ref-file")).to_have_text(f"webdocs · {references[0]['file_name']}")
        chunk_text = first.locator(".chunk-text").first
        expect(chunk_text).to_be_hidden()
        first.locator("details.chunk summary").first.click()
        expect(chunk_text).to_be_visible()
        # the first chunk listed is the first one the answer quotes, its Markdown rendered
        quoted_ids = set(references[0]["quoted"]) | {m["chunk_id"] for m in references[0]["markers"]}
        listed = sorted(references[0]["chunks"], key=lambda c: c["chunk_id"] not in quoted_ids)
        expect(chunk_text).to_have_text(page.evaluate(
            "text => { const box = document.createElement('div'); box.append(KleaMarkdown.render(text)); "
            "return box.textContent; }", listed[0]["text"]))
        # an [n] marker in the answer is a button that opens reference n
        first.locator("details.chunk summary").first.click()
        expect(chunk_text).to_be_hidden()
        cite = page.locator(".message.assistant .text button.cite").first
        expect(cite).to_have_text("[1]")
        expect(cite).to_have_attribute("aria-label", "Reference 1")
        cite.click()
        expect(chunk_text).to_be_visible()
        # ... and the source view on the cited chunk: its section, the passage highlighted
        view = page.locator("#source-view")
        expect(view).to_be_visible()
        # ... the chunk the marker's own passage came from, only the quoted lines highlighted
        (marker, *_) = references[0]["markers"]
        cited = next(c for c in references[0]["chunks"] if c["chunk_id"] == marker["chunk_id"])
        source = Path(settings.BASE_DIR, "docs", references[0]["file_name"]).read_text()
        words = r"\W+".join(re.escape(w) for w in re.findall(r"\w+", marker["passages"][0]))
        quoted = re.search(words, source)
        first_line, last_line = source[:quoted.start()].count("\n") + 1, source[:quoted.end()].count("\n") + 1
        assert cited["lines"][0] <= first_line <= last_line <= cited["lines"][1]
        expect(view.locator("mark.source-line")).to_have_count(last_line - first_line + 1)
        expect(view.locator("mark.source-line").first).to_have_attribute("data-line", str(first_line))
        # named as its reference's "Show in source" names the chunk, then the quoted lines
        span = lambda a, b: f"line {a}" if a == b else f"lines {a}–{b}"  # noqa: E731
        quoted_where = span(*cited["lines"]) + (" · quoted passage highlighted" if [first_line, last_line] == cited[
            "lines"] else f" · quoted passage ({span(first_line, last_line)}) highlighted")
        expect(view.locator(".source-where")).to_have_text(quoted_where)
        screenshot(page, "source-view-text")
        page.keyboard.press("Escape")  # closing it gives the focus back to the reference
        expect(view).to_be_hidden()
        expect(first).to_be_focused()
        # the reference list's "Show in source" of that chunk shows the same quoted lines
        viewable = [c["chunk_id"] for c in listed if c["lines"] or c["pages"]]
        first.locator(".source-open").nth(viewable.index(cited["chunk_id"])).click()
        expect(view.locator("mark.source-line")).to_have_count(last_line - first_line + 1)
        expect(view.locator("mark.source-line").first).to_have_attribute("data-line", str(first_line))
        expect(view.locator(".source-where")).to_have_text(quoted_where)
        page.keyboard.press("Escape")
        expect(view).to_be_hidden()
        screenshot(page, "chat-desktop")
        assert unreadable_buttons(page) == {}  # [n] markers, references, the conversation's actions

        # the new conversation is listed under its question
        expect(page.locator("#session-list .open").first).to_have_text(QUESTION)

        # user text is shown as text, never as HTML
        hostile = '<img src=x onerror="window.pwned=1"> Redis?'
        page.get_by_label("Your question").fill(hostile)
        page.get_by_role("button", name="Send").click()
        expect(page.locator(".message.user .text").nth(1)).to_have_text(hostile)
        expect(page.locator(".message.assistant.streaming")).to_have_count(0)
        assert page.evaluate("window.pwned === undefined") and page.locator(".conversation img").count() == 0

        # readable on a phone: one column, nothing wider than the screen; only the thread
        # scrolls, never the page (its header and question box stay put)
        page.set_viewport_size(PHONE)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.evaluate("document.documentElement.scrollHeight") == PHONE["height"]
        screenshot(page, "chat-phone")
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


def test_stop_a_streaming_answer_then_rename_reopen_and_delete_the_conversation(world, tmp_path):
    with FakeOllama() as fake:
        # query generation, then an answer that streams two pieces and stalls
        fake.script(Reply.json({"queries": ["cheap neuron model"], "filters": {}}),
                    Reply.hang(pieces=["The Izhikevich model", " is cheap"]))
        env = {"KLEA_LLM_BACKEND": "ollama", "OLLAMA_HOST": fake.url}
        with LiveDaphne(tmp_path / "daphne.log", **env) as server, browser_page() as page:
            sign_in(page, server, world.alice)
            expect(page.get_by_label("wssecret")).to_be_visible()  # alice is in the lab group
            page.get_by_label("wsneuro").check()
            page.get_by_label("Your question").fill("Which neuron model is cheap?")
            page.get_by_label("Your question").press("Enter")

            # the text streams in while the stage says "Answering…"
            streaming = page.locator(".message.assistant.streaming .text")
            expect(streaming).to_have_text("The Izhikevich model is cheap")
            expect(page.locator("#stage-text")).to_have_text("Answering…")
            expect(page.get_by_role("button", name="Send")).to_be_disabled()
            page.get_by_role("button", name="Stop").click()
            expect(page.locator(".message.assistant .error")).to_have_text("Stopped: the answer is incomplete.")
            expect(page.get_by_role("button", name="Stop")).to_be_hidden()
            expect(page.get_by_role("button", name="Send")).to_be_enabled()
            assert page.evaluate("document.activeElement.id") == "question"
            assert fake.disconnected.wait(10), "the model stream was not closed"
            screenshot(page, "chat-stopped")

            # rename, reload, reopen: the stored partial answer is marked as stopped
            page.once("dialog", lambda dialog: dialog.accept("Cheap models"))
            page.get_by_role("button", name="Rename Which neuron model is cheap?").click()
            expect(page.locator("#session-list .open")).to_have_text(["Cheap models"])
            page.reload()  # a reload reopens the conversation this tab had open
            expect(page.locator(".message.user .text")).to_have_text("Which neuron model is cheap?")
            expect(page.locator("#empty-hint")).to_be_hidden()
            expect(page.locator("#session-list li.current .open")).to_have_text("Cheap models")

            # a fresh visit (a new browser session) starts a new conversation; the old one stays listed
            visit = page.context.browser.new_context(viewport=DESKTOP)
            fresh = visit.new_page()
            sign_in(fresh, server, world.alice)
            expect(fresh.locator("#session-list .open")).to_have_text(["Cheap models"])
            names = fresh.evaluate("fetch('/api/domains').then((r) => r.json())")["domains"]
            expect(fresh.locator("#empty-hint .hint-domain strong")).to_have_text([d["name"] for d in names])
            expect(fresh.locator(".message")).to_have_count(0)
            expect(fresh.locator("#session-list li.current")).to_have_count(0)
            visit.close()
            page.get_by_role("button", name="Cheap models", exact=True).click()
            expect(page.locator(".message.user .text")).to_have_text("Which neuron model is cheap?")
            expect(page.locator(".message.assistant .text")).to_have_text("The Izhikevich model is cheap")
            expect(page.locator(".message.assistant .error")).to_have_text("Stopped: the answer is incomplete.")

            # delete it
            page.once("dialog", lambda dialog: dialog.accept())
            page.get_by_role("button", name="Delete Cheap models").click()
            expect(page.locator("#session-list li")).to_have_count(0)
            expect(page.locator(".message")).to_have_count(0)
            names = page.evaluate("fetch('/api/domains').then((r) => r.json())")["domains"]
            expect(page.locator("#empty-hint .hint-domain strong")).to_have_text([d["name"] for d in names])
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


def test_reference_links_are_labelled_and_the_doi_is_shown_once():
    """A bare ``url``/``url_1`` gets the label "Link"; ``url_doi`` repeats the DOI line, so it is left out."""
    ref = {"number": 1, "title": "Tidy Data", "file_name": "tidy.pdf", "domain": "papers", "doi": "10.18637/jss.v059.i10",
           "urls": [{"label": "", "url": "http://www.jstatsoft.org/"},
                    {"label": "doi", "url": "https://doi.org/10.18637/jss.v059.i10"},
                    {"label": "orcid", "url": "https://orcid.org/0000-0000-0000-0001"}], "chunks": []}
    with browser_page() as page:
        page.set_content("<!doctype html><body></body>")
        page.add_script_tag(path=str(Path(settings.BASE_DIR, "chat", "static", "chat", "render.js")))
        page.evaluate("ref => document.body.append(KleaRender.references([ref]))", ref)
        expect(page.locator(".ref-links li")).to_have_text([
            "DOI: 10.18637/jss.v059.i10", "Link: http://www.jstatsoft.org/", "orcid: https://orcid.org/0000-0000-0000-0001"])
        assert page.locator(".ref-links a").evaluate_all("links => links.map(a => a.href)") == [
            "https://doi.org/10.18637/jss.v059.i10", "http://www.jstatsoft.org/", "https://orcid.org/0000-0000-0000-0001"]


TITLE = "Clients: API tokens, the OpenAI-compatible endpoint, the MCP server"


def test_a_cited_sections_name_leaves_out_the_title_and_says_where_a_headingless_chunk_is():
    """The title is the reference's heading already: a chain that goes on below it starts
    after it; a chunk without a heading (a PDF's abstract, a scanned page) is named by
    where it is, not "Cited text". Chunks of one section are listed under it once."""
    chunks = [
        {"chunk_id": 1, "headings": [TITLE, "API tokens", "Revoking"], "heading_chain": "", "lines": [40, 52]},
        {"chunk_id": 2, "headings": [" clients:  API tokens, the openai-compatible endpoint, the MCP server ", "Setup"],
         "lines": [1, 8]},
        {"chunk_id": 7, "headings": [TITLE], "heading_chain": "", "lines": [1, 3]},  # the opening, under the title
        {"chunk_id": 8, "headings": [], "heading_chain": "", "lines": [1, 2]},
        {"chunk_id": 3, "headings": [], "heading_chain": "", "pages": [1, 1]},
        {"chunk_id": 4, "headings": ["Results", TITLE], "heading_chain": "", "pages": [3, 4]},
        {"chunk_id": 5, "headings": [], "heading_chain": ""},
        {"chunk_id": 6, "heading_chain": f"{TITLE} > Setup"},  # a stored message from before "headings"
    ]
    ref = {"number": 1, "kind": "document", "title": TITLE, "file_name": "clients.md", "domain": "docs",
           "chunks": [{**chunk, "text": f"chunk {chunk['chunk_id']}"} for chunk in chunks]}
    static = Path(settings.BASE_DIR, "chat", "static", "chat")
    with browser_page() as page:
        page.set_content("<!doctype html><body></body>")
        for script in SCRIPTS:
            page.add_script_tag(path=str(static / script))
        page.evaluate("ref => document.body.append(KleaRender.references([ref]))", ref)
        expect(page.locator("details.chunk summary")).to_have_text([
            "API tokens > Revoking", "Setup", TITLE, "lines 1–2", "p. 1", f"Results > {TITLE}", "Cited text"])


# The chat page's scripts that render references, in its order (chat/templates/chat/index.html).
SCRIPTS = ("vendor/markdown-it.min.js", "vendor/purify.min.js", "markdown.js", "render.js", "source.js")
RAFT = ["5 The Raft consensus algorithm"]


def test_a_reference_shows_its_quoted_chunks_as_markdown_and_folds_the_others():
    """A PDF cited for one passage listed the heading chains of all seven chunks retrieved
    from it, and a chunk's `code` read as raw backticks (new-user trial): the quoted
    chunks are listed, the others folded under one line; chunk text is rendered as the
    answers are (markdown.js), raw HTML in it staying text."""
    chunks = [
        {"chunk_id": 1, "headings": [*RAFT, "5.1 Raft basics"], "pages": [5, 5], "text": "A cluster has servers."},
        {"chunk_id": 2, "headings": [*RAFT, "5.2 Leader election"], "pages": [6, 6],
         "text": "Set `ELECTION_TIMEOUT` to **150-300 ms**. <img src=x onerror=window.pwned=1>"},
        {"chunk_id": 3, "headings": [*RAFT, "5.4 Safety"], "pages": [8, 8], "text": "Only up-to-date logs win."},
    ]
    ref = {"number": 1, "kind": "document", "title": "In Search of an Understandable Consensus Algorithm",
           "file_name": "raft.pdf", "domain": "papers", "chunks": chunks, "quoted": [2],
           "markers": [{"chunk_id": 2, "passages": ["Set `ELECTION_TIMEOUT` to **150-300 ms**."]}]}
    static = Path(settings.BASE_DIR, "chat", "static", "chat")
    with browser_page() as page:
        page.set_content("<!doctype html><body></body>")
        for script in SCRIPTS:
            page.add_script_tag(path=str(static / script))
        page.evaluate("ref => { document.body.append(KleaRender.references([ref])); "
                      "KleaRender.openReference(document.querySelector('.reference')); }", ref)
        quoted = page.locator(".reference > details.chunk")
        expect(quoted.locator("summary")).to_have_text([f"{RAFT[0]} > 5.2 Leader election"])
        expect(quoted.locator(".chunk-text code")).to_have_text(["ELECTION_TIMEOUT"])
        expect(quoted.locator(".chunk-text strong")).to_have_text(["150-300 ms"])
        expect(quoted.locator(".chunk-text")).to_have_text("Set ELECTION_TIMEOUT to 150-300 ms. "
                                                          "<img src=x onerror=window.pwned=1>")
        assert page.locator(".chunk-text img").count() == 0
        expect(quoted.locator(".source-open")).to_have_text(["Show in source · p. 6"])
        # the others: one folded line, opened on demand (openReference leaves it closed)
        more = page.locator(".reference > details.more-chunks")
        expect(more.locator("> summary")).to_have_text("2 more passages retrieved, not quoted")
        expect(more.locator("details.chunk summary")).to_have_text(
            [f"{RAFT[0]} > 5.1 Raft basics", f"{RAFT[0]} > 5.4 Safety"])
        expect(more.locator("details.chunk").first).to_be_hidden()
        more.locator("> summary").click()
        expect(more.locator("details.chunk summary")).to_have_count(2)
        expect(more.locator("details.chunk summary").first).to_be_visible()
        # a model's answer (nothing quoted): every chunk is listed, nothing folded
        page.evaluate("ref => document.body.replaceChildren(KleaRender.references([ref]))",
                      {**ref, "quoted": [], "markers": []})
        expect(page.locator(".reference > details.chunk summary")).to_have_count(3)
        expect(page.locator("details.more-chunks")).to_have_count(0)
