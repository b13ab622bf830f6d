"""The pipeline's system checks, each both ways."""

import pytest
from django.test import override_settings

from chat.checks import check_pipeline_settings


def ids():
    return [error.id for error in check_pipeline_settings()]


def test_defaults_pass():
    with override_settings(KLEA_LLM_BACKEND="extractive", KLEA_RAG_GUARD_ON_ERROR="decline"):
        assert ids() == []


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"KLEA_LLM_BACKEND": "gpt"}, ["chat.E001"]),
        ({"KLEA_RAG_GUARD_ON_ERROR": "ignore"}, ["chat.E002"]),
        ({"KLEA_LLM_BACKEND": "openai", "KLEA_OPENAI_BASE_URL": ""}, ["chat.E003"]),
        ({"KLEA_LLM_BACKEND": "openai", "KLEA_OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, []),
        ({"KLEA_RAG_RETRIEVAL_BUDGET": 0}, ["chat.E004"]),
        ({"KLEA_MCP_TOOL_TIMEOUT": 0}, ["chat.E005"]),
        ({"KLEA_MCP_TOOL_BUDGET": -1.0}, ["chat.E005"]),
        ({"KLEA_MCP_MAX_CALLS": 0}, ["chat.E005"]),
        ({"KLEA_MCP_RESULT_CHARS": 0}, ["chat.E005"]),
        ({"KLEA_MCP_TOOL_TIMEOUT": 0.5, "KLEA_MCP_MAX_CALLS": 1}, []),
    ],
)
def test_misconfiguration_is_reported(overrides, expected):
    with override_settings(**{"KLEA_LLM_BACKEND": "extractive", "KLEA_RAG_GUARD_ON_ERROR": "decline", **overrides}):
        assert ids() == expected


def test_messages():
    with override_settings(KLEA_LLM_BACKEND="gpt", KLEA_RAG_GUARD_ON_ERROR="decline"):
        (error,) = check_pipeline_settings()
    assert (error.msg, error.hint) == (
        "KLEA_LLM_BACKEND='gpt' is not a backend.", "Use one of: extractive, ollama, openai.",
    )


def test_mcp_settings_message():
    with override_settings(KLEA_LLM_BACKEND="extractive", KLEA_RAG_GUARD_ON_ERROR="decline", KLEA_MCP_MAX_CALLS=0):
        (error,) = check_pipeline_settings()
    assert (error.id, error.msg) == ("chat.E005", "An MCP tool setting is out of range (seconds > 0, counts >= 1).")
    assert error.hint.startswith("KLEA_MCP_TOOL_TIMEOUT and KLEA_MCP_TOOL_BUDGET must be > 0")


@pytest.mark.parametrize("debug, key, expected", [
    (False, "django-insecure-local-only-set-DJANGO_SECRET_KEY-in-production", ["chat.W001"]),
    (True, "django-insecure-local-only-set-DJANGO_SECRET_KEY-in-production", []),  # a developer's laptop
    (False, "a-long-random-production-key-0123456789abcdef", []),
])
def test_the_development_secret_key_with_debug_off_is_a_warning(debug, key, expected):
    from chat.checks import check_secret_key

    with override_settings(DEBUG=debug, SECRET_KEY=key):
        warnings = check_secret_key()
    assert [w.id for w in warnings] == expected
    if warnings:
        assert (warnings[0].msg, warnings[0].hint) == (
            "The development SECRET_KEY is used with DEBUG off.",
            "Set DJANGO_SECRET_KEY to a long random value (docs/security.md).")
