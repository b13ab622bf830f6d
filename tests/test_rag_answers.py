"""RAG answers: the extractive backend over a real store, the Ollama backend through the
fake Ollama HTTP server (real client code), streams that retrieve once and end with the
citations, typed model errors, and retrieval failures in the result's metadata."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync

from chat.backends import ModelNotFound, Timeout, Unreachable
from chat.rag import RAG, Knowledge, RAGConfig
from chat.rag.generation import NO_CONTEXT_ANSWER
from domains.models import Domain

from .fake_ollama import Reply, closed_port_url, ollama_backend
from .rag_data import ListKnowledge, items, write_docs

MONGOLIA = "Ulaanbaatar is the capital and largest city of Mongolia, home to nearly half of the country's population."
QUESTION = "What is the capital of Mongolia?"


@pytest.fixture
def knowledge(db, tmp_path, settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    knowledge = Knowledge(store="answers", create=True)
    knowledge.add(write_docs(tmp_path, ["mongolia.md", "paris.md", "speed.md"]))
    return knowledge


@pytest.fixture
def fake(settings):
    with ollama_backend(settings, KLEA_LLM_TIMEOUT=5) as server:
        yield server


def collect_async(stream) -> list[str]:
    async def run():
        return [piece async for piece in stream]

    return async_to_sync(run)()


def test_extractive_query_stream_and_astream(knowledge):
    rag = RAG(knowledge, config=RAGConfig(top_k=1))
    result = rag.query(QUESTION)
    assert result.answer == f"{MONGOLIA} [1]"
    assert [(c.id, c.source, c.text) for c in result.citations] == [("1", "mongolia.md", MONGOLIA)]
    assert result.context_used == f"[1] mongolia.md\n{MONGOLIA}"
    assert result.query == QUESTION
    assert {k: result.metadata[k] for k in ("backend", "model", "top_k", "retrieval_strategy", "retrieval_failed",
                                            "error", "num_citations")} == {
        "backend": "extractive", "model": "", "top_k": 1, "retrieval_strategy": "basic", "retrieval_failed": False,
        "error": "", "num_citations": 1,
    }
    stream = rag.stream(QUESTION)
    assert stream.citations == []
    assert list(stream) == [MONGOLIA, " [1]"]
    assert stream.citations == result.citations
    assert stream.result.answer == result.answer and stream.result.citations == result.citations
    with pytest.raises(RuntimeError, match="a RAG stream can be iterated once"):
        list(stream)
    astream = rag.astream(QUESTION)
    assert collect_async(astream) == [MONGOLIA, " [1]"]
    assert astream.citations == result.citations and astream.result.answer == result.answer
    assert async_to_sync(rag.aquery)(QUESTION).answer == result.answer


def test_retrieval_failure_is_in_the_metadata_and_not_an_empty_match(knowledge):
    rag = RAG(knowledge)
    Domain.objects.filter(name="answers").update(min_relevance=0.99)
    empty = rag.query(QUESTION)
    assert (empty.answer, empty.citations, empty.metadata["retrieval_failed"]) == (NO_CONTEXT_ANSWER, [], False)
    Domain.objects.filter(name="answers").delete()
    failed = rag.query(QUESTION)
    assert (failed.answer, failed.citations, failed.context_used) == ("", [], "")
    assert failed.metadata["retrieval_failed"] is True
    assert failed.metadata["error"] == "store 'answers' does not exist (deleted, or its domain was)"
    stream = rag.stream(QUESTION)
    assert list(stream) == [] and stream.result.metadata["retrieval_failed"] is True


def test_streams_retrieve_once_and_end_with_citations(settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    knowledge = ListKnowledge(items(3))
    rag = RAG(knowledge, config=RAGConfig(top_k=2))
    stream = rag.stream("Text 1")
    pieces = list(stream)
    assert len(knowledge.calls) == 1
    assert [c.source for c in stream.citations] == ["f0.md", "f1.md"]
    assert "".join(pieces) == stream.result.answer
    astream = rag.astream("Text 1", top_k=1)
    collect_async(astream)
    assert len(knowledge.calls) == 2 and knowledge.calls[1]["top_k"] == 1
    assert [c.source for c in astream.citations] == ["f0.md"] and astream.result.metadata["top_k"] == 1


def test_ollama_answer_gets_the_filled_template(fake):
    fake.script(Reply.text("Text 0 [1]."), Reply.text("Other model."))
    rag = RAG(ListKnowledge(items(2)), config=RAGConfig(system_prompt="Be brief."))
    result = rag.query("What is text 0?")
    assert result.answer == "Text 0 [1]."
    context = "[1] f0.md\nText 0.\n\n---\n\n[2] f1.md\nText 1."
    assert result.context_used == context
    body = fake.bodies()[0]
    assert body["model"] == "qwen3:0.6b" and body["stream"] is False
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Answer the question based on the context below.\n\nContext:\n"
                                    f"{context}\n\nQuestion: What is text 0?\n\nAnswer:"},
    ]
    assert (result.metadata["backend"], result.metadata["model"]) == ("ollama", "qwen3:0.6b")
    named = RAG(ListKnowledge(items(1)), llm="llama3.2:1b").query("q")
    assert named.answer == "Other model." and fake.bodies()[1]["model"] == "llama3.2:1b"
    assert named.metadata["model"] == "llama3.2:1b"


def test_ollama_stream_pieces_then_citations(fake):
    # Through the answer core's cleaner: the think block goes, [7] (not in the context) is
    # dropped with its space, [1] stays as the context numbers it.
    fake.script(Reply.text("", pieces=["<think>hm</think>Text ", "0 ", "[1]", " [7]."]))
    rag = RAG(ListKnowledge(items(2)), config=RAGConfig(top_k=1))
    stream = rag.stream("What is text 0?")
    assert list(stream) == ["Text", " 0", " [1]", "."]
    assert [c.id for c in stream.citations] == ["1"] and stream.result.answer == "Text 0 [1]."
    assert stream.result.metadata["cited"] == ["1"]
    assert fake.bodies()[0]["stream"] is True
    fake.script(Reply.text("", pieces=["A", "B"]))
    assert collect_async(rag.astream("q")) == ["A", "B"]


def test_model_errors_are_typed_exceptions_never_answer_text(fake, settings):
    rag = RAG(ListKnowledge(items(1)))
    fake.script(Reply.not_found("qwen3:0.6b"), Reply.not_found("qwen3:0.6b"), Reply.not_found("qwen3:0.6b"))
    with pytest.raises(ModelNotFound, match=r"run `ollama pull qwen3:0.6b`"):
        rag.query("q")
    with pytest.raises(ModelNotFound):
        list(rag.stream("q"))
    with pytest.raises(ModelNotFound):
        collect_async(rag.astream("q"))
    settings.KLEA_LLM_TIMEOUT = 0.3
    fake.script(Reply.hang())
    with pytest.raises(Timeout, match=r"sent nothing for 0.3 s"):
        rag.query("q")
    settings.OLLAMA_HOST = closed_port_url()
    with pytest.raises(Unreachable, match="cannot reach the Ollama server"):
        async_to_sync(rag.aquery)("q")
    with pytest.raises(ValueError, match="llm='qwen3' names a chat model, but the configured backend is extractive"):
        settings.KLEA_LLM_BACKEND = "extractive"
        RAG(ListKnowledge(items(1)), llm="qwen3").query("q")
    with pytest.raises(TypeError, match="llm must be None, a model name or an LLMBackend, got int"):
        RAG(ListKnowledge(items(1)), llm=3).query("q")


def test_nul_and_lone_surrogates_in_the_question_are_refused_as_by_the_http_api(knowledge):
    from chat.rag import RetrievalStrategy

    for strategy in ("basic", "fusion", "hybrid"):
        rag = RAG(knowledge, config=RAGConfig(top_k=1, retrieval_strategy=RetrievalStrategy(strategy)))
        for question in (QUESTION.replace(" ", "\x00", 1), QUESTION.replace(" ", " \ud800", 1)):
            for call in (rag.query, rag.retrieve, rag.get_citations, async_to_sync(rag.aquery)):
                with pytest.raises(ValueError) as refused:
                    call(question)
                assert str(refused.value) == "question contains a NUL character or a lone surrogate"
            with pytest.raises(ValueError, match="^question contains a NUL character or a lone surrogate$"):
                list(rag.stream(question))
            with pytest.raises(ValueError, match="^query contains a NUL character or a lone surrogate$"):
                knowledge.search(question, top_k=1, strategy=strategy)
    # nothing visible (spaces, zero-width spaces, a BOM) is refused as the HTTP API refuses it
    rag = RAG(knowledge, config=RAGConfig(top_k=1))
    for question in ("", "  \n", "\u200b\u200b", "\ufeff \u200d"):
        for call in (rag.query, rag.retrieve, rag.get_citations, async_to_sync(rag.aquery)):
            with pytest.raises(ValueError) as refused:
                call(question)
            assert str(refused.value) == "question is empty (no visible character)"
        with pytest.raises(ValueError, match=r"^question is empty \(no visible character\)$"):
            list(rag.stream(question))
    # a surrogate pair (an emoji written as two UTF-16 halves in JSON) is no lone surrogate
    assert RAG(knowledge, config=RAGConfig(top_k=1)).retrieve(QUESTION + " \U0001f9e0").citations[0].source == "mongolia.md"


PARIS = "Paris is the capital of France and its largest city, on the river Seine."


def _by_file(text: str, files: dict[str, str]) -> str:
    """``text`` with each marker [n] replaced by [the file source n names]."""
    return re.sub(r"\[(\d+)\]", lambda m: f"[{files[m.group(1)]}]", text)


@pytest.mark.parametrize(("question", "answer", "files"), [
    (QUESTION, f"{MONGOLIA} [mongolia.md]", ["mongolia.md"]),
    ("Which cities are the capitals of Mongolia and of France?", f"{MONGOLIA} [mongolia.md] {PARIS} [paris.md]",
     ["mongolia.md", "paris.md"]),
])
def test_pipeline_and_rag_query_answer_and_cite_alike(knowledge, question, answer, files):
    """One answer core: the chat pipeline and RAG.query, over the same store with the same
    retrieval, give the same text citing the same files in the same order. The numbers
    differ by design (docs/python-api.md): the pipeline numbers the cited sources 1..m
    in citation order, RAG keeps the ids its citations were given before the answer."""
    from .pipeline_helpers import run

    domain = Domain.objects.get(name="answers")
    turn = run(question, [domain])
    assert turn.answer.citations == list(range(1, len(files) + 1))
    pipeline_files = {str(n): r["file_name"] for n, r in enumerate(turn.references, start=1)}
    assert (_by_file(turn.answer.text, pipeline_files), list(pipeline_files.values())) == (answer, files)
    rag = RAG(knowledge, config=RAGConfig(top_k=domain.default_k, retrieval_strategy="hybrid"))
    result = rag.query(question)
    by_id = {c.id: c.source for c in result.citations}
    assert (_by_file(result.answer, by_id), [by_id[i] for i in result.metadata["cited"]]) == (answer, files)
