"""Dense retrieval on hand-made vectors: order, minimum relevance, filtered HNSW returns k,
the ef_search rule and its setting reaching the HNSW statement."""

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from domains.embeddings import EmbeddingError
from domains.models import Chunk, Document, Domain, Store
from domains.retrieval import FieldSpec, compile_filter, vector_search
from domains.retrieval import vector as vector_module
from domains.retrieval.vector import hnsw_ef_search

pytestmark = pytest.mark.django_db


def unit(*values):
    v = np.zeros(384, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


@pytest.fixture
def tiny_store(db):
    domain = Domain.objects.create(name="tiny", description="tiny")
    store = Store.objects.create(name="tiny-store", domain=domain)
    doc = Document.objects.create(store=store, file_name="t.md")
    rows = [
        ("Alpha about neurons", unit(1, 0)),
        ("Beta about synapses", unit(1, 1)),
        ("Gamma about arrays", unit(0, 1)),
        ("Alpha about neurons", unit(-1, 0.1)),  # same text, other vector: kept apart
    ]
    ids = [
        Chunk.objects.create(store=store, document=doc, ordinal=i, text=t, embedding=v).id
        for i, (t, v) in enumerate(rows)
    ]
    return store, ids


def test_orders_by_cosine_and_applies_minimum(tiny_store):
    store, ids = tiny_store
    result = vector_search(store.id, unit(1, 0), k=10, min_relevance=0.15)
    assert result.strategy == "exact"
    assert [cid for cid, _ in result.hits] == [ids[0], ids[1]]
    assert [round(rel, 6) for _, rel in result.hits] == [1.0, round(1 / np.sqrt(2), 6)]
    everything = vector_search(store.id, unit(1, 0), k=10, min_relevance=-1.0).hits
    assert [cid for cid, _ in everything] == [ids[0], ids[1], ids[2], ids[3]]
    assert round(everything[-1][1], 6) == round(float(-1 / np.sqrt(1.01)), 6)


@pytest.mark.parametrize(
    "vector, message",
    [
        (np.ones(3, dtype=np.float32), r"query embedding has shape \(3,\); expected \(384,\)"),
        (np.zeros(384, dtype=np.float32), "query embedding is all zeros"),
        (np.full(384, np.nan, dtype=np.float32), "query embedding contains NaN or infinite values"),
    ],
)
def test_bad_query_vectors_are_clear_errors(tiny_store, vector, message):
    store, _ = tiny_store
    with pytest.raises(EmbeddingError, match=message):
        vector_search(store.id, vector, k=1, min_relevance=0)


def test_zero_vectors_are_refused_by_the_database(tiny_store):
    store, _ = tiny_store
    doc = Document.objects.get(store=store)
    with pytest.raises(IntegrityError, match="chunk_embedding_not_zero"), transaction.atomic():
        Chunk.objects.create(store=store, document=doc, ordinal=9, text="zero", embedding=np.zeros(384))
    chunk = Chunk(store=store, document=doc, ordinal=9, text="zero", embedding=[0.0] * 384)
    with pytest.raises(ValidationError, match="chunk_embedding_not_zero"):
        chunk.full_clean()
    chunk.embedding = unit(1).tolist()
    chunk.full_clean()


@pytest.fixture
def two_stores(db):
    """Two stores of 300 chunks each on random directions; 12 chunks of store A are tagged."""
    rng = np.random.default_rng(3)
    domain = Domain.objects.create(name="big", description="big")
    stores, tagged = [], []
    for name in ("store-a", "store-b"):
        store = Store.objects.create(name=name, domain=domain)
        doc = Document.objects.create(store=store, file_name="x.md")
        vectors = rng.normal(size=(300, 384)).astype(np.float32)
        chunks = Chunk.objects.bulk_create(
            Chunk(
                store=store, document=doc, ordinal=i, text=f"chunk {i}", embedding=v / np.linalg.norm(v),
                metadata={"tag": "rare" if name == "store-a" and i % 25 == 0 else "common"},
            )
            for i, v in enumerate(vectors)
        )
        stores.append(store)
        if name == "store-a":
            tagged = [c.id for c in chunks if c.metadata["tag"] == "rare"]
    return stores, tagged


def test_filtered_hnsw_search_still_returns_k(two_stores):
    (store_a, _), tagged = two_stores
    where = compile_filter({"tag": "rare"}, [FieldSpec("tag", "string")])
    query = np.random.default_rng(11).normal(size=384).astype(np.float32)
    exact = vector_search(store_a.id, query, 10, -1.0, where=where, exact_max_rows=10**9)
    assert exact.strategy == "exact" and len(exact.hits) == 10
    assert {cid for cid, _ in exact.hits} <= set(tagged)
    # Forced onto HNSW: ~200 candidates hold ~4 tagged ones, so the engine falls back to
    # an exact scan of the filtered rows and still returns 10. The candidates grow with
    # the whole table (the HNSW index spans every store): with the session's committed
    # corpora beside these 600 rows, 10 tagged rows need more than HNSW_EF_MAX, and the
    # engine searches exactly at once.
    store_rows, total_rows = vector_module._row_counts(store_a.id)
    expected = "exact" if hnsw_ef_search(10, store_rows, total_rows, filtered=True) is None else "hnsw+exact"
    forced = vector_search(store_a.id, query, 10, -1.0, where=where, exact_max_rows=0)
    assert forced.strategy == expected
    assert forced.hits == exact.hits


def test_unfiltered_hnsw_search_on_a_store(two_stores):
    (store_a, store_b), _ = two_stores
    target = Chunk.objects.filter(store=store_a).order_by("ordinal")[5]
    query = np.asarray(target.embedding, dtype=np.float32)
    result = vector_search(store_a.id, query, 3, -1.0, exact_max_rows=0)
    assert result.strategy == "hnsw"
    assert result.hits[0] == (target.id, pytest.approx(1.0, abs=1e-6))
    assert len(result.hits) == 3
    assert all(Chunk.objects.get(id=cid).store_id == store_a.id for cid, _ in result.hits)
    # HNSW is approximate: ranks 2-3 among random directions (cosines ~0.1 apart by
    # 1e-3) may differ from exact search, but each relevance is the exact cosine.
    for cid, relevance in result.hits:
        vector = np.asarray(Chunk.objects.get(id=cid).embedding, dtype=np.float64)
        assert relevance == pytest.approx(float(vector @ query / np.linalg.norm(query)), abs=1e-6)
    assert [rel for _, rel in result.hits] == sorted((rel for _, rel in result.hits), reverse=True)
    assert vector_search(store_b.id, query, 3, -1.0, exact_max_rows=0).hits[0][0] != target.id


def test_empty_store_gives_nothing(db):
    domain = Domain.objects.create(name="empty", description="empty")
    store = Store.objects.create(name="empty-store", domain=domain)
    assert vector_search(store.id, unit(1), 5, 0.0).hits == []


@pytest.mark.parametrize(
    "k, store_rows, total_rows, filtered, ef",
    [
        (5, 10_000, 10_000, False, 100),  # the floor of tables up to 10k rows
        (5, 300, 600, True, 100),  # 5 x 4 / (0.5 x 0.5 for the filter) = 80 < the floor
        (10, 300, 600, True, 160),  # 10 x 4 / 0.25
        (30, 300, 600, True, 480),
        (50, 2_000, 10_000, False, 1000),  # k x OVERFETCH / 0.2
        (50, 10_001, 10_001, False, 200),  # the floor of tables of 10k-100k rows
        (50, 100_000, 100_000, False, 200),
        (150, 100_000, 100_000, False, 600),  # 150 x 4 / 1: above the floor
        (50, 100_001, 100_001, False, 600),  # the floor of tables of 100k-1M rows
        (50, 1_000_000, 1_000_000, False, 600),
        (50, 1_000_001, 1_000_001, False, 1000),  # beyond the measured sizes: the cap
        (10, 200_000, 1_000_000, True, 600),  # 10 x 4 / 0.1 = 400 < the floor
        (10, 100_000, 1_000_000, True, 800),  # 10 x 4 / 0.05, above the floor
        (10, 50_000, 1_000_000, True, None),  # 1,600 candidates: too selective, exact
        (50, 100_000, 1_000_000, False, None),
        (5, 2_000, 100_000, False, 1000),  # 5 x 4 / 0.02
        (5, 20_000, 100_000, False, 200),  # 100 wanted, the floor is more
    ],
)
def test_ef_search_rule(k, store_rows, total_rows, filtered, ef):
    assert hnsw_ef_search(k, store_rows, total_rows, filtered) == ef


@pytest.fixture
def ef_search_seen():
    """hnsw.ef_search as the session sees it when each HNSW statement runs (SHOW, same
    connection and transaction, just before the statement)."""
    seen = []

    def wrapper(execute, sql, params, many, context):
        if "ORDER BY embedding <=>" in sql:
            raw = context["cursor"].cursor
            raw.execute("SHOW hnsw.ef_search")
            seen.append(int(raw.fetchone()[0]))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield seen


def show_ef_search():
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.ef_search")
        return int(cursor.fetchone()[0])


def test_ef_search_reaches_the_hnsw_statement(two_stores, ef_search_seen, monkeypatch):
    (store_a, _), _ = two_stores
    where = compile_filter({"tag": "common"}, [FieldSpec("tag", "string")])
    query = np.random.default_rng(5).normal(size=384).astype(np.float32)
    # The rule reads the whole table's row count: alone, 600 rows; after other modules'
    # committed tests, more. Its values for this table are what must reach the session.
    store_rows, total_rows = vector_module._row_counts(store_a.id)
    assert store_rows == 300 and total_rows >= 600
    k = 30 if hnsw_ef_search(30, store_rows, total_rows, True) else 3  # 30: above the floor when alone
    expected = [hnsw_ef_search(3, store_rows, total_rows, False), hnsw_ef_search(k, store_rows, total_rows, True)]
    assert vector_search(store_a.id, query, 3, -1.0, exact_max_rows=0).strategy == "hnsw"
    assert vector_search(store_a.id, query, k, -1.0, where=where, exact_max_rows=0).strategy == "hnsw"
    # a floor of 300 up to 1,000 rows, 1,000 above (as a table of over 100k rows has)
    monkeypatch.setattr(vector_module, "HNSW_EF_FLOOR", ((100, 40), (1000, 300)))
    expected.append(hnsw_ef_search(3, store_rows, total_rows, False))
    assert vector_search(store_a.id, query, 3, -1.0, exact_max_rows=0).strategy == "hnsw"
    assert ef_search_seen == expected
    if total_rows == 600:  # the module alone: the figures of the rule's docstring
        assert expected == [100, 480, 300]
    assert show_ef_search() == 40  # transaction-local: the session's value is back


def _hnsw_options():
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'chunk_embedding_hnsw'")
        return cursor.fetchone()[0]


def test_hnsw_index_is_built_with_the_models_parameters():
    from domains.models import HNSW_EF_CONSTRUCTION, HNSW_M

    assert (HNSW_M, HNSW_EF_CONSTRUCTION) == (32, 200)
    assert _hnsw_options() == ["m=32", "ef_construction=200"]


def test_migration_0010_rebuilds_the_index_both_ways(tiny_store):
    import importlib

    migration = importlib.import_module("domains.migrations.0010_hnsw_denser_graph")
    store, ids = tiny_store
    with connection.cursor() as cursor:  # DDL is transactional: the test's rollback undoes it
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the fixture's deferred FK checks, done first
        migration.rebuild(cursor, migration.PREVIOUS_M, migration.PREVIOUS_EF_CONSTRUCTION)
        assert _hnsw_options() == ["m=16", "ef_construction=64"]
        migration.rebuild(cursor, migration.M, migration.EF_CONSTRUCTION)
        assert _hnsw_options() == ["m=32", "ef_construction=200"]
        # the rebuilt index serves nearest-neighbour queries
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN SELECT id FROM domains_chunk ORDER BY embedding <=> %s::vector LIMIT 5",
                       [vector_module.vector_literal(unit(1, 0))])
        assert "chunk_embedding_hnsw" in " ".join(row[0] for row in cursor.fetchall())
    assert vector_search(store.id, unit(1, 0), 1, -1.0, exact_max_rows=0).hits[0][0] == ids[0]


@pytest.mark.parametrize(
    "rows, m, current_kb, kb",
    [
        (0, 32, 1_048_576, 1_048_576),  # an empty table: the server's setting
        (100_000, 32, 1_048_576, 1_048_576),  # 351,562 kB fit in 1 GB
        (1_000_000, 32, 1_048_576, 3_515_625),  # 1M x 3,600 B
        (1_000_000, 16, 65_536, 2_539_062),  # 1M x 2,600 B
        (10_000_000, 32, 65_536, 8_388_608),  # capped at 8 GB
        (10_000_000, 32, 16_777_216, 16_777_216),  # never lowered
    ],
)
def test_migration_0010_build_memory(rows, m, current_kb, kb):
    import importlib

    migration = importlib.import_module("domains.migrations.0010_hnsw_denser_graph")
    assert migration.build_memory_kb(rows, m, current_kb) == kb
