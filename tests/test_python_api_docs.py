"""docs/python-api.md runs as written: its ```python blocks are executed in order, in one
namespace, from the repository root, against the real database in autocommit mode
(as a script would; asyncio.run() uses other threads, which must see the rows). The
rows the page creates are deleted afterwards."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "python-api.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[str]:
    return [match.group(1) for match in _BLOCK.finditer(text)]


# The mark makes pytest-django create the test database even when this module runs alone
# (the test below uses the database outside pytest-django's per-test transaction).
@pytest.mark.django_db
def test_the_page_has_the_reference_examples():
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    code = "\n".join(blocks)
    assert len(blocks) == 12
    for name in ("rag.query(", "rag.retrieve(", "rag.stream(", "rag.astream(", "rag.aquery(", "rag.get_citations(",
                 "format_answer_with_citations()", "format_for_prompt()", "build_context(", "deduplicate_chunks(",
                 "RetrievalStrategy.FUSION", '"hybrid"', "RAGConfig()", "context_builder=", "citation_formatter="):
        assert name in code, name


@pytest.fixture
def committed(django_db_setup, django_db_blocker, settings):
    """The real database in autocommit mode; what the page creates is removed after."""
    settings.KLEA_LLM_BACKEND = "extractive"
    with django_db_blocker.unblock():
        from domains.models import Domain
        from ingestion.models import IngestionJob, StagedFile

        last_job = IngestionJob.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        last_staged = StagedFile.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        assert not Domain.objects.filter(name="klea-guide").exists()
        try:
            yield
        finally:
            Domain.objects.filter(name="klea-guide").delete()
            IngestionJob.objects.filter(pk__gt=last_job).delete()
            StagedFile.objects.filter(pk__gt=last_staged).delete()
            # asyncio.run() ran the ORM in asgiref's sync thread: close its connection,
            # or the test database cannot be dropped at the end of the session.
            asyncio.run(sync_to_async(connections.close_all)())


def test_every_example_runs(committed, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "python_api_docs"}
    for number, block in enumerate(python_blocks(PAGE.read_text(encoding="utf-8")), start=1):
        try:
            exec(compile(block, f"{PAGE.name} block {number}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"block {number} of {PAGE.name} failed: {exc!r}\n{block}") from exc
    printed = capsys.readouterr().out
    assert "Sources:\n  [1] retrieval.md: " in printed
    assert "True store 'no-such-store' does not exist (deleted, or its domain was)" in printed
