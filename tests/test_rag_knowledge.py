"""Knowledge: adding files without pruning, search items, the three strategies (each
wins a case), and retrieval failures told apart from empty matches (real Postgres)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import override_settings

from chat.rag import Knowledge, RetrievalStrategy, SearchResultItem
from domains.models import Document, Domain, Store
from ingestion.outcomes import IngestError

from .rag_data import DOCS, PARAPHRASE, RARE_CODE, THREE_PARTS, write_docs

pytestmark = pytest.mark.django_db

BASIC, FUSION, HYBRID = RetrievalStrategy.BASIC, RetrievalStrategy.FUSION, RetrievalStrategy.HYBRID


@pytest.fixture
def knowledge(tmp_path):
    knowledge = Knowledge(store="rag-docs", domain="rag", create=True, description="Baking, capitals, printers.")
    report = knowledge.add(write_docs(tmp_path / "docs"))
    assert [(o.file_name, o.status, o.chunks) for o in report.outcomes] == [(n, "stored", 1) for n in sorted(DOCS)]
    return knowledge


def files(results) -> list[str]:
    return [item.filename for item in results]


def test_add_creates_store_and_domain_and_never_prunes(tmp_path):
    folder = write_docs(tmp_path / "a", ["sourdough.md", "flour.md"])
    single = write_docs(tmp_path / "b", ["paris.md"]) / "paris.md"
    (tmp_path / "b" / "notes.xyz").write_text("not a document")
    knowledge = Knowledge(store="kb", create=True)
    first = knowledge.add([folder, single, tmp_path / "b" / "notes.xyz"])
    assert [(o.file_name, o.status) for o in first.outcomes] == [
        ("flour.md", "stored"), ("sourdough.md", "stored"), ("paris.md", "stored"), ("notes.xyz", "unsupported")
    ]
    store = Store.objects.get(name="kb")
    assert (store.domain.name, store.domain.description, store.mode) == ("kb", "Documents of the store kb.", "both")
    # a file gone from the folder: adding the folder again keeps its document (and paris.md)
    (folder / "flour.md").unlink()
    again = knowledge.add(folder)
    assert [(o.file_name, o.status) for o in again.outcomes] == [("sourdough.md", "unchanged")]
    assert sorted(store.documents.values_list("file_name", flat=True)) == ["flour.md", "paris.md", "sourdough.md"]
    assert store.documents.get(file_name="paris.md").source_path == str(single.resolve())
    from ingestion.models import IngestionJob

    job = IngestionJob.objects.get(pk=again.job_id)
    assert (job.kind, job.status, job.outcomes) == ("build", "succeeded", {"sourdough.md": "unchanged"})


def test_add_errors_name_the_input(tmp_path):
    folder = write_docs(tmp_path, ["paris.md"])
    with pytest.raises(IngestError, match="domain 'nowhere' does not exist; create it in the admin"):
        Knowledge(store="absent", domain="nowhere").add(folder)
    Domain.objects.create(name="lab", description="Lab papers.")
    with pytest.raises(IngestError, match="store 'absent' does not exist"):
        Knowledge(store="absent", domain="lab").add(folder)
    with pytest.raises(IngestError, match=r"/missing.md: no such file or directory"):
        Knowledge(store="kb", create=True).add(tmp_path / "missing.md")
    with pytest.raises(IngestError, match=r"^/dev/zero: not a regular file or folder$"):
        Knowledge(store="kb", create=True).add("/dev/zero")
    with pytest.raises(ValueError, match=r"Knowledge\(domain='rag'\) has no store to add to"):
        Knowledge(domain="rag").add(tmp_path)
    with pytest.raises(ValueError, match="Knowledge needs a store name, a domain name, or both"):
        Knowledge()
    assert not Store.objects.filter(name="absent").exists()


def test_search_items(knowledge):
    results = knowledge.search("Which city is the capital of Mongolia?", top_k=2)
    assert (results.retrieval_failed, results.error) == (False, "")
    top = results[0]
    assert isinstance(top, SearchResultItem)
    assert (top.filename, top.text) == ("mongolia.md", DOCS["mongolia.md"].split("\n\n", 1)[1])
    document = Document.objects.get(store__name="rag-docs", file_name="mongolia.md")
    assert top.source == document.source_path and top.source.endswith("/docs/mongolia.md")
    assert top.id == top.metadata["chunk_id"] and top.metadata["doc_id"] == str(document.pk)
    assert {k: top.metadata[k] for k in ("source", "filename", "store", "domain", "headings")} == {
        "source": top.source, "filename": "mongolia.md", "store": "rag-docs", "domain": "rag", "headings": ["Mongolia"]
    }
    assert set(top.metadata["source_scores"]) == {"rag-docs:vector"}
    assert len(results) == 2 and 0 <= results[1].score <= top.score <= 1
    assert results.queries == ["Which city is the capital of Mongolia?"]
    assert files(Knowledge(domain="rag").search("capital of Mongolia", top_k=1)) == ["mongolia.md"]
    assert files(async_to_sync(knowledge.asearch)("capital of Mongolia", top_k=1)) == ["mongolia.md"]


def test_basic_wins_a_paraphrase_that_bm25_pulls_away(knowledge):
    # dense search sees the meaning; BM25 matches "program", "run", "faster", "make" in marathon.md
    assert files(knowledge.search(PARAPHRASE, top_k=1, strategy=BASIC)) == ["speed.md"]
    assert files(knowledge.search(PARAPHRASE, top_k=1, strategy=HYBRID)) == ["marathon.md"]


def test_hybrid_wins_a_rare_exact_code(knowledge):
    # the embedding confuses KQ7731 with KQ7713; only BM25 matches the exact token
    assert files(knowledge.search(RARE_CODE, top_k=1, strategy=BASIC)) == ["err2.md"]
    hybrid = knowledge.search(RARE_CODE, top_k=1, strategy=HYBRID)
    assert files(hybrid) == ["err1.md"]
    assert set(hybrid[0].metadata["source_scores"]) == {"rag-docs:vector", "rag-docs:bm25"}
    assert hybrid.keywords == ["kq", "7731", "kq7731"]  # parts and joined form (docs/retrieval.md, "Tokens")


def test_fusion_wins_a_three_part_question(knowledge):
    # one embedding of the whole question leans to its longest part (bread); one search
    # per clause gives each part its own best document
    assert files(knowledge.search(THREE_PARTS, top_k=3, strategy=BASIC)) == ["sourdough.md", "yeast.md", "mongolia.md"]
    assert files(knowledge.search(THREE_PARTS, top_k=3, strategy=HYBRID)) == ["yeast.md", "sourdough.md", "mongolia.md"]
    fusion = knowledge.search(THREE_PARTS, top_k=3, strategy=FUSION)
    assert sorted(files(fusion)) == ["err3.md", "mongolia.md", "sourdough.md"]
    assert fusion.queries == ["How do I bake sourdough bread at home with flour and yeast",
                              "what is the capital of Mongolia", "why did my printer lose its network connection"]


def test_failures_are_not_empty_matches(knowledge):
    empty = Knowledge(store="rag-docs")
    Domain.objects.filter(name="rag").update(min_relevance=0.99)  # nothing is similar enough
    result = empty.search("Which city is the capital of Mongolia?")
    assert (list(result), result.retrieval_failed, result.error) == ([], False, "")
    Domain.objects.filter(name="rag").update(min_relevance=0.15)

    with override_settings(KLEA_EMBEDDING_DIM=512):
        wrong = knowledge.search("capital of Mongolia")
    assert wrong.retrieval_failed and list(wrong) == []
    assert "rag-docs:vector (domain rag): embedding has shape (1, 384); expected (n, 512)" in wrong.error

    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE domains_document RENAME TO broken_documents")
    broken = knowledge.search("capital of Mongolia")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE broken_documents RENAME TO domains_document")
    assert broken.retrieval_failed and broken.error.startswith('database: relation "domains_document" does not exist')

    Domain.objects.filter(name="rag").update(active=False)
    assert knowledge.search("capital").error == "domain 'rag' is inactive"
    Domain.objects.filter(name="rag").delete()  # the store goes with its domain
    gone = knowledge.search("capital of Mongolia")
    assert (list(gone), gone.retrieval_failed) == ([], True)
    assert gone.error == "store 'rag-docs' does not exist (deleted, or its domain was)"
    assert Knowledge(domain="rag").search("capital").error == "domain 'rag' does not exist"


def test_bad_input_raises(knowledge):
    with pytest.raises(ValueError, match="top_k must be an integer >= 1, got 0"):
        knowledge.search("capital", top_k=0)
    with pytest.raises(ValueError, match="unknown retrieval strategy 'sparse'; allowed: basic, fusion, hybrid"):
        knowledge.search("capital", strategy="sparse")
    Store.objects.filter(name="rag-docs").update(mode=Store.Mode.BM25)
    with pytest.raises(ValueError, match="store 'rag-docs' has mode 'bm25' .* use RetrievalStrategy.HYBRID"):
        knowledge.search("capital")
    assert files(knowledge.search(RARE_CODE, top_k=1, strategy=HYBRID)) == ["err1.md"]


def test_equal_text_from_two_files_is_kept_twice(tmp_path):
    from chat.rag import RAG

    for folder in ("first", "second"):
        write_docs(tmp_path / folder, ["paris.md"])
    (tmp_path / "second" / "paris.md").rename(tmp_path / "second" / "france.md")
    knowledge = Knowledge(store="twins", create=True)
    knowledge.add([tmp_path / "first", tmp_path / "second"])
    pack = RAG(knowledge).retrieve("What is the capital of France?", top_k=2)
    assert sorted(c.source for c in pack.citations) == ["france.md", "paris.md"]
    assert pack.citations[0].text == pack.citations[1].text
    assert pack.context.count("Paris is the capital of France") == 2


@pytest.mark.parametrize(
    "paths, error, message",
    [
        ("", IngestError, "empty path (''); name it explicitly ('.' for the current directory)"),
        (["  "], IngestError, "empty path ('  '); name it explicitly ('.' for the current directory)"),
        ([], IngestError, "no paths given"),
        (None, TypeError, "paths must be a str or pathlib.Path, or a list of them; got NoneType"),
        (5, TypeError, "paths must be a str or pathlib.Path, or a list of them; got int"),
        ([5], TypeError, "a path must be a str or pathlib.Path, got int (5)"),
    ],
)
def test_add_refuses_empty_and_mistyped_paths(tmp_path, monkeypatch, paths, error, message):
    write_docs(tmp_path, ["paris.md"])
    monkeypatch.chdir(tmp_path)  # an empty path must not ingest the current directory
    documents = Document.objects.count()  # other tests' committed corpora may be present
    with pytest.raises(error) as info:
        Knowledge(store="kb-empty", create=True).add(paths)
    assert str(info.value) == message
    assert (Store.objects.filter(name="kb-empty").exists(), Document.objects.count()) == (False, documents)


def test_two_files_of_one_name_are_refused_before_any_job(tmp_path):
    """Two files keyed alike would be one document counted twice: the job never closed."""
    from ingestion.models import IngestionJob

    first, second = write_docs(tmp_path / "first", ["paris.md"]), write_docs(tmp_path / "second", ["paris.md"])
    jobs = IngestionJob.objects.count()
    with pytest.raises(IngestError) as info:
        Knowledge(store="kb-twice", create=True).add([first, second])
    assert str(info.value) == (
        f"two files would both be stored as 'paris.md': {first / 'paris.md'} and {second / 'paris.md'}; "
        "add them in separate calls, or from a folder that holds both"
    )
    with pytest.raises(IngestError) as info:
        Knowledge(store="kb-twice", create=True).add([first / "paris.md", tmp_path / "nul\0.md"])
    assert str(info.value) == f"path contains a NUL character ({str(tmp_path)!r}"[:-1] + "/nul\\x00.md')"
    assert (IngestionJob.objects.count(), Store.objects.filter(name="kb-twice").exists()) == (jobs, False)
    # the same file named twice is one file
    report = Knowledge(store="kb-twice", create=True).add([first / "paris.md", first / "paris.md", first])
    job = IngestionJob.objects.get(pk=report.job_id)
    assert [(o.file_name, o.status) for o in report.outcomes] == [("paris.md", "stored")]
    assert (job.status, job.done, job.total) == ("succeeded", 1, 1)


def test_a_bad_store_name_creates_nothing(tmp_path):
    folder = write_docs(tmp_path, ["paris.md"])
    before = (Domain.objects.count(), Store.objects.count())
    with pytest.raises(IngestError) as info:
        Knowledge(store="bad name!", create=True).add(folder)
    assert str(info.value) == (
        "invalid store name 'bad name!': letters, digits, '_', '.', '-', starting with a letter or digit, "
        "at most 100 characters"
    )
    with pytest.raises(IngestError) as info:
        Knowledge(store="kb", domain="undefined", create=True).add(folder)
    assert str(info.value) == "invalid domain name 'undefined': reserved (the classifier's 'no domain' answer)"
    assert (Domain.objects.count(), Store.objects.count()) == before


def test_a_queued_file_that_is_gone_fails_alone(tmp_path):
    from ingestion.runs.steps import run_file

    folder = write_docs(tmp_path / "docs", ["paris.md"])
    Knowledge(store="kb-gone", create=True).add(folder)
    store = Store.objects.get(name="kb-gone")
    outcome = run_file("build", str(folder), "sourdough.md", store.pk, {})
    assert (outcome.status, outcome.reason, outcome.error) == (
        "failed", "missing", "sourdough.md: vanished during the run"
    )
