"""Models, database objects and the admin."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from domains.models import Chunk, Document, Domain, FilterField, Store
from ingestion.models import StagedFile


@pytest.mark.django_db
def test_database_has_pgvector_hnsw_index_and_search_vector_trigger():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        (version,) = cursor.fetchone()
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_hnsw'")
        (indexdef,) = cursor.fetchone()
    assert tuple(int(p) for p in version.split(".")[:2]) >= (0, 6)
    assert "USING hnsw (embedding vector_cosine_ops)" in indexdef
    assert "m='32'" in indexdef and "ef_construction='200'" in indexdef  # migration 0010

    domain = Domain.objects.create(name="d-trigger", description="d")
    store = Store.objects.create(name="s-trigger", domain=domain)
    document = Document.objects.create(store=store, file_name="a.md")
    chunk = Chunk.objects.create(
        store=store, document=document, ordinal=0, text="Neurons were firing", headings=["Spiking models"]
    )
    chunk.refresh_from_db()
    assert str(chunk.search_vector) == "'fire':5 'model':2 'neuron':3 'spike':1"
    chunk.text = "Synapses"
    chunk.save()
    chunk.refresh_from_db()
    assert str(chunk.search_vector) == "'model':2 'spike':1 'synaps':3"


@pytest.mark.django_db
def test_validation_names_what_is_wrong():
    domain = Domain(name="d-valid", description="d", default_k=6, k_max=4)
    with pytest.raises(ValidationError) as info:
        domain.full_clean()
    assert info.value.message_dict == {"k_max": ["k_max (4) must be at least default_k (6)."]}

    domain = Domain.objects.create(name="d-valid", description="d")
    field = FilterField(domain=domain, name="first name", value_type="string")
    with pytest.raises(ValidationError) as info:
        field.full_clean()
    assert info.value.message_dict["name"] == [
        "Filter field name must be an identifier: a letter or _ then letters, digits or _."
    ]

    Store.objects.create(name="dup-store", domain=domain)
    with pytest.raises(ValidationError) as info:
        Store(name="dup-store", domain=domain).full_clean()
    assert info.value.message_dict["name"] == ["Store with this Name already exists."]


@pytest.mark.django_db
def test_admin_pages_show_inlines_counts_and_errors(admin_client):
    domain = Domain.objects.create(name="d-admin", description="An admin test domain")
    FilterField.objects.create(domain=domain, name="year", value_type="int")
    store = Store.objects.create(name="s-admin", domain=domain)
    document = Document.objects.create(store=store, file_name="x.md", status=Document.Status.STORED)
    Chunk.objects.create(store=store, document=document, ordinal=0, text="hello")
    # a file that failed is no document of the store's totals: it is counted apart
    Document.objects.create(store=store, file_name="bad.pdf", status=Document.Status.FAILED, error="not a PDF")

    page = admin_client.get(f"/admin/domains/domain/{domain.pk}/change/").content.decode()
    assert 'name="filter_fields-0-name"' in page and 'value="year"' in page
    assert 'name="stores-0-name"' in page and 'value="s-admin"' in page
    listing = admin_client.get("/admin/domains/store/?q=s-admin").content.decode()
    assert '<td class="field-document_count">1</td>' in listing
    assert '<td class="field-not_stored_count">1</td>' in listing
    # the domain page's store row too
    assert re.search(r'<td class="field-document_count">\s*<p>1</p>.*?<td class="field-not_stored_count">\s*<p>1</p>',
                     page, re.S)
    assert '<td class="field-chunk_count">1</td>' in listing

    form = {
        "name": "d-admin",
        "description": "x",
        "active": "on",
        "default_k": "8",
        "k_max": "3",
        "k_inc": "1",
        "min_relevance": "0.15",
        "filter_fields-TOTAL_FORMS": "1",
        "filter_fields-INITIAL_FORMS": "0",
        "filter_fields-0-name": "not an identifier",
        "filter_fields-0-value_type": "string",
        "stores-TOTAL_FORMS": "0",
        "stores-INITIAL_FORMS": "0",
    }
    response = admin_client.post(f"/admin/domains/domain/{domain.pk}/change/", form)
    body = response.content.decode()
    assert response.status_code == 200
    assert "k_max (3) must be at least default_k (8)." in body
    assert "Filter field name must be an identifier" in body


def options(page: str, name: str) -> list[tuple[str, str]]:
    """(value, label) of each option of the select named ``name`` in an admin page."""
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S).group(1)
    return re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select)


@pytest.mark.django_db
def test_admin_choices_are_labelled_as_the_field_names_them(admin_client):
    """Labels say BM25 and OCR, not Django's title-cased "Bm25" and "Needs ocr"; the values stay."""
    domain = Domain.objects.create(name="d-labels", description="Labels")
    FilterField.objects.create(domain=domain, name="year", value_type="int")
    store = Store.objects.create(name="s-labels", domain=domain)
    document = Document.objects.create(store=store, file_name="scan.pdf", status=Document.Status.NEEDS_OCR)

    page = admin_client.get(f"/admin/domains/store/{store.pk}/change/").content.decode()
    assert options(page, "mode") == [("vector", "Vector (dense embeddings)"), ("bm25", "BM25 (keywords)"),
                                     ("both", "Both (vector and BM25, fused)")]
    page = admin_client.get(f"/admin/domains/domain/{domain.pk}/change/").content.decode()
    assert options(page, "filter_fields-0-value_type") == [
        ("string", "String"), ("int", "Integer"), ("float", "Number (float)"), ("list", "List")]
    assert options(page, "stores-0-mode")[1] == ("bm25", "BM25 (keywords)")
    page = admin_client.get(f"/admin/domains/document/{document.pk}/change/").content.decode()
    assert options(page, "status")[-1] == ("needs_ocr", "Needs OCR")
    assert [label for _, label in StagedFile.Status.choices] == ["Chunked", "Failed", "Needs OCR", "Skipped (no text)"]


