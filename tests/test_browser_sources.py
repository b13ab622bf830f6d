"""The source view in a real browser (tests/browser.py) against a real daphne server: ask
about a PDF, click [1], the cited page shows with the highlight over the passage; page
through, download the original; the phone layout; a user who may not query the domain
gets 404 for the same URLs."""

from __future__ import annotations

import json
import shutil

import pytest
from playwright.sync_api import expect

from domains.models import Chunk

from .browser import PHONE, browser_page, screenshot, sign_in
from .chat_world import group_domain, in_thread, world  # noqa: F401
from .live_daphne import LiveDaphne
from .pdf_factory import paper

pytestmark = pytest.mark.django_db
QUESTION = "How much did firing rates change after stimulation?"

# The highlight boxes of the page shown, relative to the image, and how many dark pixels
# the image has under each (read back from a canvas: the page as rendered).
MEASURE = """() => {
  const img = document.querySelector('#source-view .page-image');
  const frame = img.getBoundingClientRect();
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const context = canvas.getContext('2d');
  context.drawImage(img, 0, 0);
  return [...document.querySelectorAll('#source-view .highlight')].map((box) => {
    const r = box.getBoundingClientRect();
    const rel = [(r.left - frame.left) / frame.width, (r.top - frame.top) / frame.height,
                 (r.right - frame.left) / frame.width, (r.bottom - frame.top) / frame.height];
    const x = Math.round(rel[0] * canvas.width), y = Math.round(rel[1] * canvas.height);
    const w = Math.round((rel[2] - rel[0]) * canvas.width), h = Math.round((rel[3] - rel[1]) * canvas.height);
    const pixels = context.getImageData(x, y, w, h).data;
    let dark = 0;
    for (let i = 0; i < pixels.length; i += 4) if (pixels[i] + pixels[i + 1] + pixels[i + 2] < 300) dark++;
    return { rel, dark };
  });
}"""


@pytest.fixture
def lab_papers(world, tmp_path):
    """paper.pdf ingested as the committed domain ``wspapers``, open to GROUP only."""
    root = tmp_path / "wspapers"
    root.mkdir()
    paper(root / "paper.pdf")

    with group_domain(root, "wspapers", "Lab papers: spiking neurons, firing rates."):
        yield root


