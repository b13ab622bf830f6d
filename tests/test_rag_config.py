"""RAGConfig and the RAG steps that need no database: defaults, validation, per-call
overrides (also under 20 concurrent calls), min_score, top_k, reranking, injected
context builders and citation formatters. The knowledge here is a user-written object
with the documented ``search`` signature (RAG accepts any such object)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import async_to_sync

from chat.rag import DEFAULT_TEMPLATE, RAG, Citation, RAGConfig, RetrievalStrategy

from .rag_data import ListKnowledge, items


def test_defaults_round_trip_and_validation():
    config = RAGConfig()
    assert (config.top_k, config.min_score, config.max_context_tokens) == (5, 0.0, 4000)
    assert config.include_citations is True
    assert (config.retrieval_strategy, config.rerank, config.rerank_top_k) == (RetrievalStrategy.BASIC, False, 3)
    assert (config.template, config.system_prompt, config.stream) == (DEFAULT_TEMPLATE, None, False)
    assert "{context}" in config.template and "{question}" in config.template
    custom = RAGConfig(top_k=8, retrieval_strategy="hybrid", system_prompt="Be brief.")
    assert custom.retrieval_strategy is RetrievalStrategy.HYBRID
    assert custom.to_dict()["retrieval_strategy"] == "hybrid"
    assert RAGConfig.from_dict({**custom.to_dict(), "model": "ignored"}) == custom
    assert custom.replace(top_k=2).top_k == 2 and custom.top_k == 8
    with pytest.raises(ValueError, match="unknown retrieval strategy 'dense'; allowed: basic, fusion, hybrid"):
        RAGConfig(retrieval_strategy="dense")
    with pytest.raises(ValueError, match="top_k must be an integer >= 1, got 0"):
        RAGConfig(top_k=0)
    with pytest.raises(ValueError, match=r"min_score must be in \[0, 1\], got 1.5"):
        RAGConfig(min_score=1.5)
    with pytest.raises(ValueError, match=r"template must contain \{question\}"):
        RAGConfig(template="{context}")
    with pytest.raises(AttributeError):
        config.top_k = 3  # frozen: nothing can change a RAG's config behind its back


def test_top_k_three_of_ten_and_min_score():
    rag = RAG(ListKnowledge(items(10)), config=RAGConfig(top_k=3))
    pack = rag.retrieve("q")
    assert [c.id for c in pack.citations] == ["1", "2", "3"]
    assert [c.source for c in pack.citations] == ["f0.md", "f1.md", "f2.md"]
    assert pack.metadata["top_k"] == 3 and pack.metadata["num_results"] == 3
    scored = ListKnowledge(
        [{"text": "high", "score": 0.9}, {"text": "low", "score": 0.3}, {"text": "edge", "score": 0.5}]
    )
    kept = RAG(scored, config=RAGConfig(min_score=0.5)).retrieve("q")
    assert [c.text for c in kept.citations] == ["high", "edge"]
    only = RAG(ListKnowledge([{"text": "high", "score": 0.9}, {"text": "low", "score": 0.3}]),
               config=RAGConfig(min_score=0.5)).retrieve("q")
    assert [(c.text, c.score) for c in only.citations] == [("high", 0.9)]


def test_per_call_overrides_never_change_the_config():
    knowledge = ListKnowledge(items(10))
    config = RAGConfig(top_k=4)
    rag = RAG(knowledge, config=config)
    pack = rag.retrieve("q", top_k=2, rerank=True, filters={"year": 2020})
    assert pack.metadata["top_k"] == 2 and len(pack.citations) == 2
    assert (pack.metadata["rerank"], pack.metadata["reranked"]) == (True, False)  # no reranker given
    assert rag.config is config and rag.config.top_k == 4 and rag.config.rerank is False
    assert knowledge.calls[-1] == {"query": "q", "top_k": 2, "filters": {"year": 2020},
                                   "strategy": RetrievalStrategy.BASIC}
    assert len(rag.get_citations("q")) == 4
    with pytest.raises(ValueError, match="top_k must be an integer >= 1, got 0"):
        rag.retrieve("q", top_k=0)


def test_twenty_concurrent_calls_each_see_their_own_top_k():
    knowledge = ListKnowledge(items(25), delay=0.01)
    config = RAGConfig(top_k=5)
    rag = RAG(knowledge, config=config)
    with ThreadPoolExecutor(max_workers=20) as pool:
        packs = list(pool.map(lambda k: rag.retrieve(f"q{k}", top_k=k, rerank=k % 2 == 0), range(1, 21)))
    assert [p.metadata["top_k"] for p in packs] == list(range(1, 21))
    assert [len(p.citations) for p in packs] == list(range(1, 21))
    assert [p.metadata["rerank"] for p in packs] == [k % 2 == 0 for k in range(1, 21)]
    assert sorted(c["top_k"] for c in knowledge.calls) == list(range(1, 21))
    assert rag.config == RAGConfig(top_k=5) and rag.config is config

    async def gather():
        import asyncio

        return await asyncio.gather(*(rag.aretrieve(f"q{k}", top_k=k) for k in range(1, 21)))

    packs = async_to_sync(gather)()
    assert [p.metadata["top_k"] for p in packs] == list(range(1, 21))
    assert rag.config == RAGConfig(top_k=5)


class Reversing:
    name = "reversing"

    def __init__(self):
        self.calls = []

    def rerank(self, query, results, top_k=None):
        self.calls.append((query, len(results), top_k))
        return list(reversed(results))[:top_k]


def test_reranker_runs_only_when_rerank_is_on():
    reranker = Reversing()
    rag = RAG(ListKnowledge(items(5)), config=RAGConfig(top_k=5, rerank_top_k=2), reranker=reranker)
    assert [c.source for c in rag.retrieve("q").citations] == ["f0.md", "f1.md", "f2.md", "f3.md", "f4.md"]
    pack = rag.retrieve("q", rerank=True)
    assert [c.source for c in pack.citations] == ["f4.md", "f3.md"]
    assert pack.metadata["reranked"] is True
    assert reranker.calls == [("q", 5, 2)]


class Upper:
    """A context builder returning a bare string: every result given counts as used."""

    def build(self, results, max_tokens=4000, deduplicate=True):
        return " / ".join(r["text"].upper() for r in results)


class Lettered:
    def format(self, results, start_id=1):
        return [Citation(id=chr(ord("a") + i), source=r["metadata"]["filename"], text=r["text"])
                for i, r in enumerate(results)]


def test_injected_context_builder_and_citation_formatter_are_used():
    rag = RAG(ListKnowledge(items(3)), context_builder=Upper(), citation_formatter=Lettered())
    pack = rag.retrieve("q")
    assert pack.context == "TEXT 0. / TEXT 1. / TEXT 2."
    assert [(c.id, c.source) for c in pack.citations] == [("a", "f0.md"), ("b", "f1.md"), ("c", "f2.md")]
    result = rag.query("q")
    assert result.context_used == "TEXT 0. / TEXT 1. / TEXT 2."
    assert [c.id for c in result.citations] == ["a", "b", "c"]
    assert rag.retrieve("q").citations == pack.citations
    no_citations = RAG(ListKnowledge(items(3)), config=RAGConfig(include_citations=False)).retrieve("q")
    assert no_citations.citations == [] and no_citations.context.startswith("[1] f0.md\nText 0.")


def test_dict_results_with_failure_flags_are_read():
    class Failing:
        def search(self, query, **kwargs):
            return {"results": [], "retrieval_failed": True, "error": "index offline"}

    pack = RAG(Failing()).retrieve("q")
    assert (pack.context, pack.metadata["retrieval_failed"], pack.metadata["error"]) == ("", True, "index offline")
    assert RAG(ListKnowledge([])).retrieve("q").metadata["retrieval_failed"] is False
    with pytest.raises(TypeError, match="config must be a RAGConfig, got dict"):
        RAG(ListKnowledge([]), config={"top_k": 3})
