"""BM25 in PostgreSQL: scores against a brute-force reference, statistics upkeep."""

import math
import random

import pytest
from django.db import connection
from django.test import override_settings

from domains.models import Bm25Stats, Bm25Term, Chunk, Document, Domain, Store
from domains.retrieval import Bm25Params, bm25_search, query_lexemes, retrieve
from domains.retrieval.bm25 import indexed_statistics, recomputed_statistics

pytestmark = pytest.mark.django_db

TEXTS = [
    "Neurons fire action potentials; neurons connect through synapses.",
    "The synapse releases neurotransmitter when the neuron fires.",
    "Arrays of neurons: a network model with many neurons and synapses and synapses.",
    "Labelled arrays and datasets for climate data.",
    "Climate models resample time series of temperature data data data.",
    "Fisher's exact test for contingency tables; the e-mail of the author.",
    "C++ templates and the team:foobar label.",
    "the and of",  # stop words only: an empty tsvector, still counted in N
]


@pytest.fixture
def corpus(db):
    domain = Domain.objects.create(name="bm25", description="bm25")
    store = Store.objects.create(name="bm25-store", domain=domain, mode=Store.Mode.BM25)
    other = Store.objects.create(name="bm25-other", domain=domain, mode=Store.Mode.BM25)
    doc = Document.objects.create(store=store, file_name="a.md")
    Chunk.objects.bulk_create(
        Chunk(store=store, document=doc, ordinal=i, text=t, headings=["Intro"] if i == 0 else [])
        for i, t in enumerate(TEXTS)
    )
    other_doc = Document.objects.create(store=other, file_name="b.md")
    Chunk.objects.create(store=other, document=other_doc, ordinal=0, text="neurons neurons neurons")
    return domain, store, other


def tokens(headings, text):
    """Lexeme -> tf of a chunk, straight from to_tsvector (the tokens BM25 uses)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, array_length(positions, 1) "
            "FROM unnest(to_tsvector('pg_catalog.english', klea_search_text(%s)))",
            [" ".join(headings) + " " + text],
        )
        return dict(cursor.fetchall())


def brute_force(store, query, k1, b):
    """BM25 with Lucene idf, computed in Python from the chunks' tokens."""
    docs = {c.id: tokens(c.headings, c.text) for c in Chunk.objects.filter(store=store)}
    n = len(docs)
    avgdl = sum(sum(t.values()) for t in docs.values()) / n
    scores = {}
    for cid, tf_of in docs.items():
        dl = sum(tf_of.values())
        score = 0.0
        for term in set(query_lexemes(query)):
            if term not in tf_of:
                continue
            df = sum(1 for t in docs.values() if term in t)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = tf_of[term]
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        if score > 0:
            scores[cid] = score
    return scores


@pytest.mark.parametrize("k1, b", [(0.9, 0.4), (1.2, 0.75), (0.0, 0.0), (2.0, 1.0)])
@pytest.mark.parametrize("query", ["neurons synapses", "climate data arrays", "neuron fires the synapse model", "data"])
def test_scores_equal_brute_force(corpus, query, k1, b):
    _, store, _ = corpus
    expected = brute_force(store, query, k1, b)
    hits = bm25_search(store.id, query_lexemes(query), 100, params=Bm25Params(k1, b))
    assert {cid for cid, _ in hits} == set(expected)
    for cid, score in hits:
        assert score == pytest.approx(expected[cid], rel=1e-6)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_scores_known_values(corpus):
    """One hand-checked case: 'climat' occurs once in chunks 3 and 4 (df 2, N 8)."""
    _, store, _ = corpus
    stats = indexed_statistics(store.id)
    assert (stats.chunk_count, stats.df["climat"], stats.df["neuron"]) == (8, 2, 3)
    avgdl = stats.total_length / 8
    idf = math.log(1 + (8 - 2 + 0.5) / (2 + 0.5))
    hits = dict(bm25_search(store.id, ["climat"], 10, params=Bm25Params(0.9, 0.4)))
    ids = list(Chunk.objects.filter(store=store).order_by("ordinal").values_list("id", flat=True))
    dl3 = sum(tokens([], TEXTS[3]).values())
    assert dl3 == 5  # labell, array, dataset, climat, data
    assert hits[ids[3]] == pytest.approx(idf * 1.9 / (1 + 0.9 * (0.6 + 0.4 * dl3 / avgdl)), rel=1e-12)


def test_statistics_are_per_store(corpus):
    _, store, other = corpus
    assert indexed_statistics(other.id).df == {"neuron": 1}
    assert indexed_statistics(other.id).postings == {
        (Chunk.objects.get(store=other).id, "neuron"): (3, 3)
    }
    assert bm25_search(other.id, ["neuron"], 5, params=Bm25Params(0.9, 0.4))[0][1] == pytest.approx(
        math.log(1 + 0.5 / 1.5) * 3 * 1.9 / (3 + 0.9 * (0.6 + 0.4 * 3 / 3))
    )
    # defaults: k1 1.2, b 0.75 (settings)
    assert bm25_search(other.id, ["neuron"], 5)[0][1] == pytest.approx(
        math.log(1 + 0.5 / 1.5) * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 3 / 3))
    )
    with override_settings(KLEA_BM25_K1=0.0):
        assert bm25_search(other.id, ["neuron"], 5)[0][1] == pytest.approx(math.log(1 + 0.5 / 1.5))


