"""An OpenAI-compatible endpoint (llama.cpp server, vLLM, LM Studio, ...) over httpx.

``POST {base}/chat/completions`` (``response_format`` = ``json_schema`` for structured
outputs; ``stream`` = server-sent events ending with ``data: [DONE]``) and
``POST {base}/embeddings``. ``base`` is ``KLEA_OPENAI_BASE_URL``, e.g.
``http://127.0.0.1:8080/v1``. Tools: ``tools`` (function specs, full JSON schemas) with
``tool_choice`` ``auto``; the reply's ``message.tool_calls`` carry JSON-encoded arguments.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx

from ..redact import public_url
from .base import BackendError, LLMBackend, Message, ModelNotFound, Timeout, ToolRequest, Unreachable
from .ollama import MAX_CONNECT_TIMEOUT


def _arguments(raw) -> dict | str:
    """OpenAI sends arguments as a JSON string: a dict when it decodes to one, else the raw text."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return str(raw)
    return value if isinstance(value, dict) else str(raw)


class OpenAIBackend(LLMBackend):
    """Chat, stream and embed on an OpenAI-compatible server.

    Usage::

        backend = OpenAIBackend("http://127.0.0.1:8080/v1", chat_model="qwen3-0.6b")
        async for piece in backend.stream(messages):
            ...

    :param api_key: sent as ``Authorization: Bearer``; "" sends none.
    :param timeout: seconds without a byte from the server before ``timeout``.
    """

    name = "openai"
    supports_tools = True

    def __init__(
        self,
        base_url: str,
        *,
        chat_model: str,
        guard_model: str = "",
        embedding_model: str = "",
        api_key: str = "",
        timeout: float = 120.0,
    ):
        self.base_url = base_url.rstrip("/")
        self.where = public_url(self.base_url)  # messages never show user info or query strings
        self._chat_model = chat_model
        self._guard_model = guard_model
        self.embedding_model = embedding_model
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, MAX_CONNECT_TIMEOUT)),
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
        except httpx.ConnectError:
            raise Unreachable(f"cannot reach the OpenAI-compatible server at {self.where}", model=model) from None
        except httpx.TimeoutException:
            raise Timeout(
                f"the server at {self.where} sent nothing for {self.timeout:g} s (model '{model}')", model=model
            ) from None
        except httpx.HTTPError as exc:
            raise BackendError(f"HTTP error from {self.where} ({type(exc).__name__})", model=model) from None

    async def _check(self, response: httpx.Response, model: str) -> None:
        if response.status_code < 400:
            return
        await response.aread()
        try:
            detail = response.json().get("error", response.text)
            detail = detail.get("message", detail) if isinstance(detail, dict) else detail
        except ValueError:
            detail = response.text
        if response.status_code == 404:
            raise ModelNotFound(f"model '{model}' is not served at {self.where}: {detail}", model=model)
        raise BackendError(f"server error {response.status_code} from {self.where}: {detail}", model=model)

    async def chat(self, messages: Sequence[Message], *, schema: dict | None = None, model: str | None = None) -> str:
        model = model or self._chat_model
        body: dict = {"model": model, "messages": list(messages), "stream": False}
        if schema:
            body["temperature"] = 0
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema, "strict": True},
            }
        async with self._errors(model):
            response = await self._client.post("/chat/completions", json=body)
            await self._check(response, model)
        try:
            return response.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise BackendError(f"unexpected reply from {self.where}: {response.text[:200]}", model=model) from None

    async def choose_tools(
        self, messages: Sequence[Message], tools: Sequence[dict], *, model: str | None = None
    ) -> list[ToolRequest]:
        model = model or self._chat_model
        body = {
            "model": model,
            "messages": list(messages),
            "tools": list(tools),
            "tool_choice": "auto",
            "temperature": 0,
            "stream": False,
        }
        async with self._errors(model):
            response = await self._client.post("/chat/completions", json=body)
            await self._check(response, model)
        try:
            calls = response.json()["choices"][0]["message"].get("tool_calls") or []
            requests = [(call["function"]["name"], call["function"].get("arguments") or "{}") for call in calls]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise BackendError(f"unexpected reply from {self.where}: {response.text[:200]}", model=model) from None
        return [ToolRequest(name, _arguments(raw)) for name, raw in requests]

    async def stream(self, messages: Sequence[Message], *, model: str | None = None) -> AsyncIterator[str]:
        model = model or self._chat_model
        body = {"model": model, "messages": list(messages), "stream": True}
        async with self._errors(model):
            async with self._client.stream("POST", "/chat/completions", json=body) as response:
                await self._check(response, model)
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[len("data:"):].strip()
                    if data == "[DONE]":
                        return
                    try:
                        delta = json.loads(data)["choices"][0].get("delta", {})
                    except (ValueError, KeyError, IndexError, AttributeError):
                        raise BackendError(f"malformed stream event from {self.where}: {data[:200]}", model=model)
                    if delta.get("content"):
                        yield delta["content"]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.embedding_model
        async with self._errors(model):
            response = await self._client.post("/embeddings", json={"model": model, "input": list(texts)})
            await self._check(response, model)
        rows = sorted(response.json()["data"], key=lambda row: row["index"])
        return [list(row["embedding"]) for row in rows]

    async def aclose(self) -> None:
        await self._client.aclose()
