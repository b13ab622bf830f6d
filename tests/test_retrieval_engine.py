"""retrieve(): lists per store and query, labels, restrictions, failures, budget."""

import importlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.test import override_settings

from domains import embeddings
from domains.models import Chunk, Document, Domain, Store
from domains.retrieval import retrieve
from domains.text import indexed_text

pytestmark = pytest.mark.django_db

TEXTS = {
    "neurons.md": ["Neurons fire action potentials along the axon.", "Synapses release neurotransmitters."],
    "copy.md": ["Neurons fire action potentials along the axon."],  # identical text, other file
    "arrays.md": ["Labelled multi-dimensional arrays with named dimensions.", "Resampling time series by month."],
}


@pytest.fixture
def setup(db):
    domain = Domain.objects.create(name="science", description="science", default_k=3)
    main = Store.objects.create(name="main", domain=domain)
    extra = Store.objects.create(name="extra", domain=domain, mode=Store.Mode.BM25)
    ids = {}
    for store, files in ((main, ["neurons.md", "arrays.md"]), (extra, ["copy.md"])):
        for file_name in files:
            doc = Document.objects.create(store=store, file_name=file_name)
            texts = TEXTS[file_name]
            vectors = embeddings.embed_texts([indexed_text([], t) for t in texts])
            for i, (text, vector) in enumerate(zip(texts, vectors)):
                ids[(file_name, i)] = Chunk.objects.create(
                    store=store, document=doc, ordinal=i, text=text, embedding=vector, year=2000 + i
                ).id
    return domain, ids


def test_lists_per_store_and_mode_with_labels(setup):
    domain, ids = setup
    result = retrieve("neurons firing action potentials", [domain])
    assert not result.retrieval_failed
    assert result.keywords == ["neuron", "fire", "action", "potenti"]
    top = {c.chunk_id: c for c in result.results}
    original, copy = ids[("neurons.md", 0)], ids[("copy.md", 0)]
    assert original in top and copy in top  # identical text in two files: two results
    assert set(top[original].source_scores) == {"main:vector", "main:bm25"}
    assert set(top[copy].source_scores) == {"extra:bm25"}
    assert top[original].source_scores["main:vector"] > 0.5
    assert (top[original].file_name, top[original].store, top[original].domain) == ("neurons.md", "main", "science")
    assert len(result.results) == 3


def test_several_queries_are_all_fused(setup):
    domain, ids = setup
    single = retrieve("neurons firing", [domain], k=5, modes=["bm25"])
    both = retrieve(["neurons firing", "resampling time series"], [domain], k=5, modes=["bm25"])
    assert ids[("arrays.md", 1)] not in {c.chunk_id for c in single.results}
    assert ids[("arrays.md", 1)] in {c.chunk_id for c in both.results}
    assert both.keywords == ["neuron", "fire", "resampl", "time", "seri"]


def test_store_and_mode_restrictions(setup):
    domain, ids = setup
    only_extra = retrieve("neurons", [domain], k=5, stores=["extra"])
    assert [c.chunk_id for c in only_extra.results] == [ids[("copy.md", 0)]]
    vector_only = retrieve("neurons", [domain], k=5, modes=["vector"])
    assert all(set(c.source_scores) == {"main:vector"} for c in vector_only.results)
    with pytest.raises(ValueError, match=r"unknown retrieval mode\(s\) \['dense'\]; allowed: vector, bm25"):
        retrieve("neurons", [domain], modes=["dense"])


def test_genuine_empty_match_is_not_a_failure(setup):
    domain, _ = setup
    result = retrieve("zzyzx qwertyuiop", [domain], modes=["bm25"])
    assert (result.results, result.retrieval_failed, result.error) == ([], False, "")
    assert retrieve("   ", [domain]).results == []
    domain.active = False
    assert retrieve("neurons", [domain]).results == []


def test_broken_store_is_reported_and_other_lists_still_answer(setup):
    domain, ids = setup
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE domains_bm25posting RENAME TO broken_postings")
    result = retrieve("neurons firing action potentials", [domain])
    assert result.retrieval_failed
    assert result.error.startswith("extra:bm25 (domain science): relation \"domains_bm25posting\" does not exist")
    assert "; main:bm25 (domain science): relation" in result.error
    assert result.results and all(set(c.source_scores) == {"main:vector"} for c in result.results)
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE broken_postings RENAME TO domains_bm25posting")


