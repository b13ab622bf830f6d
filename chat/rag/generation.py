"""The answer from a context: the configured LLM backend, or extractive sentences.

A generative backend (Ollama, OpenAI-compatible) gets ``[system_prompt?, user:
template with {context} and {question}]`` and its reply is the answer; its failures
are raised as the backend's typed errors (:mod:`chat.backends.base`: ModelNotFound,
Unreachable, Timeout, BackendError), never returned as text. The extractive backend
(no model server) answers with the used results' sentences closest to the question
(:class:`chat.backends.extractive.Composer`), each run of sentences from one result
followed by its citation marker ``[id]``. With an empty context no model is asked: the
answer is NO_CONTEXT_ANSWER after a genuine empty match, and "" when retrieval failed
(``metadata["retrieval_failed"]`` and ``metadata["error"]`` say why).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from chat.backends import LLMBackend, get_backend
from chat.backends.base import Message
from domains import embeddings
from domains.retrieval import Source

from .config import RAGConfig
from .context import item_label, item_score, item_text
from .results import Citation

NO_CONTEXT_ANSWER = "The knowledge base has nothing relevant to this question."
# Extractive fallback when no sentence of the results is long enough to be picked.
FALLBACK_CHARS = 300


def prompt_messages(config: RAGConfig, question: str, context: str) -> list[Message]:
    """The chat messages: the optional system prompt, then the filled template (the
    two placeholders are replaced literally, so other braces in a template are kept)."""
    user = config.template.replace("{context}", context).replace("{question}", question)
    messages: list[Message] = []
    if config.system_prompt:
        messages.append({"role": "system", "content": config.system_prompt})
    messages.append({"role": "user", "content": user})
    return messages


@dataclass
class _Passage:
    """What the Composer reads of a chunk."""

    text: str
    score: float


class Generator:
    """The model side of one call.

    :param llm: None (the configured backend, ``KLEA_LLM_BACKEND``; a new client per
        call, closed afterwards), a chat model name for the configured backend, or an
        :class:`~chat.backends.LLMBackend` used as given (never closed here).
    :raises TypeError: another kind of ``llm``.
    :raises ValueError: a model name while the configured backend is extractive.
    """

    def __init__(self, llm=None):
        if isinstance(llm, LLMBackend):
            self.backend, self.model, self._owned = llm, None, False
        elif llm is None or isinstance(llm, str):
            self.backend, self.model, self._owned = get_backend(), llm or None, True
            if self.model and not self.backend.generative:
                raise ValueError(f"llm={llm!r} names a chat model, but the configured backend is extractive")
        else:
            raise TypeError(f"llm must be None, a model name or an LLMBackend, got {type(llm).__name__}")

    @property
    def description(self) -> dict:
        return {"backend": self.backend.name, "model": self.model or self.backend.chat_model}

    async def aclose(self) -> None:
        if self._owned:
            await self.backend.aclose()

    async def complete(self, config: RAGConfig, question: str, context: str, used: Sequence,
                       citations: Sequence[Citation], failed: bool = False) -> str:
        """The whole answer. :raises BackendError: the model server failed."""
        if not context.strip():
            return "" if failed else NO_CONTEXT_ANSWER
        if self.backend.generative:
            return await self.backend.chat(prompt_messages(config, question, context), model=self.model)
        return "".join([piece async for piece in self._extractive(question, used, citations)])

    async def pieces(self, config: RAGConfig, question: str, context: str, used: Sequence,
                     citations: Sequence[Citation], failed: bool = False) -> AsyncIterator[str]:
        """The answer as text pieces (none when retrieval failed and left no context).

        :raises BackendError: possibly after some pieces."""
        if not context.strip():
            if not failed:
                yield NO_CONTEXT_ANSWER
            return
        if self.backend.generative:
            async for piece in self.backend.stream(prompt_messages(config, question, context), model=self.model):
                yield piece
            return
        async for piece in self._extractive(question, used, citations):
            yield piece

    async def _extractive(self, question: str, used: Sequence, citations: Sequence[Citation]):
        from chat.backends.extractive import Composer

        if not used:
            yield NO_CONTEXT_ANSWER
            return
        markers = [f"[{c.id}]" for c in citations] if len(citations) == len(used) else [
            f"[{n}]" for n in range(1, len(used) + 1)
        ]
        sources = [
            Source(number=n, domain="", store="", file_name=item_label(item, n), document_id=0,
                   chunks=[_Passage(item_text(item), item_score(item))])
            for n, item in enumerate(used, start=1)
        ]
        vector = await asyncio.to_thread(embeddings.embed_query, question)
        spoke = False
        async for piece in Composer(vector, sources, question).pieces(lambda number: markers[number - 1]):
            spoke = True
            yield piece
        if not spoke:
            yield f"{item_text(used[0])[:FALLBACK_CHARS]} {markers[0]}"
