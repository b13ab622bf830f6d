"""chat.rag value types and context helpers: lookup order, dedup, budget, citations."""

from __future__ import annotations

import pytest

from chat.rag import (
    Citation,
    ContextPack,
    DefaultCitationFormatter,
    DefaultContextBuilder,
    RAGResult,
    SearchResultItem,
    build_context,
    deduplicate_chunks,
    estimate_tokens,
)
from chat.rag.context import item_filename, item_source, item_text


class Memory:
    """A result object of another library: ``memory`` instead of ``text``."""

    def __init__(self, memory, source="", metadata=None):
        self.memory = memory
        self.source = source
        self.metadata = metadata


def test_lookup_order_for_dicts_and_objects():
    both = {"text": "t", "memory": "m", "source": "item.md", "metadata": {"source": "meta.md", "filename": "f.md"}}
    assert (item_text(both), item_source(both), item_filename(both)) == ("t", "meta.md", "f.md")
    fallback = {"memory": "m", "source": "item.md", "filename": "i.md", "metadata": None}
    assert (item_text(fallback), item_source(fallback), item_filename(fallback)) == ("m", "item.md", "i.md")
    obj = SearchResultItem(id="1", text="x", source="s.md", filename="s.md", metadata={"filename": "meta.md"})
    assert (item_text(obj), item_source(obj), item_filename(obj)) == ("x", "s.md", "meta.md")
    assert (item_text(Memory("m")), item_source(Memory("m")), item_filename(Memory("m"))) == ("m", "", "")
    assert (item_text({}), item_source({}), item_filename({})) == ("", "", "")


def test_deduplicate_keeps_equal_text_from_two_files_and_drops_empty_items():
    results = [
        {"text": "same", "metadata": {"source": "a.md"}},
        SearchResultItem(id="2", text="same", source="b.md"),
        {"text": "same", "source": "a.md"},  # item.source a.md = metadata source a.md: a repeat
        None,
        {"text": "", "metadata": {"source": "c.md"}},
        Memory("same", source="b.md"),  # a repeat of the second
        Memory("other", source="b.md"),
    ]
    kept = deduplicate_chunks(results)
    assert kept == [results[0], results[1], results[6]]


def test_build_context_labels_numbers_and_separator():
    results = [
        {"text": "Alpha.", "metadata": {"filename": "a.md", "source": "/x/a.md"}},
        SearchResultItem(id="7", text="Beta.", source="/x/b.md"),
        Memory("Gamma."),
        {"text": "Alpha.", "metadata": {"filename": "a.md", "source": "/x/a.md"}},
    ]
    context, used = build_context(results)
    assert context == "[1] a.md\nAlpha.\n\n---\n\n[2] /x/b.md\nBeta.\n\n---\n\n[3] Source 3\nGamma."
    assert used == results[:3]
    bare, used = build_context(results, include_source=False, separator="\n")
    assert bare == "Alpha.\nBeta.\nGamma."
    assert "[" not in bare and "a.md" not in bare
    undeduplicated, used = build_context(results, deduplicate=False, include_source=False, separator=" | ")
    assert undeduplicated == "Alpha. | Beta. | Gamma. | Alpha."
    assert build_context([]) == ("", [])
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        build_context(results, max_tokens=0)


def test_token_budget_uses_fewer_than_three_of_three_long_chunks():
    long = ["word " * 300, "term " * 300, "item " * 300]  # 1,500 characters = 375 tokens each
    results = [{"text": t.strip(), "metadata": {"filename": f"{i}.md"}} for i, t in enumerate(long)]
    assert estimate_tokens(results[0]["text"]) == 375
    context, used = build_context(results, max_tokens=500)
    assert len(used) < 3
    # the first fits whole (377 tokens with its label, + 2 for the separator); 119 remain, so
    # the second is cut to them
    assert used == results[:2]
    assert estimate_tokens(context) <= 500
    assert context.endswith("...")
    tight, used = build_context(results, max_tokens=400)
    assert used == results[:1]  # 19 tokens left: too few for a partial chunk
    assert estimate_tokens("") == 0 and estimate_tokens("abcde") == 2


