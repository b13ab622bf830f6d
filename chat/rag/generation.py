"""The answer from a context, through the answer core (:mod:`chat.answers`, shared with
the chat pipeline).

A model backend (Ollama, OpenAI-compatible) gets ``[system_prompt?, user:
template with {context} and {question}]``; its reply passes through the core's
citation cleaner: ``<think>`` blocks removed, citations of numbers the context does not
have dropped, the others kept as the context numbers them. Its failures are raised as
the backend's typed errors (:mod:`chat.backends.base`: ModelNotFound, Unreachable,
Timeout, BackendError), never returned as text. The extractive backend (no model
server) quotes the passages of the used results that state the answer, each followed
by its citation marker ``[id]``. With an empty context no model is
asked: the answer is NO_CONTEXT_ANSWER after a genuine empty match, and "" when
retrieval failed (``metadata["retrieval_failed"]`` and ``metadata["error"]`` say why).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from chat.answers.compose import Composition
from chat.answers.material import Material
from chat.backends import LLMBackend, get_backend
from chat.backends.base import Message
from domains.retrieval import RetrievedChunk, Source
from domains.retrieval.references import FILE_KEYS

from .config import RAGConfig
from .context import _field, item_label, item_metadata, item_score, item_text
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


def _number(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def material_of(context: str, used: Sequence) -> Material:
    """The context and its used results as the answer core's material: result n is
    source n (one chunk each), as the context numbers them."""
    sources = []
    for number, item in enumerate(used, start=1):
        metadata = item_metadata(item)
        chunk = RetrievedChunk(
            chunk_id=_number(_field(item, "id") or metadata.get("chunk_id")), text=item_text(item),
            headings=list(metadata.get("headings") or []), metadata=metadata, file_name=item_label(item, number),
            document_id=_number(metadata.get("doc_id")), store=str(metadata.get("store") or ""),
            domain=str(metadata.get("domain") or ""), score=item_score(item),
        )
        # The file-level fields go with the source as in the chat pipeline: the extractive
        # backend answers "who wrote it" from them and never quotes the title line.
        file_level = {k: metadata[k] for k in FILE_KEYS if metadata.get(k) not in (None, "", [])}
        sources.append(Source(number=number, domain=chunk.domain, store=chunk.store, file_name=chunk.file_name,
                              document_id=chunk.document_id, metadata=file_level, chunks=[chunk]))
    return Material(context, sources)


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
        self.cited: list[str] = []  # the citation ids the last answer cites, in order of first citation

    @property
    def description(self) -> dict:
        return {"backend": self.backend.name, "model": self.model or self.backend.chat_model, "cited": self.cited}

    async def aclose(self) -> None:
        if self._owned:
            await self.backend.aclose()

    async def complete(self, config: RAGConfig, question: str, context: str, used: Sequence,
                       citations: Sequence[Citation], failed: bool = False) -> str:
        """The whole answer (a model is asked for one reply, not a stream).

        :raises BackendError: the model server failed."""
        pieces = self.pieces(config, question, context, used, citations, failed=failed, stream=False)
        return "".join([piece async for piece in pieces])

    async def pieces(self, config: RAGConfig, question: str, context: str, used: Sequence,
                     citations: Sequence[Citation], failed: bool = False, stream: bool = True) -> AsyncIterator[str]:
        """The answer as text pieces (none when retrieval failed and left no context).

        :raises BackendError: possibly after some pieces."""
        self.cited = []
        if not context.strip():
            if not failed:
                yield NO_CONTEXT_ANSWER
            return
        # The extractive backend cites result n as the formatter numbered it.
        ids = [c.id for c in citations] if len(citations) == len(used) else [str(n) for n in range(1, len(used) + 1)]
        labels = dict(enumerate(ids, start=1))

        def fallback(cite) -> str:
            return f"{item_text(used[0])[:FALLBACK_CHARS]} {cite(1)}" if used else NO_CONTEXT_ANSWER

        composition = Composition(self.backend, question, material_of(context, used),
                                  prompt_messages(config, question, context), renumber=False, labels=labels,
                                  model=self.model, fallback=fallback)
        try:
            async for piece in composition.pieces(stream=stream):
                yield piece
        finally:
            self.cited = [labels[number] for number in composition.cleaner.cited]
