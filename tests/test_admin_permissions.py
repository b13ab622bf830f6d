"""Admin permissions (docs/security.md): MCP secrets write-only and masked, every admin
action declares the permissions it needs, ingestion jobs and uploads limited to the
stores a staff user may manage, and an upload size limit. Real admin pages through
Django's test client."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chat.models import McpServer, McpTool
from domains.models import Chunk, Document, Domain, Store
from ingestion.models import IngestionJob
from ingestion.runs.jobs import start_job

pytestmark = pytest.mark.django_db
SECRET = "s3cret-token-value-77"
HEADER = "Bearer very-secret-header-88"


def staff(name: str, *codenames: str, groups=()) -> Client:
    user = User.objects.create_user(name, password=f"pw-{name}-123", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    user.groups.add(*groups)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def server(db):
    domain = Domain.objects.create(name="neuro", description="d")
    return McpServer.objects.create(domain=domain, name="lab", transport="stdio", command="/usr/bin/false",
                                    env={"LAB_TOKEN": SECRET}, headers={"Authorization": HEADER})


def test_a_view_only_user_sees_masked_secrets_and_cannot_fetch_tools(server):
    viewer = staff("viewer", "view_mcpserver")
    page = viewer.get(f"/admin/chat/mcpserver/{server.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200 and SECRET not in html and HEADER not in html
    assert "{&quot;LAB_TOKEN&quot;: &quot;[secret]&quot;}" in html
    assert "{&quot;Authorization&quot;: &quot;[secret]&quot;}" in html
    listing = viewer.get("/admin/chat/mcpserver/")
    assert listing.context["action_form"] is None  # no action offered: fetch needs "change"
    viewer.post("/admin/chat/mcpserver/", {"action": "fetch_tool_list", "_selected_action": [server.pk]})
    server.refresh_from_db()
    assert (server.tools_listed_at, McpTool.objects.count()) == (None, 0)  # the command never ran


def test_secrets_are_write_only_in_the_change_form(server):
    editor = staff("editor", "view_mcpserver", "change_mcpserver")
    html = editor.get(f"/admin/chat/mcpserver/{server.pk}/change/").content.decode()
    assert SECRET not in html and HEADER not in html and "[secret]" in html
    form = {"domain": server.domain_id, "name": "lab", "description": "", "active": "on", "transport": "stdio",
            "command": "/usr/bin/false", "args": "[]", "url": "",
            "env": json.dumps({"LAB_TOKEN": "[secret]", "NEW": "added-value-1"}),
            "headers": json.dumps({"Authorization": "Bearer replaced-value-99"}),
            "tools-TOTAL_FORMS": "0", "tools-INITIAL_FORMS": "0", "tools-MIN_NUM_FORMS": "0",
            "tools-MAX_NUM_FORMS": "1000"}
    response = editor.post(f"/admin/chat/mcpserver/{server.pk}/change/", form)
    assert response.status_code == 302
    server.refresh_from_db()
    assert (server.env, server.headers) == ({"LAB_TOKEN": SECRET, "NEW": "added-value-1"},
                                            {"Authorization": "Bearer replaced-value-99"})


def test_every_admin_action_declares_its_permissions():
    undeclared = [
        f"{type(model_admin).__name__}.{name}"
        for model_admin in admin.site._registry.values()
        for func, name, _ in model_admin._get_base_actions()
        if not getattr(func, "allowed_permissions", ())
    ]
    assert undeclared == []


def test_reapply_map_needs_the_change_permission(tmp_path):
    from ingestion.runs.ingest import ingest

    domain = Domain.objects.create(name="uploads", description="d")
    Store.objects.create(name="upload-store", domain=domain)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nText one.\n\n## B\n\nText two.\n", encoding="utf-8")
    ingest(tmp_path / "d", "upload-store", "uploads", mirror=True)
    document = Document.objects.get(file_name="a.md")
    document.metadata_entries.filter(heading_key="A > B").update(values={"year": 1990})
    viewer = staff("viewer", "view_document")
    viewer.post("/admin/domains/document/", {"action": "reapply_map", "_selected_action": [document.pk]})
    assert Chunk.objects.get(document=document, ordinal=1).year is None
    editor = staff("editor", "view_document", "change_document")
    editor.post("/admin/domains/document/", {"action": "reapply_map", "_selected_action": [document.pk]})
    assert Chunk.objects.get(document=document, ordinal=1).year == 1990


@pytest.fixture
def stores(db):
    lab = Group.objects.create(name="lab")
    open_domain = Domain.objects.create(name="open", description="d")
    secret_domain = Domain.objects.create(name="secret", description="d")
    secret_domain.allowed_groups.add(lab)
    return lab, Store.objects.create(name="open-store", domain=open_domain), Store.objects.create(
        name="secret-store", domain=secret_domain)


def test_job_pages_and_the_job_api_follow_store_access(stores):
    lab, open_store, secret_store = stores
    owner = User.objects.create_user("owner", is_staff=True, is_superuser=True)
    secret_job = start_job("build", 1, {}, store=secret_store, user=owner)
    open_job = start_job("build", 1, {}, store=open_store, user=owner)
    outsider = staff("outsider", "view_ingestionjob")
    member = staff("member", "view_ingestionjob", groups=[lab])
    ours = {open_store.pk, secret_store.pk}  # (other tests' committed stores may be listed too)
    listing = outsider.get("/admin/ingestion/ingestionjob/")
    assert [job.pk for job in listing.context["cl"].result_list if job.store_id in ours] == [open_job.pk]
    assert outsider.get(f"/admin/ingestion/ingestionjob/{secret_job.pk}/change/").status_code == 302  # "not found"
    assert (outsider.get(f"/api/jobs/{secret_job.pk}").status_code, outsider.get(f"/api/jobs/{open_job.pk}").status_code) == (
        404, 200)
    assert member.get(f"/api/jobs/{secret_job.pk}").status_code == 200
    assert sorted(job.pk for job in member.get("/admin/ingestion/ingestionjob/").context["cl"].result_list
                  if job.store_id in ours) == sorted([open_job.pk, secret_job.pk])


def test_stores_documents_map_entries_and_chunks_follow_store_access(stores):
    """A view permission on chunks let anyone on the staff read a restricted domain's texts
    in the admin; now these pages list what the job pages list, and their filters and
    choices name no other domain, store or document."""
    lab, open_store, secret_store = stores
    rows = {}
    for store in (open_store, secret_store):
        document = Document.objects.create(store=store, file_name=f"{store.name}.md", status=Document.Status.STORED)
        entry = document.metadata_entries.create(heading_key="DEFAULT", values={"title": f"{store.name} title"})
        chunk = Chunk.objects.create(store=store, document=document, ordinal=0, text=f"{store.name} text",
                                     headings=["H"], token_count=3)
        rows[store.name] = {"store": store.pk, "document": document.pk, "metadataentry": entry.pk, "chunk": chunk.pk}
    codenames = ("view_store", "view_document", "view_metadataentry", "view_chunk", "change_metadataentry")
    outsider = staff("outsider", *codenames)
    member = staff("member", *codenames, groups=[lab])
    ours = {model: {rows[name][model] for name in rows} for model in ("store", "document", "metadataentry", "chunk")}
    for model in ("store", "document", "metadataentry", "chunk"):
        # searched for this test's rows: other tests' committed rows may be listed too, over pages
        mine = {"q": "-store" if model == "store" else "-store.md"}
        listing = outsider.get(f"/admin/domains/{model}/", mine)
        assert [row.pk for row in listing.context["cl"].result_list if row.pk in ours[model]] == [
            rows["open-store"][model]], model
        assert "secret" not in listing.content.decode(), model  # not in the filters either
        assert outsider.get(f"/admin/domains/{model}/{rows['secret-store'][model]}/change/").status_code == 302
        assert sorted(row.pk for row in member.get(f"/admin/domains/{model}/", mine).context["cl"].result_list
                      if row.pk in ours[model]) == sorted([rows["open-store"][model], rows["secret-store"][model]]), model
    page = outsider.get(f"/admin/domains/metadataentry/{rows['open-store']['metadataentry']}/change/")
    choices = [document.file_name for document in page.context["adminform"].form.fields["document"].queryset]
    assert "open-store.md" in choices and "secret-store.md" not in choices  # (and other tests' open documents)


def test_uploads_are_limited_by_store_access_and_size(stores, settings, tmp_path):
    _, open_store, secret_store = stores
    settings.KLEA_UPLOAD_DIR = tmp_path / "uploads"
    uploader = staff("uploader", "add_document", "view_ingestionjob")
    page = uploader.get("/admin/ingestion/ingestionjob/upload/")
    offered = [s.name for s in page.context["adminform"].form.fields["store"].queryset]
    assert "open-store" in offered and "secret-store" not in offered  # (and other tests' open stores)
    assert ('open a domain under <a href="/admin/domains/domain/">Domains</a> and fill a row of its Stores'
            in page.content.decode())  # how to make the first store
    refused = uploader.post("/admin/ingestion/ingestionjob/upload/", {
        "store": secret_store.pk, "files": [SimpleUploadedFile("a.md", b"# A\n\nText.\n")], "max_tokens": 450,
        "ocr": "auto"})
    assert "Select a valid choice" in refused.content.decode()
    settings.KLEA_UPLOAD_MAX_BYTES = 1000
    big = uploader.post("/admin/ingestion/ingestionjob/upload/", {
        "store": open_store.pk, "files": [SimpleUploadedFile("big.md", b"# Big\n\n" + b"x" * 2000)],
        "max_tokens": 450, "ocr": "auto"}, follow=True)
    shown = [str(m) for m in big.context["messages"]]
    assert len(shown) == 1 and shown[0].startswith("The upload is ") and shown[0].endswith(
        " bytes; the limit is 1,000 bytes (KLEA_UPLOAD_MAX_BYTES).")
    assert IngestionJob.objects.filter(store__in=[open_store, secret_store]).count() == 0
    assert not (tmp_path / "uploads").exists()
