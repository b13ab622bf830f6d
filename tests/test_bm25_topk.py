"""BM25 over impact-ordered postings: the migration's rebuild, the pruned top-k against
the exhaustive query."""

import importlib

import pytest
from django.db import connection

from domains.models import Bm25Stats, Chunk, Document, Domain, Store
from domains.retrieval.bm25 import indexed_statistics, recomputed_statistics

pytestmark = pytest.mark.django_db

migration = importlib.import_module("domains.migrations.0007_bm25_impacts")


@pytest.fixture
def two_stores(db):
    domain = Domain.objects.create(name="topk", description="topk")
    stores = []
    for name, texts in (
        ("topk-a", ["neurons fire and fire", "synapses of neurons", "climate data data", "the and of"]),
        ("topk-b", ["neurons neurons neurons", "a much longer chunk about neurons, synapses, models and data"]),
    ):
        store = Store.objects.create(name=name, domain=domain, mode=Store.Mode.BM25)
        doc = Document.objects.create(store=store, file_name=f"{name}.md")
        Chunk.objects.bulk_create(Chunk(store=store, document=doc, ordinal=i, text=t) for i, t in enumerate(texts))
        stores.append(store)
    return stores


def test_first_statement_sets_the_reference_avgdl_and_later_ones_keep_it(two_stores):
    a, b = two_stores
    # topk-a: dl 3 (neuron, fire x2), 2, 3 (climat, data x2), 0 -> avgdl 2; topk-b: 3 and 7 (much, longer, chunk, neuron, synaps, model, data)
    assert Bm25Stats.objects.get(store=a).impact_avgdl == 2.0
    assert Bm25Stats.objects.get(store=b).impact_avgdl == 5.0
    doc = Document.objects.get(store=a)
    Chunk.objects.create(store=a, document=doc, ordinal=9, text="one two three four five six seven eight nine ten")
    stats = Bm25Stats.objects.get(store=a)
    assert (stats.chunk_count, stats.total_length, stats.impact_avgdl) == (5, 18, 2.0)
    assert indexed_statistics(a.id) == recomputed_statistics(a.id)


def test_impact_values(two_stores):
    """floor(32767 tf / (tf + 1.2 * 0.25 + 1.2 * 0.75 dl / avgdl_ref))."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT klea_bm25_impact(2, 3, 2.0), klea_bm25_impact(1, 1, 1.0), klea_bm25_impact(300, 9, 1.0)")
        assert cursor.fetchone() == (int(32767 * 2 / (2 + 0.3 + 0.9 * 3 / 2)), int(32767 / 2.2), 31874)  # 300 / 308.4


def test_migration_rebuild_and_its_reverse_keep_the_postings(two_stores):
    before = {s.id: indexed_statistics(s.id) for s in two_stores}
    with connection.cursor() as cursor:
        cursor.execute(migration.UNBUILD)
        cursor.execute("SELECT count(*) FROM domains_bm25posting")
        assert cursor.fetchone()[0] == sum(len(s.postings) for s in before.values())
        cursor.execute("UPDATE domains_bm25stats SET impact_avgdl = 1")
        cursor.execute(migration.SET_REFERENCE)
        cursor.execute(migration.REBUILD)
    assert [Bm25Stats.objects.get(store=s).impact_avgdl for s in two_stores] == [2.0, 5.0]
    for store in two_stores:
        assert indexed_statistics(store.id) == before[store.id] == recomputed_statistics(store.id)
