"""The source view's endpoints (docs/api.md, "The source view") with the Django test
client against real Postgres: where a chunk is, PDF pages as cached JPEGs whose
highlight boxes lie over printed text, the original file, a text source's section;
access exactly like references (forbidden = the same 404 as missing), files only from
where ingestion stored them."""

from __future__ import annotations

import io
import shutil

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from PIL import Image

from domains import pdf_quotes
from domains.models import Chunk, Document, Domain
from ingestion.runs.ingest import ingest

from .pdf_factory import paper, strokes
from .test_provenance import MARKDOWN

pytestmark = pytest.mark.django_db


@pytest.fixture
def sources(tmp_path, settings):
    settings.KLEA_PAGE_CACHE_DIR = tmp_path / "page-cache"
    folder = tmp_path / "lab"
    folder.mkdir()
    paper(folder / "paper.pdf")
    (folder / "channels.md").write_text(MARKDOWN)
    domain = Domain.objects.create(name="lab", description="Lab papers on neurons.")
    group = Group.objects.create(name="lab-members")
    domain.allowed_groups.add(group)
    ingest(folder, "lab-store", "lab", mirror=True)
    alice = User.objects.create_user("alice")
    alice.groups.add(group)
    User.objects.create_user("bob")
    return folder


def client_for(username: str | None) -> Client:
    client = Client()
    if username:
        client.force_login(User.objects.get(username=username))
    return client


def chunk_of(text: str) -> Chunk:
    return Chunk.objects.get(store__name="lab-store", text=text)


def test_a_pdf_chunk_opens_its_page_with_the_highlight_over_its_line(sources):
    chunk = chunk_of("Firing rates doubled after stimulation.")
    document = chunk.document
    alice = client_for("alice")
    info = alice.get(f"/api/chunks/{chunk.pk}/source").json()
    assert info == {
        "chunk_id": chunk.pk, "document_id": document.pk, "file_name": "paper.pdf",
        "title": "Spiking neurons in cortex", "domain": "lab", "heading_chain": "3 Results",
        "text": "Firing rates doubled after stimulation.", "kind": "pdf", "pages": [2, 2], "page_count": 2,
        "boxes": chunk.provenance["boxes"], "quoted": [], "lines": None, "anchor": "", "section": None,
        "unavailable": None,
        "page_url": f"/api/documents/{document.pk}/pages/", "file_url": f"/api/documents/{document.pk}/file",
    }
    (box,) = info["boxes"]
    assert box[0] == 2

    first = alice.get(f"/api/documents/{document.pk}/pages/2?width=700")
    assert (first.status_code, first["Content-Type"], first["X-Klea-Page-Cache"]) == (200, "image/jpeg", "miss")
    again = alice.get(f"/api/documents/{document.pk}/pages/2?width=800")
    assert (again["X-Klea-Page-Cache"], again.content) == ("hit", first.content)
    image = Image.open(io.BytesIO(first.content)).convert("L")
    assert image.width == 800 and image.height == round(800 * 842 / 595.3)
    # under the highlight: printed text (dark pixels); the same box one line lower: blank paper
    _, left, top, right, bottom = box
    w, h = image.size
    under = image.crop((int(left * w), int(top * h), int(right * w), int(bottom * h)))
    below = image.crop((int(left * w), int((2 * bottom - top) * h), int(right * w), int((3 * bottom - 2 * top) * h)))
    assert under.getextrema()[0] < 100 and sum(under.histogram()[:128]) > 100
    assert below.getextrema()[0] > 200

    assert alice.get(f"/api/documents/{document.pk}/pages/3").json() == {
        "error": {"code": "not_found", "message": "paper.pdf has pages 1 to 2, not 3"}}
    assert alice.get(f"/api/documents/{document.pk}/pages/1?width=wide").status_code == 400
    download = alice.get(f"/api/documents/{document.pk}/file")
    assert download["Content-Disposition"] == 'attachment; filename="paper.pdf"'
    assert b"".join(download.streaming_content) == (sources / "paper.pdf").read_bytes()