@override_settings(KLEA_EMBEDDING_DIM=512)
def test_embedding_of_the_wrong_dimension_is_a_failure_not_an_empty_match(setup):
    domain, ids = setup
    result = retrieve("neurons", [domain], k=5)
    assert result.retrieval_failed
    assert "embedding has shape (1, 384); expected (n, 512)" in result.error
    assert ids[("copy.md", 0)] in {c.chunk_id for c in result.results}
    assert all(set(c.source_scores) <= {"main:bm25", "extra:bm25"} for c in result.results)


def test_budget_cut(setup):
    domain, _ = setup
    result = retrieve("neurons", [domain], k=3, max_chars=len(TEXTS["copy.md"][0]) + 200)
    assert len(result.results) == 1


def test_nul_control_characters_and_lone_surrogates_in_queries_are_removed(setup):
    domain, ids = setup
    clean = retrieve("neurons fire", [domain], k=5)
    for query in ("neurons\x00fire", "neurons \ud800fire", ["neurons\x07 fire\udfff"]):
        result = retrieve(query, [domain], k=5)
        assert (result.retrieval_failed, result.keywords) == (False, ["neuron", "fire"]), query
        assert [c.chunk_id for c in result.results] == [c.chunk_id for c in clean.results]


def test_k_and_store_names_are_checked(setup):
    domain, _ = setup
    for k in (0, -1, True, 2.5, "3"):
        with pytest.raises(ValueError, match=r"^k must be a positive integer$"):
            retrieve("neurons", [domain], k=k)
    assert len(retrieve("neurons", [domain], k=1).results) == 1
    assert len(retrieve("neurons", [domain], k=None).results) == 3  # the domain's default_k
    with pytest.raises(ValueError, match=r"^unknown store\(s\) \['nope', 'zz'\]: not stores of the domains searched$"):
        retrieve("neurons", [domain], stores=["main", "zz", "nope"])


def test_undeclared_filter_fields_are_reported(setup):
    domain, _ = setup
    result = retrieve("neurons", [domain], filters={"bogus": 1, "$and": [{"other": "x"}]})
    assert (result.dropped_filters, result.retrieval_failed, len(result.results)) == (
        {"bogus": ["science"], "other": ["science"]}, False, 3)


def test_failures_name_store_and_error_class_only(setup):
    domain, _ = setup
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE domains_bm25posting RENAME TO broken_postings")
    result = retrieve("neurons firing", [domain])
    assert result.failures == ["extra:bm25 (domain science): ProgrammingError",
                               "main:bm25 (domain science): ProgrammingError"]
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE broken_postings RENAME TO domains_bm25posting")


def test_default_k_is_eight_and_domains_left_at_five_move_with_it(db):
    """A new domain retrieves 8 chunks; migration 0014 moves domains still at the old
    default 5 (unless their k_max is below 8) and leaves chosen values alone."""
    from django.apps import apps

    migration = importlib.import_module("domains.migrations.0014_domain_default_k")
    domain = Domain.objects.create(name="many", description="many")
    store = Store.objects.create(name="many", domain=domain, mode=Store.Mode.BM25)
    doc = Document.objects.create(store=store, file_name="many.md")
    for i in range(10):
        Chunk.objects.create(store=store, document=doc, ordinal=i, text=f"Neurons fire, note {i}.")
    assert domain.default_k == 8
    assert len(retrieve("neurons", [domain]).results) == 8
    rows = {name: Domain.objects.create(name=name, description=name, default_k=k, k_max=k_max)
            for name, k, k_max in (("left", 5, 10), ("narrow", 5, 6), ("chosen", 3, 10))}
    migration.to_new_default(apps, None)
    assert {name: Domain.objects.get(pk=row.pk).default_k for name, row in rows.items()} == {
        "left": 8, "narrow": 5, "chosen": 3}
    migration.to_old_default(apps, None)
    mine = Domain.objects.filter(name__in=["chosen", "left", "many", "narrow"])  # other modules may keep domains
    assert sorted(mine.values_list("name", "default_k")) == [("chosen", 3), ("left", 5), ("many", 5), ("narrow", 5)]