def test_statistics_after_insert_update_delete(corpus):
    _, store, other = corpus
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)
    before = indexed_statistics(store.id)
    doc = Document.objects.get(store=store)
    # insert
    added = Chunk.objects.create(store=store, document=doc, ordinal=50, text="Quantum neurons quantum")
    after_insert = indexed_statistics(store.id)
    assert after_insert.chunk_count == before.chunk_count + 1
    assert after_insert.total_length == before.total_length + 3
    assert after_insert.df["quantum"] == 1 and after_insert.df["neuron"] == before.df["neuron"] + 1
    assert after_insert == recomputed_statistics(store.id)
    # update of the text: old tokens out, new ones in
    added.text = "Classical arrays"
    added.save()
    after_update = indexed_statistics(store.id)
    assert "quantum" not in after_update.df
    assert after_update.df["neuron"] == before.df["neuron"]
    assert after_update.df["classic"] == 1 and after_update.df["array"] == before.df["array"] + 1
    assert after_update.total_length == before.total_length + 2
    assert after_update == recomputed_statistics(store.id)
    # update of headings only changes tokens too; an update of other columns changes nothing
    Chunk.objects.filter(id=added.id).update(headings=["Quantum"])
    assert indexed_statistics(store.id).df["quantum"] == 1
    Chunk.objects.filter(store=store).update(year=2020, metadata={"x": 1})
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)
    # move a chunk to another store
    Chunk.objects.filter(id=added.id).update(store=other)
    assert indexed_statistics(store.id) == before
    assert indexed_statistics(other.id) == recomputed_statistics(other.id)
    assert indexed_statistics(other.id).chunk_count == 2
    # delete
    Chunk.objects.filter(id=added.id).delete()
    assert indexed_statistics(other.id) == recomputed_statistics(other.id)
    assert indexed_statistics(other.id).df == {"neuron": 1}


def test_random_edits_keep_statistics_exact(corpus):
    _, store, _ = corpus
    rng = random.Random(7)
    words = "neuron synapse array climate data model the of spike GABA channel".split()
    doc = Document.objects.get(store=store)
    next_ordinal = 100
    for step in range(30):
        action = rng.choice(["insert", "update", "delete", "bulk"])
        ids = list(Chunk.objects.filter(store=store).values_list("id", flat=True))
        if action == "insert" or not ids:
            Chunk.objects.create(store=store, document=doc, ordinal=next_ordinal, text=" ".join(rng.choices(words, k=6)))
            next_ordinal += 1
        elif action == "bulk":
            Chunk.objects.bulk_create(
                Chunk(store=store, document=doc, ordinal=next_ordinal + i, text=" ".join(rng.choices(words, k=9)))
                for i in range(3)
            )
            next_ordinal += 3
        elif action == "update":
            Chunk.objects.filter(id__in=rng.sample(ids, min(2, len(ids)))).update(text=" ".join(rng.choices(words, k=4)))
        else:
            Chunk.objects.filter(id=rng.choice(ids)).delete()
        assert indexed_statistics(store.id) == recomputed_statistics(store.id), (step, action)
        # no posting outlives its chunk (a delete that missed its row would leave one)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM domains_bm25posting")
            total = cursor.fetchone()[0]
        assert total == sum(len(indexed_statistics(s.id).postings) for s in Store.objects.all()), (step, action)


def test_document_and_store_deletion_remove_everything(corpus):
    _, store, other = corpus
    Document.objects.get(store=store).delete()
    assert not Bm25Stats.objects.filter(store=store).exists()
    assert not Bm25Term.objects.filter(store=store).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM domains_bm25posting")
        assert cursor.fetchone()[0] == 1  # the other store's single posting
    other.delete()
    assert Bm25Stats.objects.count() == 0 and Bm25Term.objects.count() == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM domains_bm25posting")
        assert cursor.fetchone()[0] == 0


@pytest.mark.parametrize(
    "query",
    ["team:foobar", "alice::bob", "'abs", "(", "!", "&&", "C++ templates", "e-mail", "Fisher's exact test", "\\'", "a & !b | (c"],
)
def test_tsquery_syntax_never_raises(corpus, query):
    _, store, _ = corpus
    assert isinstance(bm25_search(store.id, query_lexemes(query), 5), list)


def test_tsquery_syntax_queries_find_their_chunk(corpus):
    _, store, _ = corpus
    ids = list(Chunk.objects.filter(store=store).order_by("ordinal").values_list("id", flat=True))
    assert bm25_search(store.id, query_lexemes("Fisher's exact test"), 1)[0][0] == ids[5]
    assert bm25_search(store.id, query_lexemes("team:foobar"), 1)[0][0] == ids[6]
    assert bm25_search(store.id, query_lexemes("e-mail"), 1)[0][0] == ids[5]