INTRODUCTION = ("Neurons communicate through synapses and their membrane potential rises when sodium channels "
                "open. This is the classic description of excitability in the cortex.")


def test_a_quoted_passage_of_a_pdf_chunk_is_located_on_the_text_layer_to_the_character(sources):
    pdf_quotes._cached_layer.cache_clear()  # as in a fresh process
    chunk = chunk_of(INTRODUCTION)
    lines = chunk.provenance["boxes"]  # four printed lines; "descrip-" / "tion" across the last two
    assert [box[0] for box in lines] == [1, 1, 1, 1]
    alice = client_for("alice")

    def quoted(*passages: str) -> list:
        return alice.get(f"/api/chunks/{chunk.pk}/source", {"quote": list(passages)}).json()["quoted"]

    # the second sentence: from the "T" of "This" (mid-line three; the glyph's own edge, as
    # reportlab set it: 72 pt + the width of "channels open. " in Helvetica 10 = 0.2396 of
    # the page) to "cortex." (the end of line four); the word hyphenated across them found whole
    second = quoted("This is the classic description of excitability in the cortex.")
    assert second == [[1, 0.2398, 0.3039, 0.4348, 0.3148], lines[3]]
    # the first sentence: lines one and two whole, line three up to the stop after "open"
    # (its advance ends at 0.2349, its ink a little before)
    first = quoted("Neurons communicate through synapses and their membrane potential rises when sodium "
                   "channels open.")
    assert first == [lines[0], lines[1], [1, 0.1216, 0.3039, 0.2334, 0.3148]]
    # both: every line whole; a passage given as Markdown reads the same
    assert quoted("**Neurons** communicate through synapses and their membrane potential rises when sodium "
                  "channels open.", "This is the classic description of excitability in the cortex.") == [
        lines[0], lines[1], [1, 0.1216, 0.3039, 0.4348, 0.3148], lines[3]]
    # not on the page, or no passage: nothing located (the view highlights the chunk)
    assert quoted("Firing rates doubled after stimulation.") == []
    assert quoted() == [] and quoted("  ") == []
    # the page's text layer was read once for the four quotes located on it (kept by the
    # file's content hash)
    cache = pdf_quotes._cached_layer.cache_info()
    assert (cache.misses, cache.hits, cache.currsize) == (1, 3, 1)
    # a text chunk's passages are found in the browser: the server locates none
    text = chunk_of("- alpha rises\n- beta falls")
    assert alice.get(f"/api/chunks/{text.pk}/source", {"quote": "alpha rises"}).json()["quoted"] == []


def test_a_document_cited_as_a_whole_opens_at_its_first_page_or_the_top_of_its_file(sources):
    pdf = Document.objects.get(store__name="lab-store", file_name="paper.pdf")
    markdown = Document.objects.get(store__name="lab-store", file_name="channels.md")
    alice = client_for("alice")
    assert alice.get(f"/api/documents/{pdf.pk}/source").json() == {
        "chunk_id": None, "document_id": pdf.pk, "file_name": "paper.pdf", "title": "Spiking neurons in cortex",
        "domain": "lab", "heading_chain": "", "text": "", "kind": "pdf", "pages": [1, 1], "page_count": 2,
        "boxes": [], "quoted": [], "lines": None, "anchor": "", "section": None, "unavailable": None,
        "page_url": f"/api/documents/{pdf.pk}/pages/", "file_url": f"/api/documents/{pdf.pk}/file",
    }
    info = alice.get(f"/api/documents/{markdown.pk}/source").json()
    assert (info["kind"], info["pages"], info["page_url"]) == ("text", None, None)
    assert info["section"] == {"first": 1, "last": len(MARKDOWN.splitlines()), "lines": MARKDOWN.splitlines(),
                               "highlight": None}
    # access as for every source URL: bob may not query "lab"
    response = client_for("bob").get(f"/api/documents/{pdf.pk}/source")
    assert (response.status_code, response.json()) == (
        404, {"error": {"code": "not_found", "message": f"no document {pdf.pk}"}})
    (sources / "channels.md").write_text("edited")
    assert alice.get(f"/api/documents/{markdown.pk}/source").json()["unavailable"] == {
        "code": "source_changed", "message": "channels.md: the file changed since it was ingested; ingest it again"}


