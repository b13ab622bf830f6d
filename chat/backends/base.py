"""The contract every LLM backend keeps: chat (optionally JSON-schema constrained),
stream, embed, and (optionally) tool choice. A setting picks one (``KLEA_LLM_BACKEND``, see :func:`chat.backends.get_backend`).

Messages are plain dicts ``{"role": "system" | "user" | "assistant", "content": str}``.
Every failure to reach or use the model server is a :class:`BackendError` with a stable
``code``; the pipeline turns it into one ``error`` event.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

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


class LLMBackend(ABC):
    """A chat model server (or the model-free stand-in).

    ``generative`` is False for a backend that cannot write free text; the pipeline
    then uses its model-free strategies (see :mod:`chat.backends.extractive`).

    Usage::

        backend = get_backend()
        text = await backend.chat([{"role": "user", "content": "Hi"}])
        async for piece in backend.stream(messages):
            ...
        await backend.aclose()
    """

    name = "base"
    generative = True
    supports_tools = False

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

    async def aclose(self) -> None:
        """Release connections (called once at the end of every turn)."""
