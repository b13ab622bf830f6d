"""The PraisonAI-style Python API over Klea's retrieval and answer backends.

Scripts set Django up first, then import the classes::

    from chat.rag import setup
    setup()                      # DJANGO_SETTINGS_MODULE=klea_site.settings, django.setup()
    from chat.rag import RAG, Knowledge, RAGConfig, RetrievalStrategy

The value types and helpers (RAGConfig, RetrievalStrategy, Citation, ContextPack,
RAGResult, SearchResultItem, build_context, deduplicate_chunks) import without
Django; RAG and Knowledge need the app registry (:func:`setup`). See docs/python-api.md.
"""

from __future__ import annotations

import os

from .citations import DefaultCitationFormatter
from .config import DEFAULT_TEMPLATE, RAGConfig, RetrievalStrategy
from .context import DefaultContextBuilder, build_context, deduplicate_chunks, estimate_tokens
from .results import Citation, ContextPack, RAGResult, SearchResultItem, SearchResults

_LAZY = {
    "RAG": ("rag", "RAG"),
    "RAGStream": ("rag", "RAGStream"),
    "RAGAsyncStream": ("rag", "RAGAsyncStream"),
    "Knowledge": ("knowledge", "Knowledge"),
}

__all__ = [
    "DEFAULT_TEMPLATE",
    "Citation",
    "ContextPack",
    "DefaultCitationFormatter",
    "DefaultContextBuilder",
    "Knowledge",
    "RAG",
    "RAGAsyncStream",
    "RAGConfig",
    "RAGResult",
    "RAGStream",
    "RetrievalStrategy",
    "SearchResultItem",
    "SearchResults",
    "build_context",
    "deduplicate_chunks",
    "estimate_tokens",
    "setup",
]


def setup(settings_module: str = "klea_site.settings") -> None:
    """Configure Django for a script (idempotent): set DJANGO_SETTINGS_MODULE unless it
    is set, then ``django.setup()``. The database is the one the settings name (the
    embedded PostgreSQL unless DATABASE_URL is set); run ``manage.py migrate`` once."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", settings_module)
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()


def __getattr__(name: str):
    # RAG and Knowledge import models: loaded on first use, after setup().
    if name in _LAZY:
        from importlib import import_module

        module, attribute = _LAZY[name]
        return getattr(import_module(f"{__name__}.{module}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
