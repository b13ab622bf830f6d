"""The pipeline's system checks, each both ways."""

import os
import stat
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from chat.checks import check_pipeline_settings
from klea_site.secret_key import load_or_create


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


W001 = ("DJANGO_SECRET_KEY is weak (under 50 characters, under 5 distinct ones, or starting with "
        "'django-insecure-') and DEBUG is off.",
        "Set a long random value, or unset it to use a generated key (var/secret_key, docs/security.md).")
STRONG = "a-long-random-production-key-0123456789abcdefghijklmnop"  # 55 characters


@pytest.mark.parametrize("debug, key, expected", [
    (False, "django-insecure-local-only-set-DJANGO_SECRET_KEY-in-production", ["chat.W001"]),
    (False, "change-me", ["chat.W001"]),  # too short
    (False, "ab" * 30, ["chat.W001"]),  # 60 characters, 2 distinct
    (True, "change-me", []),  # a developer's laptop
    (False, STRONG, []),
])
def test_a_weak_secret_key_with_debug_off_is_a_warning(debug, key, expected):
    from chat.checks import check_secret_key

    with override_settings(DEBUG=debug, SECRET_KEY=key):
        warnings = check_secret_key()
    assert [w.id for w in warnings] == expected
    if warnings:
        assert (warnings[0].msg, warnings[0].hint) == W001


def test_the_generated_key_is_made_once_private_and_reused(tmp_path):
    path = tmp_path / "var" / "secret_key"  # its directory does not exist yet
    key = load_or_create(path)
    assert (len(key), len(set(key)) >= 5, path.read_text(), stat.S_IMODE(path.stat().st_mode)) == (
        67, True, key + "\n", 0o600)
    assert load_or_create(path) == key
    assert sorted(p.name for p in path.parent.iterdir()) == ["secret_key"]  # no temporary file left
    path.write_text("\n")
    with pytest.raises(ImproperlyConfigured) as empty:
        load_or_create(path)
    assert str(empty.value) == f"the secret key file {path} is empty; delete it to generate a new key"


def _check(tmp_path, **env):
    """``manage.py check`` in a fresh process: (stdout, stderr, exit status)."""
    environment = {**os.environ, "DATABASE_URL": "postgres://klea@127.0.0.1:1/klea",  # check never connects
                   "KLEA_SECRET_KEY_FILE": str(tmp_path / "secret_key"), "DJANGO_DEBUG": "false", **env}
    environment = {name: value for name, value in environment.items() if value is not None}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=settings.BASE_DIR, env=environment,
                          capture_output=True, text=True, timeout=120)
    return done.stdout, done.stderr, done.returncode


def test_no_secret_key_set_means_a_generated_one_and_no_warning(tmp_path):
    assert _check(tmp_path, DJANGO_SECRET_KEY=None) == ("System check identified no issues (0 silenced).\n", "", 0)
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600
    assert _check(tmp_path, DJANGO_SECRET_KEY="change-me") == (
        "", "System check identified some issues:\n\nWARNINGS:\n"
        f"?: (chat.W001) {W001[0]}\n\tHINT: {W001[1]}\n\nSystem check identified 1 issue (0 silenced).\n", 0)
