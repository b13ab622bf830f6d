"""``stores store-lint NAME [--samples 3]``: what a store holds and what looks wrong.

Totals (chunks, files, chunks per file min/max/mean, characters); near-empty chunks
(< 20 characters); chunks missing title, year or doi, one line per file and fields (year and doi only where
expected: papers, cited works, fields the domain filters on, see
:func:`ingestion.metadata.map_lint.missing_fields`; file name comes from the Document); values of the wrong type; at most 20 items per finding; ``samples``
evenly spaced windows of 3 consecutive chunks, text cut to 200 characters.
"""

from __future__ import annotations

from django.db.models import Count, Max, Min, Sum
from django.db.models.functions import Length

from domains.models import Chunk, Document, Store
from ingestion.metadata.map_lint import LintReport, missing_fields
from ingestion.outcomes import IngestError

NEAR_EMPTY = 20
WINDOW = 3
SAMPLE_CHARS = 200
REQUIRED = ("title", "year", "doi")


def _type_problem(key: str, value) -> str:
    if key == "year" and not (isinstance(value, int) and not isinstance(value, bool)):
        return f"year is {type(value).__name__}, expected int"
    if key in ("title", "doi", "journal") and not isinstance(value, str):
        return f"{key} is {type(value).__name__}, expected str"
    if key in ("authors", "keywords") and not (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
        return f"{key} is not a list of strings"
    if key.startswith("url") and not isinstance(value, str):
        return f"{key} is {type(value).__name__}, expected str"
    return ""


def store_lint(store_name: str, samples: int = 0) -> LintReport:
    """Lint a store. :raises IngestError: no such store; ``samples`` negative."""
    if samples < 0:
        raise IngestError(f"--samples must be 0 or more, got {samples}")
    store = Store.objects.filter(name=store_name).first()
    if store is None:
        raise IngestError(f"store '{store_name}' does not exist")
    report = LintReport(f"store-lint {store.name} (domain {store.domain.name}, mode {store.mode})")
    chunks = Chunk.objects.filter(store=store)
    per_file = (
        Document.objects.filter(store=store, status=Document.Status.STORED)
        .annotate(n=Count("chunks"))
        .aggregate(files=Count("id"), low=Min("n"), high=Max("n"))
    )
    totals = chunks.aggregate(n=Count("id"), characters=Sum(Length("text")))
    n, files = totals["n"] or 0, per_file["files"] or 0
    mean = n / files if files else 0.0
    report.totals += [
        f"chunks {n}, files {files}, characters {totals['characters'] or 0}",
        f"chunks per file: min {per_file['low'] or 0}, max {per_file['high'] or 0}, mean {mean:.1f}",
    ]
    problems = Document.objects.filter(store=store).exclude(status=Document.Status.STORED)
    for document in problems.order_by("file_name"):
        report.add("documents not stored", f"{document.file_name}: {document.status} {document.error}".strip())
    domain_fields = frozenset(store.domain.filter_fields.values_list("name", flat=True))
    rows = chunks.select_related("document").only("id", "ordinal", "text", "metadata", "document__file_name")
    # Missing metadata is a file's (its DEFAULT entry), so one line per file and set of
    # missing fields, with how many of its chunks lack them, not one line per chunk.
    missing_in: dict[tuple[str, str], int] = {}
    chunks_in: dict[str, int] = {}
    for chunk in rows.order_by("document__file_name", "ordinal").iterator(chunk_size=2000):
        file_name = chunk.document.file_name
        where = f"{file_name} #{chunk.ordinal}"
        chunks_in[file_name] = chunks_in.get(file_name, 0) + 1
        if len(chunk.text.strip()) < NEAR_EMPTY:
            report.add("near-empty chunks", f"{where}: {chunk.text.strip()!r}")
        missing = missing_fields(file_name, chunk.metadata, REQUIRED, domain_fields)
        if missing:
            key = (file_name, ", ".join(missing))
            missing_in[key] = missing_in.get(key, 0) + 1
        for key, value in chunk.metadata.items():
            problem = "" if key.startswith("_") or value in (None, "") else _type_problem(key, value)
            if problem:
                report.add("bad types", f"{where}: {problem}")
    for (file_name, fields), count in missing_in.items():
        of = chunks_in[file_name]
        report.add("chunks missing metadata", f"{file_name}: {fields} ({count} of {of} chunk{'s' if of > 1 else ''})")
    if samples and n:
        ordered = list(chunks.order_by("document__file_name", "ordinal").values_list("id", flat=True))
        starts = sorted({int(i * max(len(ordered) - WINDOW, 0) / max(samples - 1, 1)) for i in range(samples)})
        for number, start in enumerate(starts, start=1):
            ids = ordered[start : start + WINDOW]
            window = Chunk.objects.filter(id__in=ids).select_related("document").in_bulk()
            report.samples.append(f"window {number}:")
            for chunk_id in ids:
                chunk = window[chunk_id]
                text = " ".join(chunk.text.split())[:SAMPLE_CHARS]
                chain = " > ".join(chunk.headings)
                report.samples.append(f"  {chunk.document.file_name} #{chunk.ordinal} [{chain}] {text}")
    return report
