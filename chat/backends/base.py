"""The contract every LLM backend keeps: chat (optionally JSON-schema constrained),
stream, embed, (optionally) tool choice, and the pipeline's three jobs as methods:
:meth:`LLMBackend.classify`, :meth:`LLMBackend.answer`, :meth:`LLMBackend.summarise`.
A model backend does them by prompting its model (the prompts come with the task, built
by the pipeline); the extractive backend by its own model-free means. Callers never ask
which kind of backend they hold; the capability flags say what only a model can do.
A setting picks one (``KLEA_LLM_BACKEND``, see :func:`chat.backends.get_backend`).

Messages are plain dicts ``{"role": "system" | "user" | "assistant", "content": str}``.
Every failure to reach or use the model server is a :class:`BackendError` with a stable
``code``; the pipeline turns it into one ``error`` event.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from .structured import ask_json, strip_think

Message = dict[str, str]


@dataclass(frozen=True)
class ToolRequest:
    """A tool call the model asked for.

    ``name``: the function name as the model wrote it (not necessarily one offered);
    ``arguments``: a dict, or the raw string when the server sent text that is not a
    JSON object (the caller validates either way).
    """

    name: str
    arguments: dict | str


class BackendError(Exception):
    """The model server could not do what was asked.

    ``code`` is stable and shown to clients: ``model_not_found``, ``unreachable``,
    ``timeout``, ``server_error`` or ``not_supported``.
    """

    code = "server_error"

    def __init__(self, message: str, *, model: str = ""):
        super().__init__(message)
        self.message = message
        self.model = model


class ModelNotFound(BackendError):
    code = "model_not_found"


class Unreachable(BackendError):
    code = "unreachable"


class Timeout(BackendError):
    code = "timeout"


class NotSupported(BackendError):
    """The backend cannot do this at all (e.g. free text from the extractive backend)."""

    code = "not_supported"


@dataclass(frozen=True)
class ClassifyTask:
    """Which of ``domains`` a question belongs to.

    ``messages``: the prompt for a model (reply: JSON following ``schema``);
    ``validate``: the parsed reply -> list of names (raises ValueError on a bad shape);
    ``vector``: returns the question's embedding, shape (384,) (computed once per turn).
    """

    question: str
    domains: Sequence  # domains.models.Domain rows the user may query
    messages: Sequence[Message]
    schema: dict
    validate: Callable[[object], list]
    vector: Callable[[], Awaitable]


@dataclass(frozen=True)
class Classification:
    """``domains``: names, best first, possibly not all valid (the caller cleans them);
    [] = none fits. ``note``: how it went (e.g. " (retried once)"); ``scores``: the
    routed domains' evidence scores when the backend has them."""

    domains: list[str]
    note: str = ""
    scores: dict[str, float] | None = None


class Citer:
    """How answer text gets its citation markers. A model's own markers pass through
    :meth:`feed` / :meth:`close`; a backend quoting sources itself calls :meth:`cite`.
    This default keeps text as it is and marks source n as ``[n]``; ``quoted`` (the ids
    of the source's chunks that the text before the marker quotes) and ``passages``
    (that text, verbatim from the chunk, one string per passage) are for citers that
    record them, as is ``document`` (the text before the marker comes from the source's
    metadata, not from a passage: the marker cites the document as a whole)."""

    def feed(self, piece: str) -> str:
        return piece

    def close(self) -> str:
        return ""

    def cite(self, number: int, quoted: Sequence[int] = (), passages: Sequence[str] = (), *,
             document: bool = False) -> str:
        return f"[{number}]"


@dataclass(frozen=True)
class AnswerTask:
    """An answer to ``question`` from numbered sources.

    ``sources``: :class:`domains.retrieval.Source`-like objects (``number``, ``chunks``
    best first, each with ``text``, ``score`` in [0, 1] and ``headings``);
    ``messages``: the prompt for a model (the same sources as reference material);
    ``citer``: makes the final text's citation markers; ``vector``: as in ClassifyTask;
    ``model``: overrides the chat model; ``stream``: False asks a model for the whole
    reply at once (one piece); ``search_text``: for a follow-up, the question together
    with the one(s) before it (chat/pipeline/follow_up.py), "" otherwise: a backend
    without the conversation in its prompt takes the question's terms from it;
    ``queries``: the search queries that found the sources (:meth:`LLMBackend.search_queries`
    or a model's), () when not known.
    """

    question: str
    sources: Sequence
    messages: Sequence[Message]
    vector: Callable[[], Awaitable]
    citer: Citer = field(default_factory=Citer)
    model: str | None = None
    stream: bool = True
    search_text: str = ""
    queries: Sequence[str] = ()


