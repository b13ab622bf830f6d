"""System checks for the pipeline settings (fail loudly at startup, not mid-chat)."""

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)

E001_MSG = "KLEA_LLM_BACKEND={value!r} is not a backend."
E001_HINT = "Use one of: extractive, ollama, openai."
E002_MSG = "KLEA_RAG_GUARD_ON_ERROR={value!r} is not a policy."
E002_HINT = "Use decline (refuse when the guard fails) or allow."
E003_MSG = "KLEA_LLM_BACKEND=openai needs KLEA_OPENAI_BASE_URL."
E003_HINT = "Set it to the server's API root, e.g. http://127.0.0.1:8080/v1."
E004_MSG = "KLEA_RAG_RETRIEVAL_BUDGET, KLEA_RAG_MAX_QUERIES must be >= 1; KLEA_RAG_REWRITE_BUDGET >= 0."
E004_HINT = "The defaults are 5, 3 and 1."
E005_MSG = "An MCP tool setting is out of range (seconds > 0, counts >= 1)."
E005_HINT = (
    "KLEA_MCP_TOOL_TIMEOUT and KLEA_MCP_TOOL_BUDGET must be > 0 (defaults 60, 120); "
    "KLEA_MCP_MAX_CALLS and KLEA_MCP_RESULT_CHARS >= 1 (defaults 4, 2500)."
)


W001_MSG = (
    f"DJANGO_SECRET_KEY is weak (under {SECRET_KEY_MIN_LENGTH} characters, under "
    f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} distinct ones, or starting with '{SECRET_KEY_INSECURE_PREFIX}') and DEBUG is off."
)
W001_HINT = "Set a long random value, or unset it to use a generated key (var/secret_key, docs/security.md)."


def insecure_secret_key() -> bool:
    """A weak key (Django's criteria for security.W009), with DEBUG off (a deployment, not a
    laptop). The generated key (DJANGO_SECRET_KEY unset) is never weak."""
    key = settings.SECRET_KEY
    weak = (
        len(key) < SECRET_KEY_MIN_LENGTH
        or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS
        or key.startswith(SECRET_KEY_INSECURE_PREFIX)
    )
    return weak and not settings.DEBUG


@register(Tags.security)
def check_secret_key(app_configs=None, **kwargs):
    if insecure_secret_key():
        return [Warning(W001_MSG, hint=W001_HINT, id="chat.W001")]
    return []


@register()
def check_pipeline_settings(app_configs=None, **kwargs):
    from .backends import BACKENDS
    from .pipeline.state import GUARD_POLICIES

    errors = []
    if settings.KLEA_LLM_BACKEND not in BACKENDS:
        errors.append(Error(E001_MSG.format(value=settings.KLEA_LLM_BACKEND), hint=E001_HINT, id="chat.E001"))
    if settings.KLEA_RAG_GUARD_ON_ERROR not in GUARD_POLICIES:
        errors.append(Error(E002_MSG.format(value=settings.KLEA_RAG_GUARD_ON_ERROR), hint=E002_HINT, id="chat.E002"))
    if settings.KLEA_LLM_BACKEND == "openai" and not settings.KLEA_OPENAI_BASE_URL:
        errors.append(Error(E003_MSG, hint=E003_HINT, id="chat.E003"))
    if (
        settings.KLEA_RAG_RETRIEVAL_BUDGET < 1
        or settings.KLEA_RAG_MAX_QUERIES < 1
        or settings.KLEA_RAG_REWRITE_BUDGET < 0
    ):
        errors.append(Error(E004_MSG, hint=E004_HINT, id="chat.E004"))
    if (
        settings.KLEA_MCP_TOOL_TIMEOUT <= 0
        or settings.KLEA_MCP_TOOL_BUDGET <= 0
        or settings.KLEA_MCP_MAX_CALLS < 1
        or settings.KLEA_MCP_RESULT_CHARS < 1
    ):
        errors.append(Error(E005_MSG, hint=E005_HINT, id="chat.E005"))
    return errors
