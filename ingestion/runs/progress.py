"""Terminal output of the ``stores`` command: progress bars and summary tables."""

from __future__ import annotations

from tqdm import tqdm

from ingestion.outcomes import FileOutcome, StepReport
from ingestion.sources import OUTSIDE_FOLDER

# Outcomes printed above the progress bar as they happen.
LOUD = {"failed", "needs_ocr", "skipped"}
ROWS = {
    "chunk": [("chunked", "chunked"), ("unchanged", "unchanged"), ("skipped", "skipped"),
              ("needs OCR", "needs_ocr"), ("failed", "failed"), ("unsupported", "unsupported"), ("pruned", "pruned")],
    "store": [("stored", "stored"), ("map re-applied", "metadata"), ("unchanged", "unchanged"), ("skipped", "skipped"), ("failed", "failed"),
              ("pruned", "pruned"), ("needs OCR", "needs_ocr"), ("unsupported", "unsupported")],
}


class Progress:
    """A tqdm bar over files (count, rate, chunks so far) writing to ``stream``.

    Use ``on_start``/``on_file`` as the step callbacks; ``close()`` at the end.
    """

    def __init__(self, stream, disable: bool = False, unit: str = "file", desc: str = "") -> None:
        self.stream = stream
        self.disable = disable
        self.unit = unit
        self.desc = desc
        self.bar: tqdm | None = None
        self.chunks = 0

    def on_start(self, total: int) -> None:
        self.close()
        self.chunks = 0
        self.bar = tqdm(
            total=total, unit=self.unit, desc=self.desc, disable=self.disable, file=self.stream, dynamic_ncols=True
        )

    def on_page(self, file_name: str, done: int, total: int) -> None:
        """OCR progress within the current file: ``name.pdf OCR 3/28`` beside the bar."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"{file_name} OCR {done}/{total}")

    def on_file(self, outcome: FileOutcome) -> None:
        if self.bar is None:
            return
        self.bar.update(1)
        if outcome.status in ("chunked", "stored"):
            self.chunks += outcome.chunks
            self.bar.set_postfix(chunks=self.chunks, refresh=False)
        if outcome.status in LOUD:
            self.bar.write(f"{outcome.status}: {outcome.error}", file=self.stream)
        elif outcome.error:  # converted with losses (a page whose OCR failed)
            self.bar.write(f"warning: {outcome.error}", file=self.stream)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def summary_lines(report: StepReport, header: str) -> list[str]:
    """``header`` then one ``  label value`` row per outcome kind, chunks, pages, time."""
    lines = [header]
    for label, status in ROWS[report.step]:
        if status in ("needs_ocr", "unsupported", "metadata") and not report.count(status):
            continue  # rows that are usually empty stay out of the way
        lines.append(f"  {label:<15} {report.count(status):>8}")
    seconds = max(report.seconds, 1e-9)
    written = "chunks written" if report.step == "store" else "chunks"
    lines.append(f"  {written:<15} {report.chunks:>8}")
    if report.pages:
        lines.append(f"  {'pages':<15} {report.pages:>8}")
    files = sum(1 for o in report.outcomes if o.status not in ("pruned", "unsupported"))
    lines.append(f"  {'seconds':<15} {report.seconds:>8.1f}")
    lines.append(f"  {'files/s':<15} {files / seconds:>8.2f}")
    lines.append(f"  {'chunks/s':<15} {report.chunks / seconds:>8.1f}")
    lines.extend(f"  {note}" for note in report.notes + report.errors)
    # Listed after the walk, never through on_file: the summary is where they are said.
    lines.extend(f"  skipped: {o.error}" for o in report.outcomes if o.reason == OUTSIDE_FOLDER)
    lines.extend(f"  {o.file_name}: {note}" for o in report.outcomes for note in o.notes)
    return lines
