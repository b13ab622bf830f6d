"""Compose one answer: the one place that asks a backend for an answer's text.

The backend answers an :class:`~chat.backends.base.AnswerTask` (its
:meth:`~chat.backends.base.LLMBackend.answer`): a model backend reads the caller's
``messages`` (its prompt holds the material's text) and its reply passes through the
task's :class:`~chat.answers.citations.AnswerCleaner`; the extractive backend quotes the
material's sources, citing them through the same cleaner. When the backend finds nothing
in the sources that answers, the caller's ``fallback`` text is the answer. Either way the
pieces that come out are final text, and ``cited`` says which sources the answer cites,
in order of first citation. docs/pipeline.md, "The answer core".
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing

from chat.backends.base import AnswerTask, LLMBackend, Message
from domains import embeddings

from .citations import AnswerCleaner
from .material import Material

Cite = Callable[[int], str]


async def cleaned(pieces: AsyncIterable[str], cleaner: AnswerCleaner) -> AsyncIterator[str]:
    """Raw model text -> clean pieces (empty ones left out). The model stream is closed
    on any exit (which closes its HTTP stream: the server stops generating)."""
    async with aclosing(pieces) as stream:
        async for piece in stream:
            if text := cleaner.feed(piece):
                yield text
    if text := cleaner.close():
        yield text


class Composition:
    """One answer from ``material``.

    Usage::

        composition = Composition(backend, question, material, messages, fallback=lambda cite: "No source ...")
        async for piece in composition.pieces():
            send(piece)
        composition.cited, composition.dropped, composition.declined

    :param messages: the prompt for a generative backend (unused by the extractive one).
    :param renumber: renumber cited sources 1..m in citation order (the chat pipeline);
        else keep the material's numbers (``chat.rag``).
    :param labels: what the extractive backend writes when it cites source n (default
        the number), e.g. ``chat.rag``'s citation ids.
    :param model: a chat model other than the backend's own.
    :param search_text: see :class:`chat.backends.base.AnswerTask`, as ``queries``.
    :param vector: returns the question's embedding (the extractive backend's; default
        :func:`domains.embeddings.embed_query` in a thread).
    :param fallback: the text, given the cite function, when the extractive backend
        finds nothing in the sources that answers; ``declined`` is then True. None: no
        text.
    """

    def __init__(
        self,
        backend: LLMBackend,
        question: str,
        material: Material,
        messages: Sequence[Message],
        *,
        renumber: bool = True,
        labels: dict[int, str] | None = None,
        model: str | None = None,
        search_text: str = "",
        queries: Sequence[str] = (),
        vector: Callable[[], Awaitable[object]] | None = None,
        fallback: Callable[[Cite], str] | None = None,
    ):
        self.backend = backend
        self.question = question
        self.material = material
        self.messages = list(messages)
        self.model = model
        self.search_text = search_text
        self.queries = tuple(queries)
        self.vector = vector
        self.fallback = fallback
        self.cleaner = AnswerCleaner(material.numbers(), renumber=renumber, labels=labels)
        self.declined = False

    @property
    def cited(self) -> list:
        """The material's sources the answer cites, in order of first citation; a
        document source whose quoted chunks are known (the extractive backend's) or that
        is cited as a whole (an answer from its metadata) is a copy with ``quoted`` set
        to their ids, in answer order, and ``markers`` to what each of its markers quotes
        (:attr:`AnswerCleaner.markers`)."""
        by_number = {source.number: source for source in self.material.sources}
        cited = []
        for number in self.cleaner.cited:
            source, quoted = by_number[number], self.cleaner.quoted.get(number) or []
            markers = [dict(marker) for marker in self.cleaner.markers.get(number, [])]
            if (quoted or markers) and hasattr(source, "quoted"):
                source = dataclasses.replace(source, quoted=list(quoted), markers=markers)
            cited.append(source)
        return cited

    @property
    def dropped(self) -> int:
        """Citations of sources that were not given, removed from the text."""
        return self.cleaner.dropped

    async def pieces(self, *, stream: bool = True) -> AsyncIterator[str]:
        """The answer as clean text pieces.

        :param stream: ask a model for a stream (else one reply).
        :raises BackendError: the model server failed (possibly after some pieces).
        """
        task = AnswerTask(self.question, self.material.sources, self.messages, vector=self._vector,
                          citer=self.cleaner, model=self.model, stream=stream, search_text=self.search_text,
                          queries=self.queries)
        spoke = False
        async with aclosing(self.backend.answer(task)) as answer:  # a model's HTTP stream closes with it
            async for piece in answer:
                spoke = True
                if piece:
                    yield piece
        if not spoke and self.fallback is not None:
            self.declined = True
            yield self.fallback(self.cleaner.cite)

    async def _vector(self):
        if self.vector is not None:
            return await self.vector()
        return await asyncio.to_thread(embeddings.embed_query, self.search_text or self.question)
