"""What a "what is X?" question asks to define, and the chunks that define it
(domains/retrieval/definitions.py)."""

import pytest

from domains import embeddings
from domains.models import Chunk, Document, Domain, Store
from domains.retrieval import retrieve
from domains.retrieval.definitions import asked_subjects, definition_chunks, defines_subject
from domains.retrieval.filters import FieldSpec, compile_filter
from domains.text import indexed_text


@pytest.mark.parametrize("question, subjects", [
    ("What is a domain in Klea?", ["domain"]),
    ("What is steak tartare?", ["steak tartare"]),
    ("What is a domain and what is a store?", ["domain", "store"]),
    ("What are domains and stores?", ["domains", "stores"]),
    ("What is the default chunk size in tokens?", []),  # more than a term and its field
    ("How do I add a domain?", []),
])
def test_the_subjects_a_question_asks_to_define(question, subjects):
    assert asked_subjects(question) == subjects


@pytest.mark.parametrize("text, defines", [
    ("- **Domain** — a knowledge area (\"NeuroML documentation\").", True),
    ("A domain is a knowledge area.", True),
    ("Domains are knowledge areas.", True),  # the plural
    ("domain: a knowledge area", True),
    ("Domain\n    a knowledge area", True),  # a definition-list entry
    ("A domain has stores and filter fields.", False),  # says something of it, does not define it
    ("Each domain is searched on its own.", False),
])
def test_a_text_opening_by_defining_its_subject(text, defines):
    assert defines_subject("domain", text) is defines


def test_a_run_of_blank_lines_after_a_term_is_read_once():
    # "\s*\n\s+" split the run every way before failing: 20,000 blank lines took 5 s
    assert defines_subject("domain", "Domain" + "\n" * 200_000) is False
    assert defines_subject("domain", "Domain" + "\n" * 200_000 + "    a knowledge area") is True


@pytest.fixture
def docs(db):
    domain = Domain.objects.create(name="docs", description="documentation", default_k=2)
    store = Store.objects.create(name="docs-store", domain=domain)
    texts = {
        "api.md": ["Each domain is searched with its stores; a domain lists its stores by name."],
        "security.md": ["A domain may be limited to groups: the domain's groups decide who asks it."],
        "concepts.md": ["Read this first. - **Domain** — a knowledge area. Its description tells the classifier "
                        "what it covers.\n- **Store** — a collection of chunks."],
    }
    ids = {}
    for year, (file_name, chunks) in enumerate(texts.items(), start=2019):
        document = Document.objects.create(store=store, file_name=file_name)
        vectors = embeddings.embed_texts([indexed_text([], text) for text in chunks])
        for i, (text, vector) in enumerate(zip(chunks, vectors)):
            ids[file_name] = Chunk.objects.create(store=store, document=document, ordinal=i, text=text,
                                                  embedding=vector, year=year).id
    return domain, store, ids


def test_the_chunks_defining_a_term_are_found_by_its_form(docs):
    domain, store, ids = docs
    assert definition_chunks("domain", store.id, 5) == [ids["concepts.md"]]
    assert definition_chunks("domains", store.id, 5) == [ids["concepts.md"]]
    assert definition_chunks("group", store.id, 5) == []
    only_2019 = compile_filter({"year": 2019}, [FieldSpec("year", "int")])
    assert definition_chunks("domain", store.id, 5, where=only_2019) == []


def test_a_chunk_of_many_lines_is_searched_for_a_definition_once(docs):
    # Empty lines cost no token, so a code chunk may hold any number of them; a copy of
    # the text after each line was matched (40,000 lines took 0.6 s, 300,000 minutes).
    domain, store, ids = docs
    text = "```\nA domain x\n" + "\n" * 300_000 + "```"
    document = Document.objects.create(store=store, file_name="blank.md")
    Chunk.objects.create(store=store, document=document, ordinal=0, text=text, year=2022,
                         embedding=embeddings.embed_texts(["A domain x"])[0])
    assert definition_chunks("domain", store.id, 5) == [ids["concepts.md"]]


def test_a_question_asking_what_a_term_is_gets_the_chunk_defining_it_first(docs):
    domain, store, ids = docs
    assert [c.chunk_id for c in retrieve("What is a domain?", [domain]).results][0] == ids["concepts.md"]
    # the lists alone put the chunks repeating the word first
    assert [c.chunk_id for c in retrieve("domain", [domain]).results][0] != ids["concepts.md"]
