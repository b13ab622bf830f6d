"""Bibliographic questions on the model-free path: answered from the cited document's
stored metadata (authors, year, venue, title, DOI), and routed to the domain whose
documents' metadata names what the question names; documents without such metadata
are answered from their text as before."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from chat.backends.extractive.biblio import answer, asked_fields, reference_line
from domains.models import Document, Domain

from .pipeline_helpers import domain_of, run

RAFT = {"title": "In Search of an Understandable Consensus Algorithm", "authors": ["Diego Ongaro", "John Ousterhout"],
        "year": 2014, "journal": "2014 USENIX ATC"}
DIJKSTRA = {"title": "Solution of a Problem in Concurrent Programming Control", "authors": ["E. W. Dijkstra"],
            "year": 1965, "journal": "Communications of the ACM", "doi": "10.1145/365559.365617"}


@pytest.fixture
def papers(db, tmp_path, settings):
    """Two domains: "papers" (two papers with metadata, as the cascade or a library gives
    it; the year and authors are in no chunk) and "recipes" (pages without metadata)."""
    settings.KLEA_LLM_BACKEND = "extractive"
    described = "Computer science papers: the Raft consensus algorithm, Dijkstra's mutual exclusion."
    domain_of(tmp_path, "papers", described, {
        "ongaro2014_raft.md":
            "# Raft basics\n\nA Raft cluster contains several servers; five is a typical number, which allows the "
            "system to tolerate two failures. At any given time each server is in one of three states: leader, "
            "follower, or candidate.\n\n"
            "# Acknowledgments\n\nMany people provided helpful feedback on the paper and its drafts, including "
            "Ed Bugnion, Michael Chan, Hugues Evrard and Daniel Giffin.\n",
        "dijkstra_cacm.md":
            "# The Problem\n\nTo begin, consider N computers, each engaged in a process which can be regarded as "
            "cyclic. In each of the cycles a critical section occurs and the computers have to be programmed in "
            "such a way that at any moment only one of these N cyclic processes is in its critical section.\n",
        "metadata-map.json": json.dumps({
            "ongaro2014_raft.md": {"DEFAULT": RAFT}, "dijkstra_cacm.md": {"DEFAULT": DIJKSTRA}}),
    })
    domain_of(tmp_path, "recipes", "Recipes for home cooking.", {"bread.md": (
        "# Bread\n\nThis bread recipe was written by our baker Anna Berg in 2019.\n\n"
        "## Method\n\nKnead the dough for ten minutes and let it rise for an hour.\n")})
    assert Document.objects.get(file_name="dijkstra_cacm.md").metadata == DIJKSTRA
    assert Document.objects.get(file_name="bread.md").metadata.get("authors") is None
    return list(Domain.objects.order_by("name"))


def test_the_authors_come_from_the_metadata_not_the_acknowledgments(papers):
    result = run("Who are the authors of the Raft paper?", papers)
    assert (result.answer.route, result.answer.domains) == ("domains", ["papers"])
    assert result.answer.text == (
        "*In Search of an Understandable Consensus Algorithm*, Diego Ongaro and John Ousterhout, 2014 USENIX ATC, "
        "2014. [1]")
    assert [(r["number"], r["file_name"]) for r in result.references] == [(1, "ongaro2014_raft.md")]
    # the answer is the document's metadata, not a passage: [1] cites the document as a whole
    # (it opens its top), and no chunk's place is given as where the answer is
    (reference,) = result.references
    assert (reference["markers"], reference["quoted"], reference["pages"]) == (
        [{"chunk_id": None, "passages": []}], [], None)


def test_a_year_only_in_the_metadata_is_routed_and_answered_with_no_domain_ticked(papers):
    question = "In what year was Dijkstra's Solution of a Problem in Concurrent Programming Control published?"
    result = run(question, papers)
    assert (result.answer.route, result.answer.domains) == ("domains", ["papers"])
    line = ("*Solution of a Problem in Concurrent Programming Control*, E. W. Dijkstra, Communications of the ACM, "
            "1965, doi:10.1145/365559.365617.")
    assert result.answer.text == line + " [1]"
    assert [(r["number"], r["file_name"], r["year"]) for r in result.references] == [(1, "dijkstra_cacm.md", 1965)]
    ticked = run(question, papers, pick=["papers"])
    assert ticked.answer.text == result.answer.text


def test_a_paper_named_only_by_its_authors_is_routed_by_its_metadata(papers):
    # "Ongaro" and "Ousterhout" are in no chunk and in no description.
    result = run("When was the paper by Ongaro and Ousterhout published?", papers)
    assert (result.answer.route, result.answer.domains) == ("domains", ["papers"])
    assert result.answer.text == (
        "*In Search of an Understandable Consensus Algorithm*, Diego Ongaro and John Ousterhout, 2014 USENIX ATC, "
        "2014. [1]")


def test_pages_without_metadata_are_answered_from_their_text(papers):
    result = run("Who wrote the bread recipe?", papers)
    assert result.answer.domains == ["recipes"]
    assert result.answer.text == "This bread recipe was written by our baker Anna Berg in 2019. [1]"
    # Not a bibliographic question: the passages answer, as before.
    result = run("What three states can a Raft server be in?", papers)
    assert "leader, follower, or candidate" in result.answer.text


@pytest.mark.parametrize("question, fields", [
    ("Who are the authors of the Raft paper?", {"authors"}),
    ("Who wrote the Raft paper?", {"authors"}),
    ("In what year was Dijkstra's paper published?", {"year"}),
    ("When was the xarray development roadmap written?", {"year"}),
    ("Which journal published the tidy data paper?", {"journal"}),
    ("Where was the Raft paper published?", {"journal"}),
    ("What is the title of the paper by Ongaro?", {"title"}),
    ("What is the DOI of the FLP paper?", {"doi"}),
    ("Which authors wrote the FLP impossibility result?", {"authors"}),
    ("In which conference was Raft presented?", {"journal"}),
    ("What is the paper's title?", {"title"}),
    ("How does the author prove the solution correct?", set()),
    ("What did the authors find?", set()),
    ("When should the steam be released?", set()),
    ("How do I set the title of a plot?", set()),
    ("How are DOIs normalised?", set()),
    ("When is the data written to disk?", set()),
    ("Who developed the NeuroML Development Kit?", set()),
    ("When was kvass first brewed?", set()),
    ("When does the election timeout fire?", set()),
    ("What year is the next leap year?", set()),
])
def test_asked_fields(question, fields):
    assert asked_fields(question) == fields


def _source(number, file_name, metadata):
    return SimpleNamespace(number=number, file_name=file_name, metadata=metadata, chunks=[])


def test_the_document_named_by_the_question_is_the_one_cited():
    sources = [_source(1, "dijkstra_cacm.md", DIJKSTRA), _source(2, "ongaro2014_raft.md", RAFT)]
    assert answer("Who wrote the Raft paper?", sources) == (
        2, "*In Search of an Understandable Consensus Algorithm*, Diego Ongaro and John Ousterhout, "
           "2014 USENIX ATC, 2014.")
    # Nothing names a document: the best retrieved one, when it has the field.
    assert answer("Who wrote it?", sources)[0] == 1
    assert answer("Who wrote it?", [_source(1, "notes.md", {"title": "Notes"}), *sources]) is None
    # A follow-up names its document in the question before it.
    assert answer("And when was it published?", sources, "Who wrote the Raft paper? And when was it published?")[0] == 2
    assert answer("What does Raft do?", sources) is None


def test_the_reference_line_holds_only_stored_fields():
    assert reference_line({"title": "Bread.", "authors": ["alex-selimov"], "year": 2021}) == (
        "*Bread*, alex-selimov, 2021.")
    assert reference_line({"authors": "A. Author", "keywords": ["x"]}) == "A. Author."
    assert reference_line({"authors": [], "year": ""}) == ""
    many = [f"Author {i}" for i in range(12)]
    assert reference_line({"authors": many, "year": 2016}) == "Author 0 et al., 2016."
    assert reference_line({"authors": ["A", "B", "C"]}) == "A, B and C."


def test_documents_are_found_by_their_metadata_through_the_index(papers):
    """document_coverage reads the documents whose bibliographic line holds a question
    term through the GIN index of migration 0019 (the expression spelled as indexed), not
    by reading every document; a quote or backslash in a lexeme is taken as it is."""
    from django.db import connection

    from domains.retrieval import document_coverage, query_lexemes
    from domains.retrieval.probe import _DOCUMENT_TERMS, _DOCUMENT_VECTOR, any_of

    assert any_of(["raft", "it's", "a\\b"]) == "'raft' | 'it''s' | 'a\\\\b'"
    papers_domain = next(d for d in papers if d.name == "papers")
    store = papers_domain.stores.get()
    dijkstra = Document.objects.get(file_name="dijkstra_cacm.md")
    found = document_coverage(query_lexemes("Dijkstra 1965 it's a\\b"), papers)
    assert list(found) == [papers_domain.id] and found[papers_domain.id][1] == dijkstra.id
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        # The expression as the query spells it is the index's (else no index could serve it).
        cursor.execute(f"EXPLAIN SELECT d.id FROM domains_document d WHERE {_DOCUMENT_VECTOR} @@ %s::tsquery",
                       [any_of(["dijkstra"])])
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(_DOCUMENT_TERMS, {"terms": ["dijkstra", "1965", "raft"], "store": store.id,
                                         "query": any_of(["dijkstra", "1965", "raft"])})
        rows = sorted(cursor.fetchall())
    assert "domains_document_bibliographic" in plan
    raft = Document.objects.get(file_name="ongaro2014_raft.md")
    assert rows == sorted([(dijkstra.id, ["1965", "dijkstra"]), (raft.id, ["raft"])])
