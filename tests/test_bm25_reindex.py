"""BM25 re-indexing: the migrations that re-tokenise only the chunks whose lexemes change,
and heading-less chunks searched by their document's title (cut to TITLE_CHARS)."""

import pytest
from django.db import connection

from domains.models import Chunk, Document
from domains.retrieval import bm25_search, query_lexemes
from domains.retrieval.bm25 import indexed_statistics, recomputed_statistics

from .test_bm25 import corpus  # noqa: F401

pytestmark = pytest.mark.django_db


def _row_versions(cursor, store_id: int) -> dict[int, str]:
    """Each chunk's row version (ctid): a re-tokenising migration rewrites only the rows whose ctid moves."""
    cursor.execute("SELECT id, ctid::text FROM domains_chunk WHERE store_id = %s", [store_id])
    return dict(cursor.fetchall())


def _retokenised(cursor, store_id: int, function: str, retokenise: str) -> list[int]:
    """Install a search-text ``function`` and run a migration's ``retokenise`` statement:
    the ids of the store's chunks whose rows it rewrote."""
    before = _row_versions(cursor, store_id)
    cursor.execute(function)
    cursor.execute(retokenise)
    after = _row_versions(cursor, store_id)
    return [cid for cid in before if before[cid] != after[cid]]


def test_migration_0009_retokenises_only_the_chunks_with_invisible_characters(corpus):
    import importlib

    migration = importlib.import_module("domains.migrations.0009_search_text_drops_invisible_characters")
    domain, store, _ = corpus
    doc = Document.objects.get(store=store)
    with connection.cursor() as cursor:
        cursor.execute(migration.PREVIOUS_FUNCTION)  # a store indexed before 0009
        soft = Chunk.objects.create(store=store, document=doc, ordinal=50, text="Soft infor\u00admation.")
        assert str(Chunk.objects.get(id=soft.id).search_vector) == "'infor\u00adm':2 'soft':1"

        changed = _retokenised(cursor, store.id, migration.SEARCH_TEXT_FUNCTION, migration.RETOKENISE)
    assert changed == [soft.id]
    assert str(Chunk.objects.get(id=soft.id).search_vector) == "'inform':2 'soft':1"
    assert bm25_search(store.id, query_lexemes("information"), 5)[0][0] == soft.id
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)


def test_migration_0016_retokenises_only_the_chunks_with_dotted_names(corpus):
    import importlib

    migration = importlib.import_module("domains.migrations.0016_search_text_splits_dotted_names")
    domain, store, _ = corpus
    doc = Document.objects.get(store=store)
    with connection.cursor() as cursor:
        cursor.execute(migration.PREVIOUS_FUNCTION)  # a store indexed before 0016
        dotted = Chunk.objects.create(store=store, document=doc, ordinal=50, text="Fill with DataArray.ffill.")
        numbers = Chunk.objects.create(store=store, document=doc, ordinal=51, text="Pi is 3.14, e.g. in v1.2.3.")
        assert str(Chunk.objects.get(id=dotted.id).search_vector) == "'dataarray.ffill':3 'fill':1"

        assert _retokenised(cursor, store.id, migration.SEARCH_TEXT_FUNCTION, migration.RETOKENISE) == [dotted.id]
        assert str(Chunk.objects.get(id=dotted.id).search_vector) == "'dataarray':3 'ffill':4 'fill':1"
        assert bm25_search(store.id, query_lexemes("ffill"), 5)[0][0] == dotted.id
        assert indexed_statistics(store.id) == recomputed_statistics(store.id)
        # and back: the reverse re-tokenises the same chunk with the function it installs
        assert _retokenised(cursor, store.id, migration.PREVIOUS_FUNCTION, migration.RETOKENISE) == [dotted.id]
    assert str(Chunk.objects.get(id=dotted.id).search_vector) == "'dataarray.ffill':3 'fill':1"
    assert str(Chunk.objects.get(id=numbers.id).search_vector) == "'1':7 '3.14':3 'e.g':4 'pi':1 'v':6 'v1.2.3':8"
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)