def test_default_builder_and_formatter():
    results = [{"text": "Alpha.", "score": 0.9, "id": 11, "metadata": {"filename": "a.md", "doc_id": 3}}]
    assert DefaultContextBuilder(include_source=False).build(results, max_tokens=100) == ("Alpha.", results)
    citation = DefaultCitationFormatter().format([None, *results], start_id=5)
    assert citation == [
        Citation(id="5", source="a.md", text="Alpha.", score=0.9, doc_id="3", chunk_id="11",
                 metadata={"filename": "a.md", "doc_id": 3})
    ]
    unnamed = DefaultCitationFormatter().format([Memory("x" * 600)])[0]
    assert (unnamed.id, unnamed.source, len(unnamed.text), unnamed.chunk_id, unnamed.doc_id) == ("1", "Source 1", 500,
                                                                                                  None, None)


def test_result_types_format_and_round_trip():
    citations = [
        Citation(id="1", source="a.md", text="Alpha " * 30, score=0.5),
        Citation(id="2", source="b.md", text="B\n\nonly r ′ but\talso", metadata={"pages": [2, 2]}),
    ]
    result = RAGResult(answer="Answer [1].", citations=citations, context_used="ctx", query="q", metadata={"k": 1})
    assert result.has_citations
    assert result.format_answer_with_citations() == (
        "Answer [1].\n\nSources:\n  [1] a.md: " + ("Alpha " * 30)[:100] + "...\n  [2] b.md, p. 2: B only r ′ but also"
    )
    assert RAGResult(answer="Plain.").format_answer_with_citations() == "Plain."
    assert not RAGResult(answer="Plain.").has_citations
    assert RAGResult.from_dict(result.to_dict()) == result
    pack = ContextPack(context="ctx", citations=citations, query="q", metadata={"top_k": 2})
    assert pack.format_for_prompt() == "ctx\n\nSources:\n  [1] a.md\n  [2] b.md"
    assert pack.format_for_prompt(include_sources=False) == "ctx"
    assert ContextPack.from_dict(pack.to_dict()) == pack
    assert Citation.from_dict({"id": "3"}) == Citation(id="3", source="", text="")
    item = SearchResultItem(id="1", text="t", score=0.5)
    assert (item.get("text"), item.get("score"), item.get("nope", 7)) == ("t", 0.5, 7)


def test_value_types_import_without_django_and_setup_makes_rag_importable():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    plain = (
        "import chat.rag as r; print(r.build_context([{'text': 'a'}])[0], r.RAGConfig().top_k); "
        "import sys; print('django.apps' in sys.modules and __import__('django.apps').apps.ready)"
    )
    out = subprocess.run([sys.executable, "-c", plain], cwd=root, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["[1] Source 1", "a 5", "False"]
    early = subprocess.run([sys.executable, "-c", "from chat.rag import RAG"], cwd=root, env=env, capture_output=True,
                           text=True)
    assert early.returncode == 1 and "ImproperlyConfigured" in early.stderr
    script = "from chat.rag import setup; setup(); setup(); from chat.rag import RAG, Knowledge; print(RAG, Knowledge)"
    ready = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                           check=True)
    assert ready.stdout.strip() == "<class 'chat.rag.rag.RAG'> <class 'chat.rag.knowledge.Knowledge'>"


def test_material_sources_carry_the_file_level_fields():
    """The Python API hands the backend its results as sources with their file-level
    fields, as the chat pipeline does (a paper's title, authors and year)."""
    from chat.rag.generation import material_of
    from chat.rag.results import SearchResultItem

    item = SearchResultItem(id="12", text="Raft is a consensus algorithm.", score=0.5, metadata={
        "title": "In Search of an Understandable Consensus Algorithm", "authors": ["Diego Ongaro", "John Ousterhout"],
        "year": 2013, "journal": "", "doc_id": 7, "store": "papers", "domain": "papers", "file_name": "raft.pdf"})
    (source,) = material_of("[1] ...", [item]).sources
    assert source.metadata == {"title": "In Search of an Understandable Consensus Algorithm",
                               "authors": ["Diego Ongaro", "John Ousterhout"], "year": 2013}
