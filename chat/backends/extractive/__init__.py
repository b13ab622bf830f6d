"""The model-free backend: routing by the evidence of the sources, answers quoted from
them.

Needs no LLM server, so the product answers end to end on any machine. It writes no
text of its own (``can_compose``, ``can_modify_query``, ``can_review`` False): it
classifies by embedding similarity to each domain's sources (:mod:`.routing`), answers
with the passages of the sources that state the answer (:mod:`.passages`), each cited,
or, asked for a document's authors, year, venue, title or DOI, with its stored
reference line (:mod:`.biblio`), and folds the running summary from first sentences (:mod:`.summary`). It picks no MCP
tools (``supports_tools`` False): choosing a tool and its arguments needs a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from asgiref.sync import sync_to_async

from domains import embeddings

from ..base import AnswerTask, Classification, ClassifyTask, LLMBackend, Message, NotSupported
from . import biblio, routing
from .passages import Composer
from .shapes import is_generic
from .summary import fold_summary
from .text import looks_like_code, split_sentences

__all__ = ["ExtractiveBackend", "fold_summary", "looks_like_code", "split_sentences"]

NO_TEXT = "the extractive backend writes no free text; set KLEA_LLM_BACKEND to ollama or openai"


class ExtractiveBackend(LLMBackend):
    """No model server: embeddings only (the store embedding model, all-MiniLM-L6-v2)."""

    name = "extractive"
    can_modify_query = False
    can_review = False
    can_compose = False

    @property
    def chat_model(self) -> str:
        return ""

    async def chat(self, messages: Sequence[Message], *, schema: dict | None = None, model: str | None = None) -> str:
        raise NotSupported(NO_TEXT)

    async def stream(self, messages: Sequence[Message], *, model: str | None = None):
        raise NotSupported(NO_TEXT)
        yield ""  # pragma: no cover  (makes this an async generator)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(embeddings.embed_texts, list(texts))
        return vectors.tolist()

    def search_queries(self, question: str, domains: Sequence) -> list[str]:
        """A generic question ("What is this?", :func:`.shapes.is_generic`) names nothing to
        search for: each routed domain's description, written to say what the domain is,
        is searched beside it (it finds the overview pages)."""
        if not is_generic(question):
            return [question]
        return [question, *dict.fromkeys(d.description.strip() for d in domains if d.description.strip())]

    async def classify(self, task: ClassifyTask) -> Classification:
        vector = await task.vector()
        scores = await sync_to_async(routing.classify)(vector, task.domains, task.question)
        return Classification([s.domain.name for s in scores], scores={s.domain.name: s.score for s in scores})

    async def answer(self, task: AnswerTask) -> AsyncIterator[str]:
        reference = biblio.answer(task.question, task.sources, task.search_text)
        if reference is not None:
            number, line = reference
            yield line
            yield " " + task.citer.cite(number, document=True)  # the metadata, not a passage
            return
        if len(task.queries) > 1 and is_generic(task.question):
            # the question names nothing: the passage nearest to what the domain is described as
            vector = await asyncio.to_thread(embeddings.embed_query, " ".join(task.queries[1:]))
        else:
            vector = await task.vector()
        async for piece in Composer(vector, task.sources, task.question, task.search_text).pieces(task.citer.cite):
            yield piece

    async def summarise(self, summary: str, messages: Sequence[dict], prompt: Sequence[Message]) -> str:
        return fold_summary(summary, messages)

    def warm_up(self, domains: Sequence) -> None:
        """Route a question once: the domain descriptions' vectors enter the cache and
        the probes' queries have run, so the first question pays for neither."""
        routing.score_domains(embeddings.embed_query("warm up"), domains, "warm up")
