"""RAG: retrieve from a Knowledge, build the context, answer with citations.

Usage::

    rag = RAG(Knowledge(store="papers"), config=RAGConfig(top_k=4))
    result = rag.query("What does the Hodgkin-Huxley model describe?")
    print(result.format_answer_with_citations())
    pack = rag.retrieve("sodium channels", top_k=2)     # no model call
    stream = rag.stream("What is a NeuroML file?")
    for piece in stream:
        print(piece, end="")
    stream.citations                                     # after the loop

Each call runs with its own effective values (per-call ``top_k``/``rerank`` over the
config); ``rag.config`` is frozen and never changed, so concurrent calls are safe.
Steps: ``knowledge.search(question, top_k=, filters=, strategy=)`` -> drop items below
``min_score`` -> first ``top_k`` -> ``reranker.rerank(query=, results=,
top_k=rerank_top_k)`` when reranking -> ``context_builder.build(results, max_tokens=,
deduplicate=True)`` -> ``citation_formatter.format(used, start_id=1)`` -> the answer
(:mod:`chat.rag.generation`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from asgiref.sync import sync_to_async

from domains.text import check_refused

from .citations import DefaultCitationFormatter
from .config import Effective, RAGConfig
from .context import DefaultContextBuilder, item_score
from .generation import Generator
from .results import Citation, ContextPack, RAGResult


@dataclass
class _Prepared:
    pack: ContextPack
    used: list
    started: float


def _outcome(raw) -> tuple[list, bool, str, list[str]]:
    """(items, failed, error, queries) of whatever a knowledge's search returned: a
    list (ours carries the flags), or a dict with ``results`` and optional flags."""
    if isinstance(raw, dict):
        return list(raw.get("results") or []), bool(raw.get("retrieval_failed")), str(raw.get("error") or ""), []
    items = list(raw or [])
    return (items, bool(getattr(raw, "retrieval_failed", False)), str(getattr(raw, "error", "") or ""),
            list(getattr(raw, "queries", []) or []))


class RAG:
    """Retrieval-augmented answers over a :class:`~chat.rag.Knowledge` (or any object
    with ``search(query, top_k=, filters=, strategy=)`` returning result items).

    :param knowledge: where to search.
    :param llm: None (the configured backend: extractive when no model server is set),
        a chat model name, or an LLMBackend (:class:`chat.rag.generation.Generator`).
    :param config: a :class:`RAGConfig` (defaults otherwise).
    :param reranker: an object with ``rerank(query=, results=, top_k=)``; used when the
        effective ``rerank`` is True. Its errors propagate.
    :param context_builder: ``build(results, max_tokens=, deduplicate=)`` returning the
        context or (context, used_results); default :class:`DefaultContextBuilder`.
    :param citation_formatter: ``format(results, start_id=)`` returning Citations;
        default :class:`~chat.rag.citations.DefaultCitationFormatter`.
    """

    def __init__(self, knowledge, llm=None, config: RAGConfig | None = None, reranker=None,
                 context_builder=None, citation_formatter=None):
        if config is not None and not isinstance(config, RAGConfig):
            raise TypeError(f"config must be a RAGConfig, got {type(config).__name__}")
        self.knowledge = knowledge
        self.llm = llm
        self.config = config or RAGConfig()
        self.reranker = reranker
        self.context_builder = context_builder or DefaultContextBuilder()
        self.citation_formatter = citation_formatter or DefaultCitationFormatter()

    # -- retrieval (sync; the ORM runs in the calling thread) ----------------------

    def _prepare(self, question: str, top_k: int | None, rerank: bool | None, filters: dict | None,
                 extra: dict) -> _Prepared:
        started = time.perf_counter()
        # Before any knowledge, ours or the caller's; a blank question is refused as the
        # HTTP API refuses it.
        check_refused("question", question, allow_blank=False)
        config = self.config
        effective = Effective.of(config, top_k, rerank)
        raw = self.knowledge.search(question, top_k=effective.top_k, filters=filters,
                                    strategy=effective.strategy, **extra)
        items, failed, error, queries = _outcome(raw)
        items = [r for r in items if r is not None]
        if config.min_score > 0:
            items = [r for r in items if item_score(r) >= config.min_score]
        items = items[: effective.top_k]
        reranked = bool(effective.rerank and self.reranker is not None and items)
        if reranked:
            items = list(self.reranker.rerank(query=question, results=items, top_k=config.rerank_top_k))
        built = self.context_builder.build(items, max_tokens=config.max_context_tokens, deduplicate=True)
        context, used = built if isinstance(built, tuple) else (str(built), list(items))
        citations = self.citation_formatter.format(used, start_id=1) if config.include_citations else []
        metadata = {
            "top_k": effective.top_k,
            "rerank": effective.rerank,
            "reranked": reranked,
            "retrieval_strategy": effective.strategy.value,
            "queries": queries,
            "num_results": len(items),
            "num_citations": len(citations),
            "retrieval_failed": failed,
            "error": error,
            "elapsed_seconds": time.perf_counter() - started,
        }
        return _Prepared(ContextPack(context, list(citations), question, metadata), list(used), started)

    def retrieve(self, query: str, top_k: int | None = None, rerank: bool | None = None,
                 filters: dict | None = None, **kwargs) -> ContextPack:
        """Context and citations without a model call.

        :param top_k: overrides ``config.top_k`` for this call only (>= 1).
        :param rerank: overrides ``config.rerank`` for this call only.
        :param filters: filter DSL passed to the knowledge's search.
        :param kwargs: passed on to ``knowledge.search``.
        :returns: ContextPack; ``metadata["top_k"]`` is the effective value, and
            ``retrieval_failed``/``error`` tell a failed search from an empty match.
        :raises ValueError: ``top_k`` < 1, a malformed filter, a NUL character or a lone
            surrogate in ``query`` (``question contains a NUL character or a lone surrogate``),
            a ``query`` with no visible character (``question is empty (no visible character)``).
        """
        return self._prepare(query, top_k, rerank, filters, kwargs).pack

    async def aretrieve(self, query: str, **kwargs) -> ContextPack:
        """:meth:`retrieve` from async code."""
        return await sync_to_async(self.retrieve)(query, **kwargs)

    def get_citations(self, question: str, **kwargs) -> list[Citation]:
        """The citations :meth:`query` would return (those in the context), without a
        model call. ``kwargs`` as :meth:`retrieve`."""
        return self.retrieve(question, **kwargs).citations

    # -- answers -------------------------------------------------------------------

    def _result(self, prepared: _Prepared, answer: str, generator: Generator) -> RAGResult:
        pack = prepared.pack
        elapsed = time.perf_counter() - prepared.started
        metadata = {**pack.metadata, **generator.description, "elapsed_seconds": elapsed}
        return RAGResult(answer, list(pack.citations), pack.context, pack.query, metadata)

    async def _answer(self, prepared: _Prepared) -> RAGResult:
        generator = Generator(self.llm)
        try:
            pack = prepared.pack
            answer = await generator.complete(self.config, pack.query, pack.context, prepared.used, pack.citations,
                                              failed=pack.metadata["retrieval_failed"])
        finally:
            await generator.aclose()
        return self._result(prepared, answer, generator)

    def query(self, question: str, top_k: int | None = None, rerank: bool | None = None,
              filters: dict | None = None, **kwargs) -> RAGResult:
        """Retrieve, then answer. Call from synchronous code (it runs its own event
        loop for the model; use :meth:`aquery` inside async code).

        :returns: RAGResult; ``metadata`` = the ContextPack's plus ``backend``, ``model``,
            ``cited``.
        :raises BackendError: ModelNotFound, Unreachable, Timeout, ... from the model.
        :raises ValueError: as :meth:`retrieve`.
        """
        prepared = self._prepare(question, top_k, rerank, filters, kwargs)
        return asyncio.run(self._answer(prepared))

    async def aquery(self, question: str, top_k: int | None = None, rerank: bool | None = None,
                     filters: dict | None = None, **kwargs) -> RAGResult:
        """:meth:`query` for async code (retrieval runs in the sync thread)."""
        prepared = await sync_to_async(self._prepare)(question, top_k, rerank, filters, kwargs)
        return await self._answer(prepared)

    def stream(self, question: str, top_k: int | None = None, rerank: bool | None = None,
               filters: dict | None = None, **kwargs) -> RAGStream:
        """The answer as it is generated: iterate for text pieces; afterwards
        ``.citations`` and ``.result`` (a RAGResult) are set. Retrieves once, when the
        iteration starts. :raises BackendError: while iterating."""
        return RAGStream(self, question, (top_k, rerank, filters, kwargs))

    def astream(self, question: str, top_k: int | None = None, rerank: bool | None = None,
                filters: dict | None = None, **kwargs) -> RAGAsyncStream:
        """:meth:`stream` for ``async for``; retrieves once."""
        return RAGAsyncStream(self, question, (top_k, rerank, filters, kwargs))


class _StreamBase:
    """Shared by the two streams: single use, the pack as soon as retrieval ran, the
    result once the text is complete."""

    def __init__(self, rag: RAG, question: str, arguments: tuple):
        self._rag = rag
        self._question = question
        self._arguments = arguments
        self._started = False
        self.pack: ContextPack | None = None
        self.result: RAGResult | None = None

    @property
    def citations(self) -> list[Citation]:
        """The answer's citations (known once the first piece is out; [] before)."""
        return list(self.pack.citations) if self.pack else []

    def _start(self) -> None:
        if self._started:
            raise RuntimeError("a RAG stream can be iterated once; call rag.stream() again")
        self._started = True


