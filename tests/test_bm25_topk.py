"""BM25 over impact-ordered postings: the migration's rebuild, the pruned top-k against
the exhaustive query."""

import importlib

import pytest
from django.db import connection

from domains.models import Bm25Stats, Chunk, Document, Domain, Store
from domains.retrieval.bm25 import indexed_statistics, recomputed_statistics, rereference_impacts

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


SYLLABLES = ["ba", "ko", "ti", "ru", "me", "sa", "lo", "ne", "pi", "du", "ga", "fe"]


def pseudo_words(count: int, rng) -> list[str]:
    """Distinct alphabetic non-words (no stop words, no digits), 3 syllables each."""
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choices(SYLLABLES, k=3)))
    return sorted(words)


@pytest.fixture
def zipf_store(db):
    """700 chunks of 3-80 words drawn from a Zipf vocabulary of 400 words, 40 of them
    exact copies of others (ties), in one store; the lists are many times longer than the
    depths the tests start from, so the pruned query deepens and stops early."""
    import random

    rng = random.Random(18)
    vocabulary = pseudo_words(400, rng)
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    texts = [" ".join(rng.choices(vocabulary, weights, k=rng.randint(3, 80))) for _ in range(660)]
    texts += rng.sample(texts, 40)
    domain = Domain.objects.create(name="zipf", description="zipf")
    store = Store.objects.create(name="zipf", domain=domain, mode=Store.Mode.BM25)
    doc = Document.objects.create(store=store, file_name="zipf.md")
    Chunk.objects.bulk_create(Chunk(store=store, document=doc, ordinal=i, text=t) for i, t in enumerate(texts))
    return store, vocabulary, rng


def assert_same_top_k(store_id, lexemes, k, where=None):
    """The pruned top k is the exhaustive one: the same scores (to 1e-12) position by
    position, and the same ids up to the order of equal scores. Sums of the same terms
    in another order may differ in the last bit (the exhaustive query's order follows
    PostgreSQL's plan), so chunks whose scores agree to 1e-12 count as tied."""
    from domains.retrieval import bm25_search

    exact = bm25_search(store_id, lexemes, k, where=where, exhaustive=True)
    pruned = bm25_search(store_id, lexemes, k, where=where, exhaustive=False)
    assert len(pruned) == len(exact), (lexemes, k)
    assert [s for _, s in pruned] == pytest.approx([s for _, s in exact], rel=1e-12, abs=0), (lexemes, k)
    if [cid for cid, _ in pruned] != [cid for cid, _ in exact]:
        deeper = dict(bm25_search(store_id, lexemes, k + 200, where=where, exhaustive=True))
        for position, ((cid, score), (exact_id, _)) in enumerate(zip(pruned, exact)):
            if cid != exact_id:  # a tie: the pruned chunk scores what the exhaustive one there does
                assert deeper.get(cid) == pytest.approx(score, rel=1e-12, abs=0), (lexemes, k, position)
    return exact


def random_queries(vocabulary, rng, count):
    """1-20 terms; rare and common words alike, sometimes a word no chunk has."""
    for _ in range(count):
        terms = [rng.choice(vocabulary) for _ in range(rng.randint(1, 20))]
        if rng.random() < 0.2:
            terms.append("zyzzyva")
        yield [query for query in terms]


@pytest.mark.parametrize("seed", [1, 100, 600, 20_000])
def test_pruned_top_k_equals_exhaustive(zipf_store, monkeypatch, seed):
    from domains.retrieval import bm25 as bm25_module
    from domains.retrieval import query_lexemes

    store, vocabulary, rng = zipf_store
    monkeypatch.setattr(bm25_module, "PRUNED_SEED", seed)
    tied = 0
    for words in random_queries(vocabulary, rng, 60):
        lexemes = query_lexemes(" ".join(words))
        for k in (1, 10, 50):
            exact = assert_same_top_k(store.id, lexemes, k)
            scores = [s for _, s in exact]
            tied += len(scores) - len(set(scores))
    assert tied > 0  # the copies tie


