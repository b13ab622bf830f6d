"""The answer from a context: the configured backend's
:meth:`~chat.backends.base.LLMBackend.answer`.

A model backend (Ollama, OpenAI-compatible) gets ``[system_prompt?, user: template with
{context} and {question}]`` and its reply is the answer; its failures are raised as the
backend's typed errors (:mod:`chat.backends.base`: ModelNotFound, Unreachable, Timeout,
BackendError), never returned as text. The extractive backend (no model server) quotes
the passages of the used results that state the answer, each followed by its citation
marker ``[id]``. With an empty context no backend is asked: the answer is
NO_CONTEXT_ANSWER after a genuine empty match, and "" when retrieval failed
(``metadata["retrieval_failed"]`` and ``metadata["error"]`` say why).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from chat.backends import LLMBackend, get_backend
from chat.backends.base import AnswerTask, Citer, Message
from domains import embeddings
from domains.retrieval import Source

from .config import RAGConfig
from .context import item_label, item_score, item_text
from .results import Citation

NO_CONTEXT_ANSWER = "The knowledge base has nothing relevant to this question."
# When the backend finds no passage that answers, the start of the best result is shown.
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
    """A used result as a chunk of an answer task's source."""

    text: str
    score: float
    headings: tuple[str, ...] = ()


class _Markers(Citer):
    """Source n (1-based, in ``used`` order) is cited as its citation's ``[id]``."""

    def __init__(self, markers: Sequence[str]):
        self.markers = markers

    def cite(self, number: int) -> str:
        return self.markers[number - 1]


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
            if self.model and not self.backend.can_compose:
                raise ValueError(f"llm={llm!r} names a chat model, but the configured backend is {self.backend.name}")
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
        return "".join([piece async for piece in self._answer(config, question, context, used, citations, False)])

    async def pieces(self, config: RAGConfig, question: str, context: str, used: Sequence,
                     citations: Sequence[Citation], failed: bool = False) -> AsyncIterator[str]:
        """The answer as text pieces (none when retrieval failed and left no context).

        :raises BackendError: possibly after some pieces."""
        if not context.strip():
            if not failed:
                yield NO_CONTEXT_ANSWER
            return
        async for piece in self._answer(config, question, context, used, citations, True):
            yield piece

    async def _answer(self, config: RAGConfig, question: str, context: str, used: Sequence,
                      citations: Sequence[Citation], stream: bool) -> AsyncIterator[str]:
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

        async def vector():
            return await asyncio.to_thread(embeddings.embed_query, question)

        task = AnswerTask(question, sources, prompt_messages(config, question, context), vector=vector,
                          citer=_Markers(markers), model=self.model, stream=stream)
        spoke = False
        async for piece in self.backend.answer(task):
            spoke = True
            yield piece
        if not spoke:
            yield f"{item_text(used[0])[:FALLBACK_CHARS]} {markers[0]}"
