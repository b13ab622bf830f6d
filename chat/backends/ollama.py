"""Ollama through the official ``ollama.AsyncClient`` (HTTP /api/chat, /api/embed).

Structured outputs go through ``format=<JSON schema>``; streaming reads Ollama's NDJSON
lines. Errors become typed :class:`~chat.backends.base.BackendError`s:

- HTTP 404 (model not pulled) -> ``model_not_found``, message says ``ollama pull <model>``;
- connection refused -> ``unreachable``;
- no byte within ``timeout`` seconds -> ``timeout``;
- anything else the server reports -> ``server_error``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx
import ollama

from .base import BackendError, LLMBackend, Message, ModelNotFound, Timeout, Unreachable

# Structured calls (classification, queries, evaluation) want the likeliest answer.
STRUCTURED_OPTIONS = {"temperature": 0}
# Connecting takes milliseconds on a working server; a longer wait means it is down.
MAX_CONNECT_TIMEOUT = 10.0


class OllamaBackend(LLMBackend):
    """Chat, stream and embed on an Ollama server.

    Usage::

        backend = OllamaBackend("http://127.0.0.1:11434", chat_model="qwen3:0.6b")
        text = await backend.chat(messages, schema={"type": "object", ...})

    :param host: the server URL (``OLLAMA_HOST``).
    :param timeout: seconds without a byte from the server before ``timeout``
        (per read, so a long but steady stream is never cut).
    """

    name = "ollama"

    def __init__(
        self,
        host: str,
        *,
        chat_model: str,
        guard_model: str = "",
        embedding_model: str = "",
        timeout: float = 120.0,
    ):
        self.host = host
        self._chat_model = chat_model
        self._guard_model = guard_model
        self.embedding_model = embedding_model
        self.timeout = timeout
        self._client = ollama.AsyncClient(
            host=host, timeout=httpx.Timeout(timeout, connect=min(timeout, MAX_CONNECT_TIMEOUT))
        )

    @property
    def chat_model(self) -> str:
        return self._chat_model

    @property
    def guard_model(self) -> str:
        return self._guard_model

    @asynccontextmanager
    async def _errors(self, model: str):
        try:
            yield
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise ModelNotFound(
                    f"model '{model}' is not on the Ollama server at {self.host}; run `ollama pull {model}`",
                    model=model,
                ) from None
            raise BackendError(f"Ollama server error for model '{model}': {exc.error}", model=model) from None
        except (ConnectionError, httpx.ConnectError):
            raise Unreachable(f"cannot reach the Ollama server at {self.host} (is it running?)", model=model) from None
        except httpx.TimeoutException:
            raise Timeout(
                f"the Ollama server at {self.host} sent nothing for {self.timeout:g} s (model '{model}')", model=model
            ) from None
        except httpx.HTTPError as exc:
            raise BackendError(f"Ollama HTTP error ({type(exc).__name__}): {exc}", model=model) from None

    async def chat(self, messages: Sequence[Message], *, schema: dict | None = None, model: str | None = None) -> str:
        model = model or self._chat_model
        async with self._errors(model):
            response = await self._client.chat(
                model=model,
                messages=list(messages),
                format=schema,
                options=STRUCTURED_OPTIONS if schema else None,
            )
        return response.message.content or ""

    async def stream(self, messages: Sequence[Message], *, model: str | None = None) -> AsyncIterator[str]:
        model = model or self._chat_model
        async with self._errors(model):
            parts = await self._client.chat(model=model, messages=list(messages), stream=True)
            async for part in parts:
                if part.message.content:
                    yield part.message.content

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.embedding_model
        async with self._errors(model):
            response = await self._client.embed(model=model, input=list(texts))
        return [list(vector) for vector in response.embeddings]

    async def aclose(self) -> None:
        await self._client.close()