def test_click_a_citation_to_see_the_cited_page_with_the_passage_highlighted(world, lab_papers, tmp_path):
    frames: list[dict] = []
    cache = tmp_path / "page-cache"
    with LiveDaphne(tmp_path / "daphne.log", KLEA_PAGE_CACHE_DIR=str(cache)) as server:
        with browser_page() as page:
            page.on("websocket", lambda ws: ws.on("framereceived", lambda data: frames.append(json.loads(data))))
            sign_in(page, server, world.alice)
            page.get_by_label("wspapers").check()
            page.get_by_label("Your question").fill(QUESTION)
            page.get_by_label("Your question").press("Enter")
            expect(page.locator(".message.assistant.streaming")).to_have_count(0)
            references = next(f for f in frames if f["type"] == "references")["references"]
            reference = references[0]
            chunk = reference["chunks"][0]
            assert (reference["file_name"], chunk["pages"]) == ("paper.pdf", [2, 2])
            assert chunk["text"] == "Firing rates doubled after stimulation."
            expect(page.locator(".reference .ref-file").first).to_have_text(
                f"wspapers · paper.pdf · p. {reference['pages'][0]}–{reference['pages'][1]}"
                if reference["pages"][0] != reference["pages"][1] else "wspapers · paper.pdf · p. 2")

            assert reference["quoted"] == [chunk["chunk_id"]]  # the passage the answer quotes

            # click [1]: the dialog shows page 2 with the quoted passage highlighted (here the
            # chunk's one line: tests/test_browser_citations.py has a sentence of several lines)
            page.locator(".message.assistant .text button.cite").first.click()
            view = page.locator("#source-view")
            expect(view).to_be_visible()
            expect(view.locator(".source-title")).to_have_text("Spiking neurons in cortex")
            expect(view.locator(".source-where")).to_have_text("Page 2 of 2 · quoted passage highlighted")
            expect(view.locator(".page-frame.loaded")).to_have_count(1)
            expect(view.locator(".source-prev")).to_be_enabled()
            expect(view.locator(".source-next")).to_be_disabled()
            (box,) = [b for b in chunk_boxes(page, chunk["chunk_id"]) if b[0] == 2]
            (shown,) = page.evaluate(MEASURE)
            assert shown["rel"] == pytest.approx(box[1:], abs=0.004)
            assert shown["dark"] > 100  # printed text under the highlight
            screenshot(page, "source-view-desktop")

            # previous page: no highlight there; the download is the original file
            view.locator(".source-prev").click()
            expect(view.locator(".source-where")).to_have_text("Page 1 of 2")
            expect(view.locator(".page-frame.loaded")).to_have_count(1)
            assert view.locator(".highlight").count() == 0
            href = view.locator(".source-download").get_attribute("href")
            download = page.request.get(f"{server.url}{href}")
            assert download.body() == (lab_papers / "paper.pdf").read_bytes()

            # Escape closes it and gives the focus back to reference 1
            page.keyboard.press("Escape")
            expect(view).to_be_hidden()
            expect(page.locator(".reference").first).to_be_focused()

            # [1] opens the quoted chunk even when the reference lists another chunk first
            # (page 1's Abstract); without "quoted" and "markers" (a model's answer) it opens the first.
            (abstract,) = in_thread(lambda: list(Chunk.objects.filter(
                document_id=reference["document_id"], headings=["Abstract"]).values("id", "provenance")))
            for quoted, where in [([chunk["chunk_id"]], "Page 2 of 2 · quoted"), ([], "Page 1 of 2 · cited")]:
                page.evaluate("""([first, quoted]) => {
                  const item = document.querySelector('.message.assistant');
                  const refs = JSON.parse(JSON.stringify(item.kleaReferences));
                  refs[0].chunks.unshift(first);
                  refs[0].quoted = quoted;
                  if (!quoted.length) refs[0].markers = [];
                  KleaRender.setReferences(item, refs);
                }""", [{"chunk_id": abstract["id"], "pages": abstract["provenance"]["pages"], "lines": None,
                        "headings": ["Abstract"], "heading_chain": "Abstract", "text": "", "anchor": ""}, quoted])
                page.locator(".message.assistant .text button.cite").first.click()
                expect(view.locator(".source-where")).to_have_text(f"{where} passage highlighted")
                expect(view.locator(".page-frame.loaded")).to_have_count(1)
                page.keyboard.press("Escape")
                expect(view).to_be_hidden()
            # two chunks of one section: its heading chain is listed once, both texts under it
            page.evaluate("(refs) => KleaRender.setReferences(document.querySelector('.message.assistant'), refs)",
                          [{**reference, "chunks": [chunk, {**chunk, "text": "More results."}]}, *references[1:]])
            listed = page.locator(".reference").first
            expect(listed.locator("details.chunk summary")).to_have_text([chunk["heading_chain"]])
            expect(listed.locator(".chunk-text")).to_have_text([chunk["text"], "More results."])
            expect(listed.locator(".source-open")).to_have_text(["Show in source · p. 2"] * 2)
            page.evaluate("(refs) => KleaRender.setReferences(document.querySelector('.message.assistant'), refs)",
                          references)

            # on a phone: the view fills the screen, the page fits its width
            page.set_viewport_size(PHONE)
            page.locator(".message.assistant .text button.cite").first.click()
            expect(view.locator(".page-frame.loaded")).to_have_count(1)
            width = page.evaluate("document.querySelector('#source-view').getBoundingClientRect().width")
            image = page.evaluate("document.querySelector('#source-view .page-image').getBoundingClientRect().width")
            assert width <= 390 and image <= 390 and page.evaluate("document.documentElement.scrollWidth") <= 390
            (shown,) = page.evaluate(MEASURE)
            assert shown["rel"] == pytest.approx(box[1:], abs=0.006) and shown["dark"] > 20
            assert outside_the_screen(page) == []
            screenshot(page, "source-view-phone")
            # zoom in on a phone: the page is drawn 2x as wide and scrolls; the highlight stays on its line
            view.locator(".source-zoom-in").click()
            view.locator(".source-zoom-in").click()
            expect(view.locator(".page-frame.zoomed.loaded")).to_have_count(1)
            zoomed = page.evaluate("document.querySelector('#source-view .page-image').getBoundingClientRect().width")
            assert zoomed == pytest.approx(2 * image, abs=2)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the view scrolls, not the page
            (shown,) = page.evaluate(MEASURE)
            assert shown["rel"] == pytest.approx(box[1:], abs=0.004) and shown["dark"] > 100
            expect(view.locator(".source-full")).to_have_attribute(
                "href", f"/api/documents/{reference['document_id']}/pages/2?width=1600")
            screenshot(page, "source-view-phone-zoomed")
            view.locator(".source-zoom-out").click()
            view.locator(".source-zoom-out").click()
            expect(view.locator(".source-zoom-out")).to_be_disabled()
            expect(view.locator(".page-frame.zoomed")).to_have_count(0)
            view.locator(".source-close").click()
            expect(view).to_be_hidden()

            # the smallest phones (320 px): the page chrome wraps onto lines of its own and
            # nothing of it reaches past the screen's edge; the page image fits the width
            page.set_viewport_size(PHONE_320)
            page.locator(".message.assistant .text button.cite").first.click()
            expect(view.locator(".page-frame.loaded")).to_have_count(1)
            assert outside_the_screen(page) == []
            assert page.evaluate("document.querySelector('#source-view .page-image').getBoundingClientRect().width") <= 320
            (shown,) = page.evaluate(MEASURE)
            assert shown["rel"] == pytest.approx(box[1:], abs=0.006) and shown["dark"] > 20
            screenshot(page, "source-view-phone-320")
            view.locator(".source-close").click()
            expect(view).to_be_hidden()
        # one folder per file version; pages at the widths the screens asked for (device pixel ratio 1)
        assert sorted(p.name for p in next(cache.iterdir()).iterdir()) == ["1-1200.jpg", "2-1200.jpg", "2-480.jpg", "2-800.jpg"]

        # bob may not query wspapers: its chunk, page and file are the same 404 as a missing one
        with browser_page() as page:
            sign_in(page, server, world.bob)
            chunk_id, document_id = chunk["chunk_id"], reference["document_id"]
            for url, name, number in [(f"/api/chunks/{chunk_id}/source", "chunk", chunk_id),
                                      (f"/api/documents/{document_id}/pages/2", "document", document_id),
                                      (f"/api/documents/{document_id}/file", "document", document_id)]:
                response = page.request.get(f"{server.url}{url}")
                assert (response.status, response.json()) == (
                    404, {"error": {"code": "not_found", "message": f"no {name} {number}"}})
            page.goto(f"{server.url}/api/chunks/{chunk_id + 100000}/source")
            assert json.loads(page.locator("body").inner_text()) == {
                "error": {"code": "not_found", "message": f"no chunk {chunk_id + 100000}"}}
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()
    shutil.rmtree(cache, ignore_errors=True)