@pytest.mark.parametrize("path", ["tsvectors", "lists"])
def test_every_way_of_scoring_the_survivors_is_exact(zipf_store, path):
    """The survivors are scored from their tsvectors (when the next unread list is long),
    or the unread lists are scanned one by one until every list is read (the partial sums
    are then the scores): the choice is forced here so that each path answers every query
    (the exhaustive path: test_pruned_top_k_equals_exhaustive, seed 20,000)."""
    from domains import bm25_topk_sql
    from domains.retrieval import query_lexemes

    store, vocabulary, rng = zipf_store
    scan = (
        "cardinality(v_survivors) <= v_cap\n"
        f"            OR cardinality(v_survivors)::bigint * {bm25_topk_sql.SCAN_PER_SCORE} <= v_df[v_i]"
    )
    forced = {"tsvectors": "true", "lists": "false"}[path]
    sql = bm25_topk_sql.TOPK_FUNCTION.replace(scan, forced)
    assert sql.count(f"EXIT WHEN {forced};") == 1
    with connection.cursor() as cursor:
        cursor.execute(sql)  # rolled back with the test
    for words in random_queries(vocabulary, rng, 25):
        lexemes = query_lexemes(" ".join(words))
        for k in (1, 10, 50):
            assert_same_top_k(store.id, lexemes, k)


def test_k_larger_than_the_matches_and_one_term(zipf_store):
    from domains.retrieval import query_lexemes

    store, vocabulary, _ = zipf_store
    rare = query_lexemes(vocabulary[-1])  # the least frequent word
    everything = assert_same_top_k(store.id, rare, 10_000)
    assert 0 < len(everything) < 700
    common = query_lexemes(vocabulary[0])
    assert len(assert_same_top_k(store.id, common, 10_000)) > 300
    assert assert_same_top_k(store.id, ["zyzzyva"], 5) == []


def test_filtered_search_ranks_like_the_exhaustive_one(zipf_store):
    from domains.retrieval import CompiledFilter, bm25_search, query_lexemes

    store, vocabulary, rng = zipf_store
    where = CompiledFilter(sql="c.ordinal %% 3 = 0")
    for words in random_queries(vocabulary, rng, 10):
        lexemes = query_lexemes(" ".join(words))
        everything = bm25_search(store.id, lexemes, 10_000, exhaustive=True)
        ordinals = dict(Chunk.objects.filter(store=store).values_list("id", "ordinal"))
        expected = [hit for hit in everything if ordinals[hit[0]] % 3 == 0][:10]
        filtered = bm25_search(store.id, lexemes, 10, where=where, exhaustive=False)
        assert [cid for cid, _ in filtered] == [cid for cid, _ in expected]
        # the join with the chunks may change the summation order: equal to rounding
        assert [s for _, s in filtered] == pytest.approx([s for _, s in expected], rel=1e-12)


def test_store_whose_average_length_moved_after_indexing(zipf_store, monkeypatch):
    """The impacts keep their reference avgdl; the bound factor max(1, avgdl / reference)
    keeps the pruning exact when chunks grow longer, and < 1 needs none when shorter."""
    from domains.retrieval import bm25 as bm25_module
    from domains.retrieval import query_lexemes

    store, vocabulary, rng = zipf_store
    monkeypatch.setattr(bm25_module, "PRUNED_SEED", 4)
    reference = Bm25Stats.objects.get(store=store).impact_avgdl
    doc = Document.objects.get(store=store)
    Chunk.objects.bulk_create(
        Chunk(store=store, document=doc, ordinal=1000 + i, text=" ".join(rng.choices(vocabulary, k=300)))
        for i in range(150)
    )
    stats = Bm25Stats.objects.get(store=store)
    assert stats.impact_avgdl == reference and stats.average_length > 2 * reference
    for words in random_queries(vocabulary, rng, 30):
        for k in (1, 10):
            assert_same_top_k(store.id, query_lexemes(" ".join(words)), k)
    # re-referenced: the impacts follow the new avgdl
    rewritten = rereference_impacts(store.id)
    stats = Bm25Stats.objects.get(store=store)
    assert stats.impact_avgdl == stats.average_length and rewritten > 1000
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)  # no stale impact
    for words in random_queries(vocabulary, rng, 10):
        assert_same_top_k(store.id, query_lexemes(" ".join(words)), 10)
    reference = stats.impact_avgdl
    long_ones = [c.id for c in Chunk.objects.filter(store=store) if len(c.text.split()) > 40]
    Chunk.objects.filter(id__in=long_ones).delete()  # now shorter on average
    stats = Bm25Stats.objects.get(store=store)
    assert stats.impact_avgdl == reference and stats.average_length < reference
    for words in random_queries(vocabulary, rng, 30):
        assert_same_top_k(store.id, query_lexemes(" ".join(words)), 10)
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)