class RAGStream(_StreamBase):
    """Synchronous stream of answer pieces (see :meth:`RAG.stream`)."""

    def __iter__(self) -> Iterator[str]:
        self._start()
        return self._run()

    def _run(self) -> Iterator[str]:
        top_k, rerank, filters, extra = self._arguments
        prepared = self._rag._prepare(self._question, top_k, rerank, filters, extra)
        self.pack = prepared.pack
        generator = Generator(self._rag.llm)
        pieces = generator.pieces(self._rag.config, self._question, prepared.pack.context, prepared.used,
                                  prepared.pack.citations, failed=prepared.pack.metadata["retrieval_failed"])
        loop = asyncio.new_event_loop()
        parts: list[str] = []
        try:
            while True:
                try:
                    piece = loop.run_until_complete(pieces.__anext__())
                except StopAsyncIteration:
                    break
                parts.append(piece)
                yield piece
        finally:
            loop.run_until_complete(pieces.aclose())
            loop.run_until_complete(generator.aclose())
            loop.close()
        self.result = self._rag._result(prepared, "".join(parts), generator)


class RAGAsyncStream(_StreamBase):
    """Asynchronous stream of answer pieces (see :meth:`RAG.astream`)."""

    def __aiter__(self) -> AsyncIterator[str]:
        self._start()
        return self._run()

    async def _run(self) -> AsyncIterator[str]:
        top_k, rerank, filters, extra = self._arguments
        prepared = await sync_to_async(self._rag._prepare)(self._question, top_k, rerank, filters, extra)
        self.pack = prepared.pack
        generator = Generator(self._rag.llm)
        parts: list[str] = []
        try:
            async for piece in generator.pieces(self._rag.config, self._question, prepared.pack.context,
                                                prepared.used, prepared.pack.citations,
                                                failed=prepared.pack.metadata["retrieval_failed"]):
                parts.append(piece)
                yield piece
        finally:
            await generator.aclose()
        self.result = self._rag._result(prepared, "".join(parts), generator)