PHONE_320 = {"width": 320, "height": 640}


def outside_the_screen(page) -> list[str]:
    """The source view's chrome (title, file, buttons, links, status) that does not fit the
    screen's width or scrolls sideways: "<class>: <left>-<right> of <width>" each ([] = fits)."""
    return page.evaluate("""() => {
      const width = document.documentElement.clientWidth, out = [];
      if (document.documentElement.scrollWidth > width) out.push(`page: ${document.documentElement.scrollWidth}`);
      const view = document.querySelector('#source-view');
      for (const node of [view, ...view.querySelectorAll('.source-head, .source-bar, .source-head *, .source-bar *')]) {
        if (node.hidden || !node.getClientRects().length) continue;
        const r = node.getBoundingClientRect();
        if (r.left < 0 || r.right > width + 0.5 || node.scrollWidth > node.clientWidth + 1 && node.clientWidth) {
          out.push(`${node.className || node.tagName}: ${Math.round(r.left)}-${Math.round(r.right)} of ${width}`);
        }
      }
      return out;
    }""")


def chunk_boxes(page, chunk_id: int) -> list:
    return page.evaluate(f"fetch('/api/chunks/{chunk_id}/source').then((r) => r.json()).then((j) => j.boxes)")


@pytest.fixture
def word_manual(world, tmp_path):
    """manual.docx (tests/test_source_view.py's lab manual, made with python-docx)
    ingested as the committed domain ``wsword``, open to GROUP only."""
    from .test_source_view import lab_manual

    root = tmp_path / "wsword"
    root.mkdir()
    lab_manual(root / "manual.docx")
    with group_domain(root, "wsword", "Lab manual: reagents, their suppliers, safety."):
        yield root


