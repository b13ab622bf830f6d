"""retrieve() running a large store's vector lists beside its BM25 lists, on a second
connection (domains/retrieval/side_lists.py): the same results, the
connection closed after, the caller's transaction respected, failures reported."""

import os
import signal
import time

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from domains import embeddings
from domains.models import Chunk, Document, Domain, Store
from domains.retrieval import retrieve, side_lists
from domains.text import indexed_text

from .table_lock import table_locked

# committed rows: the second connection sees only what is committed
pytestmark = pytest.mark.django_db(transaction=True)

TEXTS = {
    "neurons.md": ["Neurons fire action potentials along the axon.", "Synapses release neurotransmitters."],
    "copy.md": ["Neurons fire action potentials along the axon."],
    "arrays.md": ["Labelled multi-dimensional arrays with named dimensions.", "Resampling time series by month."],
}
QUERY = "neurons firing action potentials"


@pytest.fixture
def domain(db):
    domain = Domain.objects.create(name="science", description="science", default_k=3)
    main = Store.objects.create(name="main", domain=domain)
    extra = Store.objects.create(name="extra", domain=domain, mode=Store.Mode.BM25)
    for store, files in ((main, ["neurons.md", "arrays.md"]), (extra, ["copy.md"])):
        for file_name in files:
            doc = Document.objects.create(store=store, file_name=file_name)
            vectors = embeddings.embed_texts([indexed_text([], t) for t in TEXTS[file_name]])
            for i, (text, vector) in enumerate(zip(TEXTS[file_name], vectors)):
                Chunk.objects.create(store=store, document=doc, ordinal=i, text=text, embedding=vector, year=2000 + i)
    return domain


@pytest.fixture(autouse=True)
def side_connections_closed():
    """The side connections kept between calls are closed after each test (the test
    database is dropped at the end: no session may stay on it)."""
    yield
    side_lists.close_side_connections()


def free_slots() -> int:
    free = 0
    try:
        while side_lists._side_free.acquire(blocking=False):
            free += 1
    finally:
        for _ in range(free):
            side_lists._side_free.release()
    return free


def ranked(result):
    return [(c.chunk_id, c.score, c.source_scores, c.file_name) for c in result.results]


def backends(settled_at: int | None = None) -> int:
    """Sessions on the test database. A closed connection's backend leaves
    pg_stat_activity a moment after the close: with ``settled_at``, wait up to 5 s for
    the count to come down to it."""
    for _ in range(50):
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            count = cursor.fetchone()[0]
        if settled_at is None or count <= settled_at:
            return count
        time.sleep(0.1)
    return count


def allow_connections(allowed: bool) -> None:
    """ALTER DATABASE (the test database) ALLOW_CONNECTIONS, from the maintenance database
    (PostgreSQL refuses it for the database a session is connected to)."""
    params = connection.get_connection_params()
    name = params.pop("dbname")
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, dbname="postgres", autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {connection.ops.quote_name(name)} WITH ALLOW_CONNECTIONS {str(allowed).lower()}")


def test_the_vector_lists_run_on_a_second_connection_with_the_same_results(domain, settings):
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = -1
    one_after_the_other = retrieve(QUERY, [domain])
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    before = backends()
    with CaptureQueriesContext(connection) as queries:
        at_once = retrieve(QUERY, [domain])
    assert (one_after_the_other.lists_at_once, at_once.lists_at_once) == (False, True)
    assert ranked(at_once) == ranked(one_after_the_other)
    assert [c.file_name for c in at_once.results] == ["neurons.md", "copy.md", "neurons.md"]
    statements = [" ".join(q["sql"].split()[:2]) for q in queries.captured_queries]
    assert statements == [  # this connection's: the BM25 lists only; the vector list ran on the other
        "SELECT lexeme",
        'SELECT "domains_store"."id",',
        "BEGIN", "SELECT set_config('statement_timeout',",
        "SELECT chunk_id,",  # extra:bm25
        "SELECT chunk_id,",  # main:bm25
        "ROLLBACK",  # ended before waiting for the vector list: no lock held meanwhile
        "BEGIN", "SELECT set_config('statement_timeout',",
        "SELECT id,",  # the years of the fused chunks
        "SELECT c.id,",  # text and file of the top k
        "ROLLBACK",
    ]
    # the second connection is kept for the next call (a new backend's first HNSW search
    # costs twice a warm one's), and closed by close_side_connections()
    assert (backends(), side_lists.close_side_connections(), backends(settled_at=before)) == (before + 1, 1, before)


def test_the_stores_searched_must_hold_the_threshold_of_chunks(domain, settings):
    """The domain's two stores hold 5 chunks (4 + 1)."""
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 5
    assert retrieve(QUERY, [domain]).lists_at_once is True
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 6
    assert retrieve(QUERY, [domain]).lists_at_once is False
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 4
    assert retrieve(QUERY, [domain], stores=["main"]).lists_at_once is True
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 5
    assert retrieve(QUERY, [domain], stores=["main"]).lists_at_once is False
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    assert retrieve(QUERY, [domain], modes=["vector"]).lists_at_once is False  # nothing to run beside


def test_inside_a_callers_transaction_the_lists_run_on_its_connection(domain, settings):
    """A second connection would not see the caller's uncommitted chunk."""
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    store = Store.objects.get(name="main")
    text = "Dendrites integrate synaptic input from many neurons firing."
    with transaction.atomic():
        doc = Document.objects.create(store=store, file_name="dendrites.md")
        chunk = Chunk.objects.create(store=store, document=doc, ordinal=0, text=text,
                                     embedding=embeddings.embed_texts([indexed_text([], text)])[0])
        result = retrieve("dendrites integrate synaptic input", [domain], k=5)
        transaction.set_rollback(True)
    assert result.lists_at_once is False
    assert result.results[0].chunk_id == chunk.id
    assert set(result.results[0].source_scores) == {"main:vector", "main:bm25"}