def test_a_chunk_without_headings_is_searched_by_its_title(corpus):
    """Nothing in a licence's text says "licence": its document's title does, after the
    text (a chunk with headings, or of a document without a title, by its own words only)."""
    domain, store, _ = corpus
    licence = Document.objects.create(store=store, file_name="recipes/LICENSE.md", metadata={"title": "LICENSE"})
    untitled = Document.objects.create(store=store, file_name="4983")
    bare = Chunk.objects.create(store=store, document=licence, ordinal=0, text="This is free and unencumbered software.")
    headed = Chunk.objects.create(store=store, document=licence, ordinal=1, text="Free software.", headings=["Terms"])
    plain = Chunk.objects.create(store=store, document=untitled, ordinal=0, text="Free software.")
    assert str(Chunk.objects.get(id=bare.id).search_vector) == "'free':3 'licens':7 'softwar':6 'unencumb':5"
    assert str(Chunk.objects.get(id=headed.id).search_vector) == "'free':2 'softwar':3 'term':1"
    assert str(Chunk.objects.get(id=plain.id).search_vector) == "'free':1 'softwar':2"
    assert [cid for cid, _ in bm25_search(store.id, query_lexemes("can I reuse these recipes? license"), 5)] == [bare.id]
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)


def test_migration_0021_retokenises_only_heading_less_chunks_of_titled_documents(corpus):
    import importlib

    migration = importlib.import_module("domains.migrations.0021_heading_less_chunks_searched_by_title")
    domain, store, _ = corpus
    licence = Document.objects.create(store=store, file_name="LICENSE.txt", metadata={"title": "Apache License"})
    bare = Chunk.objects.create(store=store, document=licence, ordinal=0, text="Free software.")
    with connection.cursor() as cursor:
        # as indexed before 0021 (the BM25 update trigger follows the search vector)
        cursor.execute("UPDATE domains_chunk SET search_vector = to_tsvector('pg_catalog.english', "
                       "klea_search_text(' ' || text)) WHERE id = %s", [bare.id])
        assert str(Chunk.objects.get(id=bare.id).search_vector) == "'free':1 'softwar':2"
        assert bm25_search(store.id, query_lexemes("license"), 5) == []
        before = _row_versions(cursor, store.id)
        cursor.execute(migration.RETOKENISE)
        after = _row_versions(cursor, store.id)
    assert [cid for cid in before if before[cid] != after[cid]] == [bare.id]  # the corpus's a.md has no title
    assert str(Chunk.objects.get(id=bare.id).search_vector) == "'apach':3 'free':1 'licens':4 'softwar':2"
    assert [cid for cid, _ in bm25_search(store.id, query_lexemes("license"), 5)] == [bare.id]
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)


def test_a_heading_less_chunk_of_a_document_with_a_huge_title_is_stored(corpus):
    """A title of 150,000 words (a 1.5 MB heading as a Markdown file's title) took the
    chunk's tsvector over PostgreSQL's 1 MB limit and failed its write; the chunk is
    searched by the title's first TITLE_CHARS characters."""
    from domains.bm25_sql import TITLE_CHARS

    def word(n: int) -> str:  # letters only: "qa", "qb", ... (digits would split a word)
        out = "q"
        while True:
            n, r = divmod(n, 26)
            out += "abcdefghijklmnopqrstuvwxyz"[r]
            if not n:
                return out

    domain, store, _ = corpus
    title = " ".join(word(n) for n in range(150_000))
    document = Document.objects.create(store=store, file_name="huge.md", metadata={"title": title})
    chunk = Chunk.objects.create(store=store, document=document, ordinal=0, text="Free software.")
    stored = {entry.split("':")[0].strip("'") for entry in str(Chunk.objects.get(id=chunk.id).search_vector).split()}
    assert TITLE_CHARS == 5_000
    assert stored == set(query_lexemes("Free software. " + title[:TITLE_CHARS]))
    assert [cid for cid, _ in bm25_search(store.id, query_lexemes(word(17)), 5)] == [chunk.id]
    assert bm25_search(store.id, query_lexemes(word(100_000)), 5) == []
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)