def test_a_text_chunk_opens_its_section_with_the_passage_highlighted(sources):
    chunk = chunk_of("- alpha rises\n- beta falls")
    info = client_for("alice").get(f"/api/chunks/{chunk.pk}/source").json()
    assert (info["kind"], info["lines"], info["anchor"], info["page_url"]) == ("text", [12, 13], "rate-equations", None)
    assert info["section"] == {
        "first": 10, "last": 13, "lines": ["## Rate equations", "", "- alpha rises", "- beta falls"],
        "highlight": [12, 13],
    }


def test_a_user_who_may_not_query_the_domain_gets_the_same_404_as_for_a_missing_id(sources):
    chunk = chunk_of("Firing rates doubled after stimulation.")
    document_id = chunk.document_id
    missing_chunk, missing_document = Chunk.objects.order_by("-pk").first().pk + 1, Document.objects.order_by("-pk").first().pk + 1
    bob = client_for("bob")
    for url, missing, name in [
        (f"/api/chunks/{chunk.pk}/source", f"/api/chunks/{missing_chunk}/source", "chunk"),
        (f"/api/documents/{document_id}/pages/1", f"/api/documents/{missing_document}/pages/1", "document"),
        (f"/api/documents/{document_id}/file", f"/api/documents/{missing_document}/file", "document"),
    ]:
        forbidden, absent = bob.get(url), bob.get(missing)
        assert (forbidden.status_code, absent.status_code) == (404, 404)
        number = url.split("/")[3]
        assert forbidden.json() == {"error": {"code": "not_found", "message": f"no {name} {number}"}}
        assert absent.json()["error"]["message"] == f"no {name} {missing.split('/')[3]}"
    assert client_for(None).get(f"/api/chunks/{chunk.pk}/source").status_code == 401
    assert client_for("alice").post(f"/api/chunks/{chunk.pk}/source").status_code == 405


