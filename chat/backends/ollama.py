"""Ollama through the official ``ollama.AsyncClient`` (HTTP /api/chat, /api/embed).

Structured outputs go through ``format=<JSON schema>``; streaming reads Ollama's NDJSON
lines. Errors become typed :class:`~chat.backends.base.BackendError`s:

- HTTP 404 (model not pulled) -> ``model_not_found``, message says ``ollama pull <model>``;
- connection refused -> ``unreachable``;
- no byte within ``timeout`` seconds -> ``timeout``;
- anything else the server reports -> ``server_error``.

Tools go through Ollama's tools API (``tools=[...]``, reply ``message.tool_calls``).
Ollama reads only ``type``, ``description``, ``enum`` and ``items`` of each parameter, so
:func:`ollama_tool` folds the rest in: a simple ``anyOf`` of types (``Optional[str]`` is
``anyOf [string, null]``) becomes a type list, and defaults and bounds are appended to the
description. The full schema is still enforced before any call (:mod:`chat.mcp.plan`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx
import ollama

from ..redact import public_url
from .base import BackendError, LLMBackend, Message, ModelNotFound, Timeout, ToolRequest, Unreachable

# Structured calls (classification, queries, evaluation) want the likeliest answer.
STRUCTURED_OPTIONS = {"temperature": 0}
# JSON-schema keywords Ollama drops; shown to the model in the parameter's description.
_HINT_KEYWORDS = (
    "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "pattern", "format", "minItems", "maxItems",
)
# Connecting takes milliseconds on a working server; a longer wait means it is down.
MAX_CONNECT_TIMEOUT = 10.0


def _is_type(value) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _ollama_property(schema: dict) -> dict:
    prop = {}
    if _is_type(schema.get("type")):
        prop["type"] = schema["type"]
    else:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        kinds = [option.get("type") for option in options if isinstance(option, dict)]
        if kinds and all(isinstance(kind, str) for kind in kinds):
            prop["type"] = kinds if len(kinds) > 1 else kinds[0]
    if "items" in schema:
        prop["items"] = schema["items"]
    if isinstance(schema.get("description"), str):
        prop["description"] = schema["description"]
    if isinstance(schema.get("enum"), list):
        prop["enum"] = schema["enum"]
    elif "const" in schema:
        prop["enum"] = [schema["const"]]
    hints = [f"{key} {json.dumps(schema[key])}" for key in _HINT_KEYWORDS if key in schema]
    if hints:
        prop["description"] = f"{prop.get('description', '')} ({'; '.join(hints)})".strip()
    return prop


def ollama_tool(spec: dict) -> dict:
    """An OpenAI-style function spec in the shape Ollama reads (see the module docstring)."""
    function = spec["function"]
    schema = function.get("parameters") or {}
    parameters: dict = {"type": "object", "properties": {}}
    for name, prop in (schema.get("properties") or {}).items():
        parameters["properties"][name] = _ollama_property(prop if isinstance(prop, dict) else {})
    if schema.get("required"):
        parameters["required"] = list(schema["required"])
    if schema.get("$defs"):
        parameters["$defs"] = schema["$defs"]
    return {
        "type": "function",
        "function": {"name": function["name"], "description": function.get("description", ""), "parameters": parameters},
    }


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
    supports_tools = True

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
        self.where = public_url(host)  # messages never show user info or query strings
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
                    f"model '{model}' is not on the Ollama server at {self.where}; run `ollama pull {model}`",
                    model=model,
                ) from None
            raise BackendError(f"Ollama server error for model '{model}': {exc.error}", model=model) from None
        except (ConnectionError, httpx.ConnectError):
            raise Unreachable(f"cannot reach the Ollama server at {self.where} (is it running?)", model=model) from None
        except httpx.TimeoutException:
            raise Timeout(
                f"the Ollama server at {self.where} sent nothing for {self.timeout:g} s (model '{model}')", model=model
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

    async def choose_tools(
        self, messages: Sequence[Message], tools: Sequence[dict], *, model: str | None = None
    ) -> list[ToolRequest]:
        model = model or self._chat_model
        async with self._errors(model):
            response = await self._client.chat(
                model=model,
                messages=list(messages),
                tools=[ollama_tool(spec) for spec in tools],
                options=STRUCTURED_OPTIONS,
            )
        calls = response.message.tool_calls or []
        return [ToolRequest(call.function.name, dict(call.function.arguments or {})) for call in calls]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.embedding_model
        async with self._errors(model):
            response = await self._client.embed(model=model, input=list(texts))
        return [list(vector) for vector in response.embeddings]

    async def aclose(self) -> None:
        await self._client.close()