def test_a_vector_list_failing_on_the_second_connection_is_reported(domain, settings):
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    settings.KLEA_EMBEDDING_DIM = 512
    result = retrieve(QUERY, [domain])
    assert (result.lists_at_once, result.retrieval_failed, result.failures) == (
        True, True, ["main:vector (domain science): EmbeddingError"])
    assert "embedding has shape (1, 384); expected (n, 512)" in result.error
    assert [c.file_name for c in result.results] == ["neurons.md", "copy.md"]  # the BM25 hits
    assert all(set(c.source_scores) <= {"main:bm25", "extra:bm25"} for c in result.results)


def test_no_second_connection_to_be_had_runs_the_vector_lists_after_the_bm25_lists(domain, settings, caplog):
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = -1
    expected = ranked(retrieve(QUERY, [domain]))
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    with connection.cursor():  # this connection stays open; no new one is let in
        allow_connections(False)
    try:
        result = retrieve(QUERY, [domain])
    finally:
        allow_connections(True)
    assert (result.lists_at_once, result.retrieval_failed, result.failures) == (False, False, [])
    assert ranked(result) == expected
    [warning] = [r.getMessage() for r in caplog.records if r.name == "klea.retrieval"]
    assert (warning.startswith("a second connection for the vector lists failed (connection failed: "),
            warning.endswith(f'FATAL:  database "{connection.settings_dict["NAME"]}" is not currently accepting '
                             "connections); they run after the BM25 lists")) == (True, True)


def test_with_every_slot_taken_the_lists_run_one_after_the_other(domain, settings):
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    taken = 0
    try:
        while side_lists._side_free.acquire(blocking=False):
            taken += 1
        result = retrieve(QUERY, [domain])
    finally:
        for _ in range(taken):
            side_lists._side_free.release()
    assert (taken, result.lists_at_once) == (side_lists.SIDE_SLOTS, False)
    assert retrieve(QUERY, [domain]).lists_at_once is True


def test_a_forked_child_starts_its_own_threads(domain, settings):
    """A Celery prefork worker forks after the parent may have searched: the child gets
    a pool and slots of its own (the parent's threads do not exist there)."""
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    assert retrieve(QUERY, [domain]).lists_at_once is True  # the parent's pool has a thread now
    assert side_lists._side_pool is not None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no database (the parent's connection is not its to use)
        free = 0
        while side_lists._side_free.acquire(blocking=False):
            free += 1
        os.write(write, f"{side_lists._side_pool is None} {free} {len(side_lists._idle)} {len(side_lists._inherited)}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    assert answer == f"True {side_lists.SIDE_SLOTS} 0 1"  # the parent's idle connection: not the child's to use


def test_failures_are_reported_in_job_order_either_way(domain, settings):
    """Both lists of the store fail (the embedding's dimension, the postings table renamed):
    the failures read the same whichever thread ran them."""
    settings.KLEA_EMBEDDING_DIM = 512
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE domains_bm25posting RENAME TO broken_postings")
    try:
        outcomes = []
        for threshold in (-1, 0):
            settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = threshold
            result = retrieve(QUERY, [domain])
            outcomes.append((result.lists_at_once, result.failures, result.error.split("): ")[0]))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE broken_postings RENAME TO domains_bm25posting")
    failures = ["extra:bm25 (domain science): ProgrammingError", "main:vector (domain science): EmbeddingError",
                "main:bm25 (domain science): ProgrammingError"]
    assert outcomes == [(False, failures, "extra:bm25 (domain science"), (True, failures, "extra:bm25 (domain science")]


def test_a_caller_with_autocommit_off_holds_a_transaction(domain, settings):
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    store = Store.objects.get(name="main")
    text = "Dendrites integrate synaptic input from many neurons firing."
    transaction.set_autocommit(False)
    try:
        doc = Document.objects.create(store=store, file_name="dendrites.md")
        chunk = Chunk.objects.create(store=store, document=doc, ordinal=0, text=text,
                                     embedding=embeddings.embed_texts([indexed_text([], text)])[0])
        result = retrieve("dendrites integrate synaptic input", [domain], k=5)
        transaction.rollback()
    finally:
        transaction.set_autocommit(True)
    assert (result.lists_at_once, result.results[0].chunk_id) == (False, chunk.id)
    assert set(result.results[0].source_scores) == {"main:vector", "main:bm25"}


def test_an_exception_while_waiting_cancels_the_second_connections_statement(domain, settings):
    """The vector list waits for a lock another transaction holds on the chunks (BM25 reads
    none); an alarm interrupts the caller while it waits: the exception reaches the caller,
    the vector list's statement is cancelled (it ends while the lock is still held) and its
    slot freed."""
    settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = 0
    settings.KLEA_RETRIEVAL_STATEMENT_TIMEOUT = 60
    vectors = embeddings.embed_queries([QUERY])
    before = backends()

    def interrupt(signum, frame):
        raise TimeoutError("alarm")

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with table_locked("domains_chunk", 60):
            signal.setitimer(signal.ITIMER_REAL, 1.0)
            with pytest.raises(TimeoutError):
                retrieve(QUERY, [domain], query_vectors=vectors)
            for _ in range(50):  # the cancelled statement ends; the call frees its slot
                if free_slots() == side_lists.SIDE_SLOTS:
                    break
                time.sleep(0.1)
            ended_with_the_lock_held = free_slots() == side_lists.SIDE_SLOTS
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert ended_with_the_lock_held
    assert (side_lists.close_side_connections(), backends(settled_at=before)) == (1, before)  # the cancelled one still works: kept