def test_a_word_citation_opens_its_converted_text_with_the_quoted_lines_and_its_table_renders(
        world, word_manual, tmp_path):
    """A .docx citation had no "show in source" view, and its table showed as raw pipes."""
    frames: list[dict] = []
    with LiveDaphne(tmp_path / "daphne.log") as server, browser_page() as page:
        page.on("websocket", lambda ws: ws.on("framereceived", lambda data: frames.append(json.loads(data))))
        sign_in(page, server, world.alice)
        page.get_by_label("wsword").check()
        page.get_by_label("Your question").fill("Which supplier sells Enzyme B?")
        page.get_by_label("Your question").press("Enter")
        expect(page.locator(".message.assistant.streaming")).to_have_count(0)
        final = next(f for f in frames if f["type"] == "answer")
        (reference,) = next(f for f in frames if f["type"] == "references")["references"]
        chunk = reference["chunks"][0]
        assert (reference["file_name"], chunk["lines"], reference["markers"][0]["chunk_id"]) == (
            "manual.docx", [5, 12], chunk["chunk_id"])
        # the asked row is quoted under its header and renders as a table, its cells
        # whole (a "|" inside one included); the other row is not quoted
        table = page.locator(".message.assistant .text table")
        expect(table.locator("th")).to_have_text(["Reagent", "Amount", "Supplier"])
        expect(table.locator("td")).to_have_text(["Enzyme B", "2 µl", "Beta | Labs"])
        expect(page.locator(".source-open")).to_have_text(["Show in source · lines 5–12"])
        # [1] opens the section of the converted text, the quoted lines marked (the
        # separator row holds no word); the file shown is the original .docx
        page.locator(".message.assistant .text button.cite").first.click()
        view = page.locator("#source-view")
        expect(view.locator(".source-text")).to_have_count(1)
        expect(view.locator(".source-file")).to_have_text("wsword · manual.docx · Lab manual > Reagents")
        expect(view.locator(".source-where")).to_have_text("lines 5–12 · quoted passage (lines 7–10) highlighted")
        lines = view.locator(".source-line")
        expect(lines).to_have_count(10)
        assert lines.evaluate_all("(ls) => ls.map((l) => l.dataset.line)") == [str(n) for n in range(3, 13)]
        expect(lines.first).to_have_text("3## Reagents")
        expect(view.locator('.source-line[data-line="10"]')).to_have_text("10| Enzyme B | 2 µl | Beta \\| Labs |")
        marks = view.locator("mark.source-line")
        assert marks.evaluate_all("(ms) => ms.map((m) => m.dataset.line)") == ["7", "10"]
        screenshot(page, "source-view-word")
        href = view.locator(".source-download").get_attribute("href")
        assert page.request.get(f"{server.url}{href}").body() == (word_manual / "manual.docx").read_bytes()
        page.keyboard.press("Escape")
        expect(view).to_be_hidden()
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()
