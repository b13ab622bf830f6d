"""What a run reports: the run-level error, each file's outcome and a step's report."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db import connection

logger = logging.getLogger("klea.ingestion")

# Outcomes that mean a file was not ingested because of a problem with it.
FAILURES = {"failed", "refused"}


class IngestError(ValueError):
    """A problem with the whole run (directory, domain, store); one line, names the input."""


@dataclass
class FileOutcome:
    """What one step did with one file.

    ``status``: chunked | stored | metadata (map re-applied, not re-embedded) |
    unchanged | skipped | needs_ocr | failed | refused (an upload not saved: its
    type, its name, a library that does not parse) | pruned | unsupported. ``reason``: short
    failure code (``encrypted``, ``not_utf8``, ...). ``notes``: what was applied to the
    file's map, and conflicts with admin edits.
    """

    file_name: str
    status: str
    chunks: int = 0
    error: str = ""
    reason: str = ""
    pages: int | None = None
    notes: list[str] = field(default_factory=list)


def failed_alone(file_name: str, step: str, error: Exception) -> FileOutcome:
    """The ``failed`` outcome (reason ``crashed``) of one file whose ``step`` ("staged",
    "stored") raised ``error`` (logged with its traceback), so that the run's other
    files go on: a value PostgreSQL refused (a path longer than the 500 characters a
    file name may have, and before them a NUL, a 1 MB title, a long converter note)
    stopped the whole run.

    :raises Exception: ``error`` itself when the database connection is gone (every
        file would fail alike: the run stops).
    """
    if not connection.is_usable():
        raise error
    logger.error("%s: could not be %s", file_name, step, exc_info=error)
    detail = (str(error).splitlines() or [""])[0][:200]
    return FileOutcome(file_name, "failed", reason="crashed",
                       error=f"{file_name}: could not be {step} ({type(error).__name__}: {detail})")


@dataclass
class StepReport:
    """All outcomes of one run of a step, with timing and the IngestionJob id."""

    step: str
    directory: str
    store: str = ""
    outcomes: list[FileOutcome] = field(default_factory=list)
    seconds: float = 0.0
    job_id: int | None = None
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # run-level problems not of one file (a refused library)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def chunks(self) -> int:
        return sum(o.chunks for o in self.outcomes if o.status in ("stored", "chunked"))

    @property
    def pages(self) -> int:
        return sum(o.pages or 0 for o in self.outcomes if o.status in ("stored", "chunked"))

    @property
    def failed(self) -> list[FileOutcome]:
        return [o for o in self.outcomes if o.status in FAILURES]