@pytest.mark.django_db
def test_the_domain_form_sets_example_questions_and_fusion(admin_client):
    """Every setting a domain has is in its admin form: a domain made there gets its
    example questions and fusion without ``loaddomains`` (new-user trial)."""
    page = admin_client.get("/admin/domains/domain/add/").content.decode()
    for name in ("examples", "fusion", "fusion_alpha"):
        assert f'<div class="form-row field-{name}">' in page, name
    assert Domain._meta.get_field("examples").help_text in page
    assert options(page, "fusion") == [("rrf", "Weighted RRF (k = 5, BM25 x 1.5)"),
                                       ("convex", "Convex combination of normalised scores")]
    management = {f"{prefix}-{key}": value for prefix in ("filter_fields", "stores")
                  for key, value in (("TOTAL_FORMS", 0), ("INITIAL_FORMS", 0), ("MIN_NUM_FORMS", 0),
                                     ("MAX_NUM_FORMS", 1000))}
    response = admin_client.post("/admin/domains/domain/add/", {
        "name": "recipes", "description": "Cooking recipes", "active": "on",
        "examples": "How long does the pie bake?\n\n  Which fish is in aljotta?  ", "instructions": "",
        "default_k": 8, "k_max": 10, "k_inc": 1, "min_relevance": 0.15, "fusion": "convex", "fusion_alpha": 0.7,
        **management,
    })
    assert response.status_code == 302
    domain = Domain.objects.get(name="recipes")
    assert (domain.example_questions, domain.fusion, domain.fusion_alpha) == (
        ["How long does the pie bake?", "Which fish is in aljotta?"], "convex", 0.7)


@pytest.mark.django_db
def test_admin_requires_staff(client, django_user_model):
    assert client.get("/admin/").status_code == 302
    django_user_model.objects.create_user("plain", password="pw-123456")
    client.login(username="plain", password="pw-123456")
    assert client.get("/admin/").status_code == 302