def test_a_document_that_failed_to_ingest_is_no_source_its_file_is_404(sources):
    (sources / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a PDF")
    ingest(sources, "lab-store", "lab", mirror=True)
    broken = Document.objects.get(store__name="lab-store", file_name="broken.pdf")
    assert (broken.status, broken.chunks.count()) == (Document.Status.FAILED, 0)
    alice = client_for("alice")
    for url in (f"/api/documents/{broken.pk}/file", f"/api/documents/{broken.pk}/pages/1"):
        response = alice.get(url)
        assert (response.status_code, response.json()) == (
            404, {"error": {"code": "not_found", "message": f"no document {broken.pk}"}})
    stored = Document.objects.get(store__name="lab-store", file_name="channels.md")
    response = alice.get(f"/api/documents/{stored.pk}/file")
    assert (response.status_code, b"".join(response.streaming_content)) == (200, MARKDOWN.encode())


def test_a_downloaded_file_is_named_without_bidi_controls_or_invisible_characters(sources):
    """``notes<U+202E>dm.exe`` reads ``notesexe.md`` on screen (the chat page drops the
    control, the browser's download bar and file manager did not): saved as
    ``notesdm.exe``."""
    (sources / "notes\u202edm.exe.md").write_text("# Notes\n\nAbout axons.\n", encoding="utf-8")
    ingest(sources, "lab-store", "lab", mirror=True)
    document = Document.objects.get(store__name="lab-store", file_name="notes\u202edm.exe.md")
    download = client_for("alice").get(f"/api/documents/{document.pk}/file")
    assert download["Content-Disposition"] == 'attachment; filename="notesdm.exe.md"'


def test_a_changed_or_missing_file_is_said_so_and_cached_pages_stay_those_of_the_ingested_file(sources):
    chunk = chunk_of("Firing rates doubled after stimulation.")
    document = chunk.document
    alice = client_for("alice")
    cached = alice.get(f"/api/documents/{document.pk}/pages/2").content
    quote = {"quote": "Firing rates doubled"}
    assert alice.get(f"/api/chunks/{chunk.pk}/source", quote).json()["quoted"] == [[2, 0.1224, 0.1303, 0.2684, 0.1416]]
    with (sources / "paper.pdf").open("ab") as fh:
        fh.write(b"\n% edited\n")
    assert alice.get(f"/api/documents/{document.pk}/pages/2").content == cached  # the ingested version's page
    assert alice.get(f"/api/documents/{document.pk}/pages/1").json() == {"error": {
        "code": "source_changed", "message": "paper.pdf: the file changed since it was ingested; ingest it again"}}
    # a quote is not located on the text layer kept of the ingested file either
    info = alice.get(f"/api/chunks/{chunk.pk}/source", quote).json()
    assert (info["quoted"], info["unavailable"]) == ([], {
        "code": "source_changed", "message": "paper.pdf: the file changed since it was ingested; ingest it again"})
    # the download serves only the ingested bytes, never what now sits at the path
    # (e.g. a link to a file outside the stores put there after ingestion)
    download = alice.get(f"/api/documents/{document.pk}/file")
    assert (download.status_code, download.json()) == (410, {"error": {
        "code": "source_changed", "message": "paper.pdf: the file changed since it was ingested; ingest it again"}})
    shutil.move(sources / "paper.pdf", sources.parent / "elsewhere.pdf")
    info = alice.get(f"/api/chunks/{chunk.pk}/source").json()
    assert info["unavailable"] == {
        "code": "source_missing", "message": "paper.pdf: the source file is no longer where it was ingested"}
    assert alice.get(f"/api/documents/{document.pk}/file").status_code == 410


def test_a_page_pdfium_cannot_draw_in_time_is_stopped_and_the_next_page_is_drawn(sources, settings):
    """pdfium drew a page of a 195 KB file stroking 2.5 million lines for minutes, in the
    server process, holding every other page view of it: now it draws in a child process
    that is stopped after KLEA_PAGE_TIMEOUT seconds."""
    strokes(sources / "strokes.pdf", 200_000)
    ingest(sources, "lab-store", "lab", mirror=True)
    stroked = Document.objects.get(store__name="lab-store", file_name="strokes.pdf")
    paper_pdf = Document.objects.get(store__name="lab-store", file_name="paper.pdf")
    settings.KLEA_PAGE_TIMEOUT = 0.5
    alice = client_for("alice")
    response = alice.get(f"/api/documents/{stroked.pk}/pages/1")
    assert (response.status_code, response.json()) == (422, {"error": {"code": "page_too_complex", "message": (
        "strokes.pdf: page 1 took pdfium longer than 0.5 s (KLEA_PAGE_TIMEOUT) and was stopped")}})
    settings.KLEA_PAGE_TIMEOUT = 30
    page = alice.get(f"/api/documents/{paper_pdf.pk}/pages/1?width=480")
    assert (page.status_code, page["X-Klea-Page-Cache"], Image.open(io.BytesIO(page.content)).width) == (200, "miss", 480)


def test_the_chunk_admin_lists_where_each_chunk_is_and_shows_its_provenance_read_only(sources):
    admin = Client()
    admin.force_login(User.objects.create_superuser("root"))
    listing = admin.get("/admin/domains/chunk/?store__id__exact=%d" % chunk_of("Firing rates doubled after stimulation.").store_id)
    assert listing.status_code == 200
    cells = listing.content.decode()
    assert '<td class="field-where">p. 2</td>' in cells and '<td class="field-where">lines 12–13</td>' in cells
    page = admin.get(f"/admin/domains/chunk/{chunk_of('Firing rates doubled after stimulation.').pk}/change/")
    assert 'name="provenance"' not in page.content.decode()  # shown, not editable


def lab_manual(path):
    """A Word document made with python-docx: two sections, a table, a list."""
    import docx

    document = docx.Document()
    document.add_heading("Lab manual", 0)
    document.add_heading("Reagents", 1)
    document.add_paragraph("The reagents used in the assay are listed below.")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Reagent", "Amount", "Supplier"], ["Buffer A", "10 ml", "Acme"],
                             ["Enzyme B", "2 µl", "Beta | Labs"]]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    document.add_paragraph("Mix them at room temperature.")
    document.add_heading("Safety", 1)
    document.add_paragraph("Wear gloves.")
    for item in ("Goggles on", "Coat closed"):
        document.add_paragraph(item, style="List Bullet")
    document.save(path)
    return path