def test_a_search_costs_one_statement_per_list_and_puts_no_setting_back(setup):
    """Round trips are much of a small search's time on a loaded machine: one transaction
    (here a savepoint in the test's), rolled back at the end, takes the place of a
    savepoint per list and of the statements that put the settings back; the declared
    filter fields are read only for a filter. The caller's settings are untouched."""
    domain, ids = setup
    with CaptureQueriesContext(connection) as queries:
        result = retrieve("neurons firing", [domain])
    statements = [" ".join(q["sql"].split()[:2]) for q in queries.captured_queries]
    assert statements == [
        "SELECT lexeme",  # the query's lexemes
        'SELECT "domains_store"."id",',  # the domain's stores
        "SAVEPOINT " + statements[2].split()[1],
        "SELECT set_config('statement_timeout',",
        "SELECT chunk_id,",  # extra:bm25
        "SELECT coalesce(sum(chunk_count)",  # main:vector: the store's size, then the search
        "SELECT id,",
        "SELECT chunk_id,",  # main:bm25
        "SELECT id,",  # the years of the fused chunks
        "SELECT c.id,",  # text and file of the top k
        "ROLLBACK TO",  # SAVEPOINT <name>
        "RELEASE SAVEPOINT",
    ]
    assert [c.chunk_id for c in result.results][:2] == [ids[("neurons.md", 0)], ids[("copy.md", 0)]]
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"


def test_queries_with_the_same_lexemes_share_one_bm25_search(setup):
    domain, _ = setup
    with CaptureQueriesContext(connection) as queries:
        both = retrieve(["neurons firing", "the neuron fires"], [domain], k=5, modes=["bm25"])
    searches = [q["sql"] for q in queries.captured_queries if "bm25_topk" in q["sql"] or "bm25posting" in q["sql"]]
    assert len(searches) == 2  # one per store (main, extra), not one per store and query
    single = retrieve("neurons firing", [domain], k=5, modes=["bm25"])
    assert [c.chunk_id for c in both.results] == [c.chunk_id for c in single.results]
    assert both.keywords == ["neuron", "fire"]



@pytest.mark.parametrize("file_name, order", [("flp.pdf", ["body", "references"]), ("flp.md", ["references", "body"])])
def test_a_papers_reference_list_comes_after_its_body(db, file_name, order):
    # BM25 ranks the reference list first (every name twice); in a PDF under half of it is
    # body text (domains/front_matter.py), so the body goes first. Markdown keeps the ranking.
    domain = Domain.objects.create(name="papers", description="papers", default_k=2)
    store = Store.objects.create(name="papers-docs", domain=domain, mode=Store.Mode.BM25)
    document = Document.objects.create(store=store, file_name=file_name)
    texts = {
        "references": "[1] M. Fischer, N. Lynch and M. Paterson. Impossibility of distributed consensus. J. ACM 32 (1985).\n"
                      "[2] M. Fischer and N. Lynch. A lower bound for consensus with one faulty process. 1982.",
        "body": "No asynchronous consensus protocol tolerates one faulty process, as Paterson showed.",
    }
    names = {Chunk.objects.create(store=store, document=document, ordinal=i, text=text).id: name
             for i, (name, text) in enumerate(texts.items())}
    result = retrieve("Fischer Lynch Paterson consensus", [domain])
    assert [names[c.chunk_id] for c in result.results] == order


@pytest.mark.parametrize("file_name, order", [("gw.pdf", ["body 1", "abstract"]), ("gw.md", ["body 1", "body 2"])])
def test_the_abstract_of_a_paper_that_fills_the_results_takes_its_last_place(db, file_name, order):
    # The abstract states the results without the event's name the question and the body use.
    domain = Domain.objects.create(name="papers", description="papers", default_k=2)
    store = Store.objects.create(name="papers-docs", domain=domain, mode=Store.Mode.BM25)
    document = Document.objects.create(store=store, file_name=file_name)
    texts = {
        "abstract": "The two detectors observed a transient signal. " * 10,
        "body 1": "GW150914 was detected in both detectors; GW150914 is a merger signal.",
        "body 2": "GW150914 was seen first at Livingston.",
        "body 3": "GW150914 arrived later at Hanford.",
    }
    names = {Chunk.objects.create(store=store, document=document, ordinal=i, text=text).id: name
             for i, (name, text) in enumerate(texts.items())}
    result = retrieve("GW150914 signal", [domain])
    assert [names[c.chunk_id] for c in result.results] == order