def test_terms_are_ored_and_stop_words_give_no_keywords(corpus):
    domain, store, _ = corpus
    ids = list(Chunk.objects.filter(store=store).order_by("ordinal").values_list("id", flat=True))
    hits = bm25_search(store.id, query_lexemes("temperature synapses unknownword"), 10)
    assert sorted(cid for cid, _ in hits) == sorted([ids[0], ids[1], ids[2], ids[4]])
    assert query_lexemes("the and of") == []
    assert bm25_search(store.id, [], 5) == []
    result = retrieve("the and of", [domain])
    assert (result.keywords, result.results, result.retrieval_failed) == ([], [], False)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match=r"BM25 b must be in \[0, 1\], got 1.5"):
        Bm25Params(1.2, 1.5)
    with pytest.raises(ValueError, match=r"BM25 k1 must be >= 0, got -1"):
        Bm25Params(-1, 0.5)


def test_concurrent_writers_on_two_stores_keep_statistics_exact(django_db_setup, django_db_blocker):
    """Two sessions write chunks of both stores in one statement each, in opposite
    orders, and delete some, concurrently: the triggers lock stores in id order, so no
    deadlock, and the statistics end exact. The writers use their own autocommit
    connections (they must see each other's commits) and clean up after themselves."""
    import threading

    import psycopg

    with django_db_blocker.unblock():
        params = connection.get_connection_params()
    params = {k: v for k, v in params.items() if k in ("dbname", "user", "password", "host", "port") and v}

    def session():
        return psycopg.connect(**params, autocommit=True)

    with session() as setup:
        domain_id = setup.execute(
            "INSERT INTO domains_domain (name, description, active, default_k, k_max, k_inc, min_relevance, "
            "fusion, fusion_alpha, instructions, created_at, updated_at) "
            "VALUES ('concurrent', '', true, 5, 10, 1, 0.15, 'rrf', 0.5, '', now(), now()) RETURNING id"
        ).fetchone()[0]
        stores = [
            setup.execute(
                "INSERT INTO domains_store (name, domain_id, mode, embedding_model, embedding_dim, created_at) "
                "VALUES (%s, %s, 'both', 'm', 384, now()) RETURNING id",
                [f"conc-{i}", domain_id],
            ).fetchone()[0]
            for i in range(2)
        ]
        docs = {
            (thread, store): setup.execute(
                "INSERT INTO domains_document (store_id, file_name, source_path, content_hash, status, error, "
                "metadata, created_at, updated_at) VALUES (%s, %s, '', '', 'stored', '', '{}', now(), now()) RETURNING id",
                [store, f"{thread}.md"],
            ).fetchone()[0]
            for thread in range(2)
            for store in stores
        }
    errors = []

    def writer(thread: int):
        order = stores if thread == 0 else stores[::-1]
        try:
            with session() as conn:
                for step in range(15):
                    rows = [(s, docs[(thread, s)], step, f"neuron {thread} step{step} synapse {s}") for s in order]
                    conn.execute(
                        "INSERT INTO domains_chunk (store_id, document_id, ordinal, text, headings, metadata, "
                        "token_count, provenance) SELECT s, d, o, t, '{}', '{}', 0, '{}' "
                        "FROM unnest(%s::bigint[], %s::bigint[], %s::int[], %s::text[]) "
                        "AS r(s, d, o, t)",
                        [list(col) for col in zip(*rows)],
                    )
                    if step % 3 == 2:
                        conn.execute(
                            "DELETE FROM domains_chunk WHERE document_id = ANY(%s) AND ordinal = %s",
                            [[docs[(thread, s)] for s in order], step - 1],
                        )
        except psycopg.Error as exc:  # reported below with the thread number
            errors.append((thread, str(exc)))

    try:
        threads = [threading.Thread(target=writer, args=(t,)) for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        with django_db_blocker.unblock():
            for store in stores:
                stats = indexed_statistics(store)
                assert stats == recomputed_statistics(store)
                assert stats.chunk_count == 2 * (15 - 5)
    finally:
        with session() as cleanup:
            cleanup.execute("DELETE FROM domains_chunk WHERE store_id = ANY(%s)", [stores])
            cleanup.execute("DELETE FROM domains_document WHERE store_id = ANY(%s)", [stores])
            cleanup.execute("DELETE FROM domains_store WHERE id = ANY(%s)", [stores])
            cleanup.execute("DELETE FROM domains_domain WHERE id = %s", [domain_id])
            leftovers = cleanup.execute(
                "SELECT (SELECT count(*) FROM domains_bm25stats WHERE store_id = ANY(%s)) + "
                "(SELECT count(*) FROM domains_bm25term WHERE store_id = ANY(%s))",
                [stores, stores],
            ).fetchone()[0]
    assert leftovers == 0
