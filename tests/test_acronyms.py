"""Acronyms a question asks to spell out, and the chunks that spell them out
(domains/retrieval/acronyms.py)."""

import pytest

from domains import embeddings
from domains.retrieval import definitions
from domains.models import Chunk, Document, Domain, Store
from domains.retrieval import acronym_definitions, asked_acronym, expansion, retrieve
from domains.retrieval.filters import FieldSpec, compile_filter
from domains.text import indexed_text


@pytest.mark.parametrize("question, acronym", [
    ("What does the acronym LEMS stand for?", "LEMS"),
    ("what does CF stand for in CF conventions", "CF"),  # the same one twice
    ("What is HDF5 short for?", "HDF5"),
    ("Which abbreviation is NWB?", "NWB"),
    ("What does LEMS do?", ""),  # not asked to be spelled out
    ("What does the acronym lems stand for?", ""),  # no capitals
    ("What do NWB and HDF5 stand for?", ""),  # two of them
    ("Which value types can a filter field have?", ""),
])
def test_the_acronym_a_question_asks_to_spell_out(question, acronym):
    assert asked_acronym(question) == acronym


@pytest.mark.parametrize("acronym, text, spelled", [
    ("LEMS", "NeuroML2 is built on the **LEMS (Low Entropy Model Specification) language**, which",
     "LEMS (Low Entropy Model Specification)"),
    ("COMBINE", 'The "COmputational Modeling in BIology NEtwork" (COMBINE) is an initiative',
     'COmputational Modeling in BIology NEtwork" (COMBINE)'),  # by its capitals
    ("LEMS", "# LEMS: Low Entropy Model Specification", "LEMS: Low Entropy Model Specification"),
    ("XSD", "validated against an XML Schema Definition (XSD) file", "XML Schema Definition (XSD)"),
    ("RRF", "fused by Reciprocal Rank Fusion (RRF) in the final SELECT", "Reciprocal Rank Fusion (RRF)"),
    ("NCS", "NCS (Neo-Cortical Simulator) runs large networks", "NCS (Neo-Cortical Simulator)"),
    ("LEMS", "For more information on LEMS (see Cannon et al. 2014)", ""),  # parentheses that do not spell it
    ("LEMS", 'a block which is called "Lems" (Low Entropy Model Specification)', ""),  # not the acronym as asked
    ("LEMS", "jLEMS (Low Entropy Model Specification) is", ""),  # part of another name
])
def test_where_a_text_spells_out_an_acronym(acronym, text, spelled):
    assert expansion(acronym, text) == spelled


def test_an_acronym_is_looked_for_around_its_parentheses_only():
    # Zero-width spaces cost no token, so a chunk holding them has no length bound: the
    # words before "(LEMS)" were looked for from every character (25 us each; a chunk of
    # 300,000 of them took 8 s, and the scan reads up to 200 chunks).
    filler = "\u200b" * 1_000_000
    assert expansion("LEMS", f"LEMS (a thing) here.{filler} End.") == ""
    assert expansion("LEMS", f"{filler}Low Entropy Model Specification (LEMS){filler}(LEMS)") == (
        "Low Entropy Model Specification (LEMS)")


@pytest.fixture
def standards(db):
    domain = Domain.objects.create(name="standards", description="modelling standards", default_k=2)
    store = Store.objects.create(name="standards-docs", domain=domain)
    texts = {
        "events.md": ["COMBINE meetings: the COMBINE forum and HARMONY each year.",
                      "We met at COMBINE (see the calendar) in 2021."],
        "standards.md": ['The "COmputational Modeling in BIology NEtwork" (COMBINE) coordinates community standards.'],
        "howto.md": ["Combine the models with combine_networks() and combine cells in one population."],
    }
    ids = {}
    for year, (file_name, chunks) in enumerate(texts.items(), start=2019):
        document = Document.objects.create(store=store, file_name=file_name)
        vectors = embeddings.embed_texts([indexed_text([], text) for text in chunks])
        for i, (text, vector) in enumerate(zip(chunks, vectors)):
            ids[(file_name, i)] = Chunk.objects.create(store=store, document=document, ordinal=i, text=text,
                                                       embedding=vector, year=year).id
    return domain, store, ids


def test_the_chunks_that_spell_out_an_acronym_are_found_by_its_form(standards):
    domain, store, ids = standards
    assert acronym_definitions("COMBINE", store.id, 5) == [ids[("standards.md", 0)]]
    assert acronym_definitions("HARMONY", store.id, 5) == []
    only_2019 = compile_filter({"year": 2019}, [FieldSpec("year", "int")])  # the meetings
    assert acronym_definitions("COMBINE", store.id, 5, where=only_2019) == []


def test_a_question_asking_what_an_acronym_stands_for_gets_the_chunk_spelling_it_out_first(standards):
    domain, store, ids = standards
    question = "What does the acronym COMBINE stand for?"
    result = retrieve(question, [domain])
    assert [c.chunk_id for c in result.results][0] == ids[("standards.md", 0)]
    assert len(result.results) == 2
    # the lists alone rank the meetings first
    lists = [c.chunk_id for c in retrieve("What does COMBINE mean?", [domain]).results]
    assert lists[0] != ids[("standards.md", 0)]


def test_a_common_acronym_costs_the_chunks_where_it_weighs_most(standards, monkeypatch):
    domain, store, ids = standards
    document = Document.objects.get(store=store, file_name="standards.md")
    padded = "The COMBINE (COmputational Modeling in BIology NEtwork) pages list " + "many standards " * 40 + "."
    longer = Chunk.objects.create(store=store, document=document, ordinal=1, text=padded, year=2020,
                                  embedding=embeddings.embed_texts([padded])[0]).id
    assert acronym_definitions("COMBINE", store.id, 5) == [ids[("standards.md", 0)], longer]
    # the scan reads the chunks holding the lexeme best BM25 impact first: the four short
    # ones (the verb's too) before the long one that mentions it once
    monkeypatch.setattr(definitions, "SCANNED", 4)
    assert acronym_definitions("COMBINE", store.id, 5) == [ids[("standards.md", 0)]]