def test_other_k1_b_run_the_exhaustive_query(zipf_store):
    from domains.retrieval import Bm25Params, bm25_search, query_lexemes

    store, vocabulary, _ = zipf_store
    lexemes = query_lexemes(" ".join(vocabulary[:5]))
    params = Bm25Params(0.9, 0.4)
    assert bm25_search(store.id, lexemes, 10, params=params, exhaustive=False) == bm25_search(
        store.id, lexemes, 10, params=params, exhaustive=True
    )


def test_the_setting_chooses_the_query(zipf_store):
    """KLEA_BM25_PRUNED picks klea_bm25_topk; the results are the same either way."""
    from django.test import override_settings
    from django.test.utils import CaptureQueriesContext

    from domains.retrieval import bm25_search, query_lexemes

    store, vocabulary, _ = zipf_store
    lexemes = query_lexemes(" ".join(vocabulary[:12]))
    # this connection's queries only (a spy on the cursor class would also see other threads')
    with CaptureQueriesContext(connection) as queries:
        with override_settings(KLEA_BM25_PRUNED=True):
            pruned = bm25_search(store.id, lexemes, 10)
        with override_settings(KLEA_BM25_PRUNED=False):
            exhaustive = bm25_search(store.id, lexemes, 10)
    ran = ["klea_bm25_topk" in query["sql"] for query in queries]
    assert ran == [True, False] and len(pruned) == 10
    assert [s for _, s in pruned] == pytest.approx([s for _, s in exhaustive], rel=1e-12, abs=0)


@pytest.mark.parametrize("exhaustive", [True, False])
def test_a_turn_searches_each_store_once_for_the_same_terms(zipf_store, exhaustive):
    """Inside shared_results() the probe's depth-3 search and retrieve's depth-50 list are
    one SQL search, pruned or exhaustive; filtered searches and other terms still query."""
    from django.test.utils import CaptureQueriesContext

    from domains.retrieval import CompiledFilter, bm25_search, query_lexemes, shared_results

    store, vocabulary, _ = zipf_store
    lexemes = query_lexemes(" ".join(vocabulary[:6]))
    alone = [bm25_search(store.id, lexemes, k, exhaustive=exhaustive) for k in (3, 50, 80)]
    where = CompiledFilter(sql="c.ordinal %% 3 = 0")
    with shared_results(), CaptureQueriesContext(connection) as queries:
        shared = [bm25_search(store.id, lexemes, k, exhaustive=exhaustive) for k in (3, 50, 80)]
        assert len(queries) == 2  # depth 50 served by the first query, 80 by a deeper one
        again = bm25_search(store.id, lexemes, 50, exhaustive=exhaustive)
        bm25_search(store.id, lexemes, 3, where=where, exhaustive=exhaustive)
        bm25_search(store.id, query_lexemes(vocabulary[7]), 3, exhaustive=exhaustive)
        assert len(queries) == 2 + 3  # the filtered search; the new terms: lexemes, search
    assert ["klea_bm25_topk" in query["sql"] for query in queries] == [not exhaustive] * 2 + [False] * 2 + [
        not exhaustive
    ]
    assert shared == alone and again == alone[1]
    assert [len(hits) for hits in alone] == [3, 50, 80]
    with CaptureQueriesContext(connection) as queries:  # outside the scope nothing is kept
        bm25_search(store.id, lexemes, 3, exhaustive=exhaustive)
        assert len(queries) == 1


def test_a_turn_reads_the_lexemes_of_its_question_once():
    """Inside shared_results() the router's lexemes_and_language and retrieve's
    query_lexemes of the same question are one statement; other texts and calls outside
    the scope still read."""
    from django.test.utils import CaptureQueriesContext

    from domains.retrieval import lexemes_and_language, query_lexemes, shared_results

    question = "Which rolling windows does xarray support?"
    with shared_results(), CaptureQueriesContext(connection) as queries:
        routed = lexemes_and_language(question)
        retrieved = query_lexemes(question)
        retrieved.append("edited")  # the caller's own list: what is kept stays as read
        again = query_lexemes(question)
        assert len(queries) == 1
        other = query_lexemes("rolling")
        assert len(queries) == 2
    assert routed == (["roll", "window", "xarray", "support"], "english")
    assert again == ["roll", "window", "xarray", "support"] and other == ["roll"]
    with CaptureQueriesContext(connection) as queries:
        assert query_lexemes(question) == again
        assert len(queries) == 1