# lab_manual's converted text, as the source view numbers its lines
LAB_MANUAL = [
    "# Lab manual", "", "## Reagents", "", "The reagents used in the assay are listed below.", "",
    "| Reagent | Amount | Supplier |", "| --- | --- | --- |", "| Buffer A | 10 ml | Acme |",
    "| Enzyme B | 2 µl | Beta \\| Labs |", "", "Mix them at room temperature.", "", "## Safety", "",
    "Wear gloves.", "", "- Goggles on", "- Coat closed",
]


def test_a_word_chunk_opens_its_section_of_the_converted_text(sources):
    """A .docx has no text lines of its own: its chunks record their lines in the text it
    was converted to, which the source view shows (what was ingested: the file may go)."""
    lab_manual(sources / "manual.docx")
    ingest(sources, "lab-store", "lab", mirror=True)
    safety = chunk_of("Wear gloves.\n\n- Goggles on\n- Coat closed")
    reagents = Chunk.objects.get(document=safety.document, headings=["Lab manual", "Reagents"])
    assert (reagents.provenance, safety.provenance) == ({"lines": [5, 12]}, {"lines": [16, 19]})
    (sources / "manual.docx").unlink()
    alice = client_for("alice")
    info = alice.get(f"/api/chunks/{safety.pk}/source").json()
    assert (info["kind"], info["lines"], info["page_url"], info["unavailable"]) == ("text", [16, 19], None, None)
    assert info["section"] == {"first": 14, "last": 19, "lines": LAB_MANUAL[13:], "highlight": [16, 19]}
    info = alice.get(f"/api/chunks/{reagents.pk}/source").json()
    assert info["section"] == {"first": 3, "last": 12, "lines": LAB_MANUAL[2:12], "highlight": [5, 12]}
    whole = alice.get(f"/api/documents/{safety.document_id}/source").json()
    assert whole["section"] == {"first": 1, "last": 19, "lines": LAB_MANUAL, "highlight": None}
    assert client_for("bob").get(f"/api/chunks/{safety.pk}/source").status_code == 404


def test_converted_text_heads_each_change_of_chain_and_gives_each_chunk_its_lines():
    from domains.sources import converted_text

    lines, spans = converted_text([
        (["Manual", "Setup"], "Calibrate first.\n\n- Use silver wire."), (["Manual", "Setup", "Electrodes"], "Chlorided."),
        (["Manual", "Setup"], "Then record."), (["Manual", "Safety"], "Wear gloves."), ([], "Loose text."),
    ])
    assert lines == ["# Manual", "", "## Setup", "", "Calibrate first.", "", "- Use silver wire.", "",
                     "### Electrodes", "", "Chlorided.", "",
                     "## Setup", "", "Then record.", "",  # back under Setup: its heading again
                     "## Safety", "", "Wear gloves.", "", "Loose text."]
    assert spans == [(5, 7), (11, 11), (15, 15), (19, 19), (21, 21)]
