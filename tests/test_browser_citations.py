"""Each citation marker opens the passage it follows (issue 13), in a real browser against
a real daphne server: an answer quoting two sections of one file has a marker after each,
and each [1] opens its own section's chunk with the quoted lines highlighted, not the
whole chunk."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from .browser import browser_page, screenshot, sign_in
from .chat_world import group_domain, world  # noqa: F401
from .live_daphne import LiveDaphne
from .pdf_factory import paper

pytestmark = pytest.mark.django_db
RAFT = """# Raft

## Timing

Raft uses randomized election timeouts to ensure that split votes are rare
and that they are resolved quickly.

Broadcast time must be much smaller than the election timeout, so that
leaders can send the heartbeats that keep followers from starting elections.

## Leader election

A server remains in follower state as long as it receives valid RPCs from a
leader or candidate.

Election timeouts are chosen randomly from a fixed interval of
150-300 ms.

A candidate wins an election if it receives votes from a majority of the
servers in the full cluster for the same term.
"""
QUESTION = "Why are election timeouts randomized and what interval are they chosen from?"


@pytest.fixture
def raft_notes(world, tmp_path):
    """raft.md ingested as the committed domain ``wsraft``, open to GROUP only."""
    root = tmp_path / "wsraft"
    root.mkdir()
    (root / "raft.md").write_text(RAFT)

    with group_domain(root, "wsraft", "Notes on Raft: leader election, timing."):
        yield root


def ask(page, server, user, domain: str, question: str) -> tuple[dict, dict]:
    """Sign ``user`` in, ask ``question`` of ``domain`` on the chat page and wait for the
    answer: (the final ``answer`` frame, the one source of the ``references`` frame)."""
    frames: list[dict] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda data: frames.append(json.loads(data))))
    sign_in(page, server, user)
    page.get_by_label(domain).check()
    page.get_by_label("Your question").fill(question)
    page.get_by_label("Your question").press("Enter")
    expect(page.locator(".message.assistant.streaming")).to_have_count(0)
    final = next(f for f in frames if f["type"] == "answer")
    (reference,) = next(f for f in frames if f["type"] == "references")["references"]
    return final, reference


def test_each_marker_opens_the_chunk_and_lines_of_its_own_passage(world, raft_notes, tmp_path):
    with LiveDaphne(tmp_path / "daphne.log") as server, browser_page() as page:
        final, reference = ask(page, server, world.alice, "wsraft", QUESTION)
        # both sections are retrieved (in an order the fusion decides)
        chunks = {chunk["heading_chain"]: chunk for chunk in reference["chunks"]}
        timing, election = chunks["Raft > Timing"], chunks["Raft > Leader election"]
        assert (len(chunks), timing["lines"], election["lines"]) == (2, [5, 9], [13, 20])
        interval = "Election timeouts are chosen randomly from a fixed interval of 150-300 ms."
        why = ("Raft uses randomized election timeouts to ensure that split votes are rare and that they are "
               "resolved quickly.")
        # passages of two chunks of one source: a marker after each, each recording its own chunk
        assert final["text"] == f"{interval} [1] {why} [1]"
        assert reference["quoted"] == [election["chunk_id"], timing["chunk_id"]]
        assert reference["markers"] == [{"chunk_id": election["chunk_id"], "passages": [interval]},
                                        {"chunk_id": timing["chunk_id"], "passages": [why]}]
        view = page.locator("#source-view")
        cites = page.locator(".message.assistant .text button.cite")
        expect(cites).to_have_text(["[1]", "[1]"])
        # the first [1] opens "Leader election" at the interval, the second "Timing" at the why:
        # only the quoted lines are highlighted, not the whole chunk
        for k, (chain, lines) in enumerate([("Raft > Leader election", ["16", "17"]), ("Raft > Timing", ["5", "6"])]):
            cites.nth(k).click()
            expect(view).to_be_visible()
            expect(view.locator(".source-text")).to_have_count(1)
            expect(view.locator(".source-file")).to_have_text(f"wsraft · raft.md · {chain}")
            whole = chunks[chain]["lines"]  # the chunk, as its "Show in source" names it; then the quote
            expect(view.locator(".source-where")).to_have_text(
                f"lines {whole[0]}–{whole[1]} · quoted passage (lines {lines[0]}–{lines[1]}) highlighted")
            expect(view.locator("mark.source-line")).to_have_count(len(lines))
            assert view.locator("mark.source-line").evaluate_all("(ms) => ms.map((m) => m.dataset.line)") == lines
            screenshot(page, f"cite-marker-{k}")
            page.keyboard.press("Escape")
            expect(view).to_be_hidden()
        # without markers (a model's answer) [1] opens the first quoted chunk, the whole chunk highlighted
        page.evaluate("""() => {
          const item = document.querySelector('.message.assistant');
          const refs = JSON.parse(JSON.stringify(item.kleaReferences));
          refs[0].markers = [];
          KleaRender.setReferences(item, refs);
        }""")
        cites.nth(1).click()
        expect(view.locator(".source-file")).to_have_text("wsraft · raft.md · Raft > Leader election")
        expect(view.locator(".source-where")).to_have_text("lines 13–20")
        expect(view.locator("mark.source-line")).to_have_count(8)
        page.keyboard.press("Escape")
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


PORTS = "# Services\n\nEach service listens on its own port.\n\n| service | port |\n| --- | --- |\n" + "".join(
    f"| relay-{n:02d} | {7000 + n} |\n" for n in range(1, 61)) + "| ledger | 9440 |\n"


@pytest.fixture
def port_table(world, tmp_path):
    """ports.md (a table of 61 rows whose last row is the ledger's) ingested as domain ``wsports``."""
    root = tmp_path / "wsports"
    root.mkdir()
    (root / "ports.md").write_text(PORTS)

    with group_domain(root, "wsports", "Service ports: which port each service listens on."):
        yield root


def test_a_quoted_row_far_below_its_header_is_scrolled_into_view(world, port_table, tmp_path):
    with LiveDaphne(tmp_path / "daphne.log") as server, browser_page() as page:
        final, reference = ask(page, server, world.alice, "wsports", "Which port does the ledger service listen on?")
        quoted = "| service | port |\n| --- | --- |\n| ledger | 9440 |"
        assert final["text"] == ("| service | port |\n| --- | --- |\n| ledger | 9440 |\n\n[1]\n\n"
                                 "Each service listens on its own port. [1]")
        assert reference["markers"][0]["passages"] == [quoted]
        # the marker under the table is set as the table's source line, the one after prose is not
        lines = page.locator(".message.assistant .text p.sources-line")
        expect(lines).to_have_count(1)
        expect(lines).to_have_text("[1]")
        assert lines.evaluate("(p) => getComputedStyle(p, '::before').content") == '"Source "'
        expect(page.locator(".message.assistant .text p").nth(1)).not_to_have_class("sources-line")
        page.locator(".message.assistant .text button.cite").first.click()
        view = page.locator("#source-view")
        # the chunk (rows 55-67, under its header repeated from line 5), then the quoted lines
        expect(view.locator(".source-where")).to_have_text("lines 55–67 · quoted passage (lines 5–67) highlighted")
        marks = view.locator("mark.source-line")
        expect(marks).to_have_count(2)
        assert marks.evaluate_all("(ms) => ms.map((m) => m.dataset.line)") == ["5", "67"]
        # header (5) and row (67) do not fit in the view together: the row, the last run, is shown
        expect(view.locator('mark.source-line[data-line="67"]')).to_be_in_viewport()
        expect(view.locator('mark.source-line[data-line="5"]')).not_to_be_in_viewport()
        screenshot(page, "cite-table-row")
        page.keyboard.press("Escape")
        # a range that fits is shown whole: the second [1] quotes line 3, above the table
        page.locator(".message.assistant .text button.cite").nth(1).click()
        expect(view.locator(".source-where")).to_have_text("line 3 · quoted passage highlighted")
        expect(view.locator('mark.source-line[data-line="3"]')).to_be_in_viewport()
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


@pytest.fixture
def cortex_paper(world, tmp_path):
    """paper.pdf (tests/pdf_factory.py) with its authors and year in the folder's metadata
    map, ingested as the committed domain ``wscortex``, open to GROUP only."""
    root = tmp_path / "wscortex"
    root.mkdir()
    paper(root / "paper.pdf")
    (root / "metadata-map.json").write_text(json.dumps({"paper.pdf": {"DEFAULT": {
        "title": "Spiking neurons in cortex", "authors": ["Ada Lovelace", "Alan Hodgkin"], "year": 2021}}}))

    with group_domain(root, "wscortex", "Lab papers: spiking neurons in cortex, excitability."):
        yield root


def measure_highlights(page) -> list[list[float]]:
    """The highlight boxes over the page image, as fractions of the image (left, top, right, bottom)."""
    return page.evaluate("""() => {
      const frame = document.querySelector('#source-view .page-image').getBoundingClientRect();
      return [...document.querySelectorAll('#source-view .highlight')].map((box) => {
        const r = box.getBoundingClientRect();
        return [(r.left - frame.left) / frame.width, (r.top - frame.top) / frame.height,
                (r.right - frame.left) / frame.width, (r.bottom - frame.top) / frame.height];
      });
    }""")


def test_an_answer_from_metadata_opens_the_first_page_and_a_quoted_sentence_is_highlighted_alone(
        world, cortex_paper, tmp_path):
    with LiveDaphne(tmp_path / "daphne.log") as server, browser_page() as page:
        # who wrote it: the metadata answers; [1] cites the document and opens page 1, unmarked
        final, reference = ask(page, server, world.alice, "wscortex", "Who wrote Spiking neurons in cortex?")
        assert final["text"] == "*Spiking neurons in cortex*, Ada Lovelace and Alan Hodgkin, 2021. [1]"
        assert (reference["markers"], reference["quoted"], reference["pages"]) == (
            [{"chunk_id": None, "passages": []}], [], None)
        expect(page.locator(".reference .ref-file")).to_have_text("wscortex · paper.pdf")
        page.locator(".message.assistant .text button.cite").click()
        view = page.locator("#source-view")
        expect(view.locator(".source-title")).to_have_text("Spiking neurons in cortex")
        expect(view.locator(".source-where")).to_have_text("Page 1 of 2 · the document as a whole is cited")
        expect(view.locator(".page-frame.loaded")).to_have_count(1)
        expect(view.locator(".highlight")).to_have_count(0)
        expect(view.locator(".source-prev")).to_be_disabled()
        screenshot(page, "cite-document")
        page.keyboard.press("Escape")
        expect(page.locator(".reference").first).to_be_focused()

        # a quoted passage of a PDF chunk is highlighted where it is printed: here the answer
        # quotes the Introduction's two sentences, its four lines
        page.get_by_label("Your question").fill("What is the classic description of excitability in the cortex?")
        page.get_by_label("Your question").press("Enter")
        expect(page.locator(".message.assistant")).to_have_count(2)
        expect(page.locator(".message.assistant.streaming")).to_have_count(0)
        answer = page.locator(".message.assistant").nth(1)
        (reference,) = answer.evaluate("(item) => item.kleaReferences")
        introduction = next(c for c in reference["chunks"] if c["heading_chain"] == "1 Introduction")
        sentences = ["Neurons communicate through synapses and their membrane potential rises when sodium channels "
                     "open.", "This is the classic description of excitability in the cortex."]
        assert reference["markers"] == [{"chunk_id": introduction["chunk_id"], "passages": [" ".join(sentences)]}]
        lines = page.evaluate(f"fetch('/api/chunks/{introduction['chunk_id']}/source').then((r) => r.json())")["boxes"]
        answer.locator(".text button.cite").click()
        expect(view.locator(".source-where")).to_have_text("Page 1 of 2 · quoted passage highlighted")
        expect(view.locator(".page-frame.loaded")).to_have_count(1)
        assert measure_highlights(page) == [pytest.approx(box[1:], abs=0.002) for box in lines]
        page.keyboard.press("Escape")
        # a marker quoting the second sentence only (as one quoting a sentence of a long
        # paragraph does): from the "T" of "This" mid-line three to the end of line four
        answer.evaluate("""(item, passages) => {
          const refs = JSON.parse(JSON.stringify(item.kleaReferences));
          refs[0].markers[0].passages = passages;
          KleaRender.setReferences(item, refs);
        }""", sentences[1:])
        answer.locator(".text button.cite").click()
        expect(view.locator(".source-where")).to_have_text("Page 1 of 2 · quoted passage highlighted")
        expect(view.locator(".page-frame.loaded")).to_have_count(1)
        assert measure_highlights(page) == [pytest.approx([0.2398, *lines[2][2:]], abs=0.002),
                                            pytest.approx(lines[3][1:], abs=0.002)]
        screenshot(page, "cite-pdf-sentence")
        page.keyboard.press("Escape")
        # a passage the text layer does not have (an OCR page, a changed layout): the chunk, as before
        answer.evaluate("""(item) => {
          const refs = JSON.parse(JSON.stringify(item.kleaReferences));
          refs[0].markers[0].passages = ["Not printed on this page at all."];
          KleaRender.setReferences(item, refs);
        }""")
        answer.locator(".text button.cite").click()
        expect(view.locator(".source-where")).to_have_text("Page 1 of 2 · cited passage highlighted")
        expect(view.locator(".page-frame.loaded")).to_have_count(1)
        assert measure_highlights(page) == [pytest.approx(box[1:], abs=0.002) for box in lines]
        page.keyboard.press("Escape")
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()