class LLMBackend(ABC):
    """A chat model server (or the model-free stand-in).

    What only a model can do, the flags say (the pipeline skips it otherwise):
    ``can_modify_query`` (write search queries), ``can_review`` (score an answer),
    ``can_compose`` (write text of its own: rewrite an answer, answer from general
    knowledge).

    Usage::

        backend = get_backend()
        text = await backend.chat([{"role": "user", "content": "Hi"}])
        async for piece in backend.stream(messages):
            ...
        await backend.aclose()
    """

    name = "base"
    can_modify_query = True
    can_review = True
    can_compose = True
    supports_tools = False

    def search_queries(self, question: str, domains: Sequence) -> list[str]:
        """The search queries of a backend that writes none (``can_modify_query`` False):
        the question itself. ``domains``: the routed ``Domain`` instances."""
        return [question]

    @property
    @abstractmethod
    def chat_model(self) -> str:
        """Name of the chat model (shown in events and errors)."""

    @property
    def guard_model(self) -> str:
        """Name of the safety model; "" = no guard step."""
        return ""

    @abstractmethod
    async def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: dict | None = None,
        model: str | None = None,
    ) -> str:
        """One complete reply.

        :param schema: a JSON schema the reply must follow (structured output); the
            reply is then JSON text (callers still validate it: small models slip).
        :param model: overrides the chat model (e.g. the guard model).
        :returns: the reply text, unparsed.
        :raises BackendError: model missing, server unreachable, timeout, server error.
        """

    @abstractmethod
    def stream(self, messages: Sequence[Message], *, model: str | None = None) -> AsyncIterator[str]:
        """The reply as it is generated: an async iterator of text pieces.

        Closing the iterator (or cancelling the task reading it) closes the HTTP
        stream, which makes the server stop generating.

        :raises BackendError: as :meth:`chat`, possibly after some pieces.
        """

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embeddings of ``texts``: one list of floats per text, in order.

        :raises BackendError: as :meth:`chat`.
        """

    async def classify(self, task: ClassifyTask) -> Classification:
        """The domains the question belongs to: the model answers ``task.messages``.

        :raises BackendError: the server failed (an invalid reply twice is ``[]``).
        """
        values, invalid = await ask_json(self, task.messages, task.schema, task.validate)
        note = " (invalid JSON twice)" if values is None else " (retried once)" if invalid else ""
        return Classification(list(values or []), note)

    async def answer(self, task: AnswerTask) -> AsyncIterator[str]:
        """The answer as final text pieces (citations made by ``task.citer``). A model's
        reply is its answer, even an empty one (one ``""`` piece: the caller's checks
        judge it); a backend that finds nothing in the sources yields no piece at all.

        :raises BackendError: possibly after some pieces.
        """
        if not task.stream:
            yield task.citer.feed(await self.chat(task.messages, model=task.model)) + task.citer.close()
            return
        spoke = False
        stream = self.stream(task.messages, model=task.model)
        try:
            async for piece in stream:
                if text := task.citer.feed(piece):
                    spoke = True
                    yield text
        finally:
            await stream.aclose()  # closes the HTTP stream: the server stops generating
        text = task.citer.close()
        if text or not spoke:
            yield text

    async def summarise(self, summary: str, messages: Sequence[dict], prompt: Sequence[Message]) -> str:
        """The running summary with ``messages`` (``{"role", "content"}``) folded in;
        a model answers ``prompt``. :raises BackendError: the server failed."""
        return strip_think(await self.chat(prompt))

    async def choose_tools(
        self, messages: Sequence[Message], tools: Sequence[dict], *, model: str | None = None
    ) -> list[ToolRequest]:
        """The tool calls the model makes for ``messages`` given ``tools`` (none is fine).

        Only backends with ``supports_tools`` implement it; the calls are not run here.

        :param tools: OpenAI-style function specs ``{"type": "function", "function":
            {"name", "description", "parameters": <JSON schema>}}``.
        :returns: the requested calls in the model's order.
        :raises NotSupported: this backend cannot call tools.
        :raises BackendError: as :meth:`chat` (a model without tool support is a
            ``server_error`` with the server's message).
        """
        raise NotSupported(f"the {self.name} backend does not call tools")

    def warm_up(self, domains: Sequence) -> None:
        """Prepare, once per server process, what its first question would otherwise wait
        for. Runs on the warm-up thread before ``/health`` says ready (synchronous; may
        read the database). Default: nothing.

        :param domains: the active Domain rows (stores prefetched).
        """

    async def aclose(self) -> None:
        """Release connections (called once at the end of every turn)."""
