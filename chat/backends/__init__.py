"""LLM backends behind one interface (:class:`~chat.backends.base.LLMBackend`).

``KLEA_LLM_BACKEND`` picks one: ``extractive`` (model-free, the default when no model
server is configured), ``ollama`` (``OLLAMA_HOST``) or ``openai`` (``KLEA_OPENAI_BASE_URL``).
"""

from __future__ import annotations

from django.conf import settings

from .base import BackendError, LLMBackend, ModelNotFound, NotSupported, Timeout, Unreachable

BACKENDS = ("extractive", "ollama", "openai")

__all__ = [
    "BACKENDS",
    "BackendError",
    "LLMBackend",
    "ModelNotFound",
    "NotSupported",
    "Timeout",
    "Unreachable",
    "get_backend",
]


def warm_up_backend() -> None:
    """The configured backend's :meth:`~chat.backends.base.LLMBackend.warm_up` over the
    active domains (a server process's warm-up thread, after the embedding model has
    loaded); closes the thread's database connection after."""
    from django.db import connection

    from domains.models import Domain

    try:
        get_backend().warm_up(list(Domain.objects.filter(active=True).prefetch_related("stores")))
    finally:
        connection.close()


def get_backend(name: str | None = None) -> LLMBackend:
    """A new backend instance from the settings (one per turn: its HTTP client is bound
    to the event loop that uses it).

    :param name: overrides ``KLEA_LLM_BACKEND``.
    :raises ValueError: an unknown backend name (the allowed ones are listed).
    """
    name = name or settings.KLEA_LLM_BACKEND
    if name == "extractive":
        from .extractive import ExtractiveBackend

        return ExtractiveBackend()
    if name == "ollama":
        from .ollama import OllamaBackend

        return OllamaBackend(
            settings.OLLAMA_HOST or "http://127.0.0.1:11434",
            chat_model=settings.KLEA_RAG_CHAT_MODEL,
            guard_model=settings.KLEA_RAG_GUARD_MODEL,
            embedding_model=settings.KLEA_RAG_EMBEDDING_MODEL,
            timeout=settings.KLEA_LLM_TIMEOUT,
        )
    if name == "openai":
        from .openai import OpenAIBackend

        return OpenAIBackend(
            settings.KLEA_OPENAI_BASE_URL,
            chat_model=settings.KLEA_RAG_CHAT_MODEL,
            guard_model=settings.KLEA_RAG_GUARD_MODEL,
            embedding_model=settings.KLEA_RAG_EMBEDDING_MODEL,
            api_key=settings.KLEA_OPENAI_API_KEY,
            timeout=settings.KLEA_LLM_TIMEOUT,
        )
    raise ValueError(f"unknown LLM backend {name!r}; allowed: {', '.join(BACKENDS)}")
