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

from domains.models import Chunk, Document, Domain
from ingestion.runs.ingest import ingest

from .pdf_factory import paper
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
        "boxes": chunk.provenance["boxes"], "lines": None, "anchor": "", "section": None, "unavailable": None,
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


def test_a_changed_or_missing_file_is_said_so_and_cached_pages_stay_those_of_the_ingested_file(sources):
    chunk = chunk_of("Firing rates doubled after stimulation.")
    document = chunk.document
    alice = client_for("alice")
    cached = alice.get(f"/api/documents/{document.pk}/pages/2").content
    with (sources / "paper.pdf").open("ab") as fh:
        fh.write(b"\n% edited\n")
    assert alice.get(f"/api/documents/{document.pk}/pages/2").content == cached  # the ingested version's page
    assert alice.get(f"/api/documents/{document.pk}/pages/1").json() == {"error": {
        "code": "source_changed", "message": "paper.pdf: the file changed since it was ingested; ingest it again"}}
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


def test_the_chunk_admin_lists_where_each_chunk_is_and_shows_its_provenance_read_only(sources):
    admin = Client()
    admin.force_login(User.objects.create_superuser("root"))
    listing = admin.get("/admin/domains/chunk/?store__id__exact=%d" % chunk_of("Firing rates doubled after stimulation.").store_id)
    assert listing.status_code == 200
    cells = listing.content.decode()
    assert '<td class="field-where">p. 2</td>' in cells and '<td class="field-where">lines 12–13</td>' in cells
    page = admin.get(f"/admin/domains/chunk/{chunk_of('Firing rates doubled after stimulation.').pk}/change/")
    assert 'name="provenance"' not in page.content.decode()  # shown, not editable
