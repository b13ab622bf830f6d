"""First retrieval: RRF, keyword safety, vector search on hand-made vectors."""

import numpy as np
import pytest

from domains.embeddings import EmbeddingError
from domains.models import Chunk, Document, Domain, Store
from domains.retrieval import reciprocal_rank_fusion
from domains.retrieval.keyword import keyword_search, query_lexemes
from domains.retrieval.recency import blend_recency
from domains.retrieval.types import RetrievedChunk
from domains.retrieval.vector import vector_search


def test_rrf_values_and_identical_text_kept_apart():
    fused = reciprocal_rank_fusion({"s:vector": [(1, 0.9), (2, 0.8)], "s:bm25": [(1, 7.0), (3, 5.0)]})
    assert fused[0] == (1, pytest.approx(2 / 61), {"s:vector": 0.9, "s:bm25": 7.0})
    assert [(cid, round(score, 6)) for cid, score, _ in fused[1:]] == [(2, round(1 / 62, 6)), (3, round(1 / 62, 6))]
    assert reciprocal_rank_fusion({"a": [], "b": []}) == []


def _chunk(cid, score, year):
    return RetrievedChunk(cid, "t", [], {}, "f", 1, "s", "d", year=year, score=score)


def test_recency_blend():
    chunks = blend_recency([_chunk(1, 0.5, 2000), _chunk(2, 0.5, None), _chunk(3, 0.5, 2020)])
    assert [(c.chunk_id, round(c.score, 6)) for c in chunks] == [(3, 1.0), (2, 0.95), (1, 0.9)]


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


def test_vector_search_orders_by_cosine_and_applies_minimum(tiny_store):
    store, ids = tiny_store
    hits = vector_search(store.id, unit(1, 0), k=10, min_relevance=0.15)
    assert [cid for cid, _ in hits] == [ids[0], ids[1]]
    assert [round(rel, 5) for _, rel in hits] == [1.0, round(1 / np.sqrt(2), 5)]
    with pytest.raises(EmbeddingError, match=r"query embedding has shape \(3,\); expected \(384,\)"):
        vector_search(store.id, np.ones(3, dtype=np.float32), k=1, min_relevance=0)


@pytest.mark.parametrize(
    "query", ["team:foobar", "alice::bob", "'abs", "(", "!", "&&", "C++ templates", "e-mail", "Fisher's exact test", "\\'"]
)
def test_keyword_queries_with_tsquery_syntax_never_raise(tiny_store, query):
    store, _ = tiny_store
    assert isinstance(keyword_search(store.id, query_lexemes(query), k=5), list)


def test_keyword_search_ors_terms_and_stop_words_give_nothing(tiny_store):
    store, ids = tiny_store
    assert query_lexemes("the and of") == []
    assert keyword_search(store.id, [], k=5) == []
    hits = keyword_search(store.id, query_lexemes("neurons synapses unknownword"), k=5)
    assert sorted(cid for cid, _ in hits) == sorted([ids[0], ids[1], ids[3]])
