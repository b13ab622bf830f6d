"""``manage.py stores <step> ...``: build and inspect stores (Klea's klea-stores-create).

Exit codes: 0 on success; 1 (CommandError) when a file failed (after the summary), for
a fatal map-lint finding (after the whole report) and for bad input naming it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import fields
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ingestion.convert.precheck import precheck_directory
from ingestion.metadata.layers import check_library
from ingestion.metadata.map import TEMPLATE_NAME
from ingestion.metadata.map_io import export_map, import_map
from ingestion.metadata.map_lint import MapError, map_lint
from ingestion.models import IngestionJob
from ingestion.options import IngestOptions
from ingestion.outcomes import IngestError, StepReport
from ingestion.runs.ingest import ingest
from ingestion.runs.progress import Progress, summary_lines
from ingestion.runs.steps import enqueue, run_chunk, run_store
from ingestion.sources import list_source_files, resolve_directory, writable
from ingestion.store.lint import store_lint
from ingestion.store.target import check_names

STEPS = {
    "pre-check": "Which PDFs need OCR (a page with < 50 non-space characters is an image page).",
    "chunk": "Convert and chunk every file of DIR; apply its libraries (*.bib, CSL-JSON) and metadata-map.json; "
             "write the metadata-map template; print map-lint.",
    "map-lint": "Apply DIR's libraries and metadata-map.json, then check its metadata map; exit 1 when a source "
                "file has no entry or a library does not parse.",
    "store": "Apply the map (libraries and metadata-map.json changed since chunk included), embed and write the "
             "chunked files of DIR into a store (a changed map alone is re-applied, not re-embedded); print store-lint.",
    "store-lint": "Totals, near-empty chunks, missing or mistyped metadata, sample windows of a store.",
    "build": "chunk + store in one go.",
    "map-export": "Write the metadata map of DIR (staged) or of a store as metadata-map.template.json.",
    "map-import": "Read a metadata-map JSON file into DIR's staged map or a store's map (re-applied, no re-embedding).",
}


class Command(BaseCommand):
    help = "Build and inspect stores. Steps: " + ", ".join(STEPS) + "."

    def add_arguments(self, parser):
        steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")
        sub = {name: steps.add_parser(name, help=text, description=text) for name, text in STEPS.items()}
        for name in ("pre-check", "chunk", "map-lint", "store", "build"):
            sub[name].add_argument("directory", metavar="DIR", type=_path)
        sub["pre-check"].add_argument("--organise", action="store_true", help="Copy PDFs into DIR/ocr and DIR/no-ocr.")
        for name in ("chunk", "build"):
            sub[name].add_argument("--max-tokens", type=int, help="Chunk size budget (tokens; default KLEA_CHUNK_MAX_TOKENS).")
            ocr = sub[name].add_mutually_exclusive_group()
            ocr.add_argument("--ocr", dest="ocr", action="store_const", const="on", help="OCR every PDF.")
            ocr.add_argument("--no-ocr", dest="ocr", action="store_const", const="off", help="Never OCR.")
            sub[name].set_defaults(ocr="auto")
            sub[name].add_argument("--library", type=_text, metavar="FILE",
                                   help="A BibTeX (.bib) or CSL-JSON file of your reference manager: its records fill "
                                        "the metadata map of the files they match (remembered for DIR).")
        for name in ("store", "build"):
            sub[name].add_argument("--collection", required=True, help="Store name (created if absent).")
            sub[name].add_argument("--domain", required=True, help="Domain the store belongs to (must exist).")
            sub[name].add_argument("--bm25-store", dest="bm25_only", action="store_true",
                                   help="A BM25-only store (no embeddings).")
        for name in ("chunk", "store", "build"):
            sub[name].add_argument("--force", action="store_true", help="Redo unchanged files too.")
            sub[name].add_argument("--async", dest="run_async", action="store_true", help="Queue Celery tasks and return.")
            sub[name].add_argument("--no-progress", action="store_true", help="No progress bar.")
        sub["store-lint"].add_argument("name", metavar="NAME", help="Store name.")
        sub["store-lint"].add_argument("--samples", type=int, default=3, help="Sample windows of 3 chunks (0: none).")
        for name in ("map-export", "map-import"):
            target = sub[name].add_mutually_exclusive_group(required=True)
            target.add_argument("--dir", dest="directory", type=_path, help="A chunked folder (its staged map).")
            target.add_argument("--collection", help="A store (its documents' map rows).")
        sub["map-export"].add_argument("-o", "--output", default="-", type=_text,
                                       help="File to write; '-' = standard output.")
        sub["map-import"].add_argument("file", metavar="FILE", type=_path, help="A metadata-map JSON file.")

    def handle(self, *args, step, **options):
        try:
            return getattr(self, "handle_" + step.replace("-", "_"))(**options)
        except (IngestError, MapError, ValueError) as exc:
            raise CommandError(str(exc)) from None

    # --- steps --------------------------------------------------------------------

    def handle_pre_check(self, directory, organise, **_):
        rows = precheck_directory(directory, organise=organise)
        if not rows:
            # Not an error: pre-check is the first step for any folder, and text files never need OCR.
            files = list_source_files(resolve_directory(directory))
            others = sum(p.suffix.lower() != ".pdf" for p in files)
            self.stdout.write(f"no PDF files to check; {others} other supported file(s) (no OCR needed)")
            return
        self.stdout.write(f"{'verdict':<7} {'pages':>5} {'image':>5} {'chars':>8}  file")
        for row in rows:
            note = f"  ({row.note})" if row.note else ""
            self.stdout.write(f"{row.verdict:<7} {row.pages:>5} {row.image_pages:>5} {row.characters:>8}  {row.file_name}{note}")
        needing = sum(r.needs_ocr for r in rows)
        self.stdout.write(f"{len(rows)} PDFs: {needing} need OCR, {len(rows) - needing} do not")
        if organise:
            self.stdout.write(f"copied into {Path(directory) / 'ocr'} and {Path(directory) / 'no-ocr'}")

    def handle_chunk(self, directory, run_async, no_progress, **arguments):
        options = ingest_options(checked_library(arguments))
        if run_async:
            return self._queued(enqueue("chunk", directory, **options))
        progress = Progress(self.stderr._out, disable=no_progress, desc="chunk")
        try:
            report = run_chunk(directory, on_start=progress.on_start, on_file=progress.on_file,
                               on_page=progress.on_page, **options)
        finally:
            progress.close()
        self._summary(report, f"chunk {report.directory} (job {report.job_id})")
        self._write_template(Path(report.directory))
        lint = map_lint(report.directory)
        self.stdout.write("\n".join(lint.lines()))
        self._exit(report, fatal_lint=lint.fatal_findings() if lint.fatal else "")

    def handle_map_lint(self, directory, **_):
        report = map_lint(directory)
        self.stdout.write("\n".join(report.lines()))
        if report.fatal:
            raise CommandError(report.fatal_findings())

    def handle_store(self, directory, collection, domain, run_async, no_progress, **arguments):
        check_names(collection, domain)
        options = ingest_options(arguments)
        if run_async:
            return self._queued(enqueue("store", directory, store_name=collection, domain_name=domain, **options))
        progress = Progress(self.stderr._out, disable=no_progress, desc="store")
        try:
            report = run_store(directory, collection, domain, on_start=progress.on_start, on_file=progress.on_file,
                               **options)
        finally:
            progress.close()
        self._summary(report, f"store {report.store} (job {report.job_id})")
        self.stdout.write("\n".join(store_lint(report.store, samples=0).lines()))
        self._exit(report)

    def handle_store_lint(self, name, samples, **_):
        self.stdout.write("\n".join(store_lint(name, samples=samples).lines()))

    def handle_build(self, directory, collection, domain, run_async, no_progress, **arguments):
        check_names(collection, domain)
        options = ingest_options(checked_library(arguments))
        if run_async:
            report = ingest(directory, collection, domain, mirror=True, queue=True, **options)
            return self._queued(IngestionJob.objects.get(pk=report.job_id))
        chunking = Progress(self.stderr._out, disable=no_progress, desc="chunk")
        storing = Progress(self.stderr._out, disable=no_progress, desc="store")

        def on_chunked(outcome):
            chunking.on_file(outcome)

        def on_stored(outcome):
            if storing.bar is None:
                chunking.close()
                storing.on_start(chunking_total[0])
            storing.on_file(outcome)

        chunking_total = [0]

        def on_start(total):
            chunking_total[0] = total
            chunking.on_start(total)

        try:
            report = ingest(directory, collection, domain, mirror=True, on_start=on_start, on_chunked=on_chunked,
                            on_file=on_stored, on_page=chunking.on_page, **options)
        finally:
            chunking.close()
            storing.close()
        self._summary(report, f"store {report.store} (job {report.job_id})")
        # build = chunk + store, so both lints (docs/ingestion.md)
        lint = map_lint(report.directory)
        self.stdout.write("\n".join(lint.lines()))
        self.stdout.write("\n".join(store_lint(report.store, samples=0).lines()))
        self._exit(report, fatal_lint=lint.fatal_findings() if lint.fatal else "")

    def handle_map_export(self, directory, collection, output, **_):
        data = export_map(directory=directory, store_name=collection)
        text = _json(data)
        if output == "-":
            self.stdout.write(text)
        else:
            Path(output).write_text(text + "\n", encoding="utf-8")
            self.stdout.write(f"wrote {len(data)} file(s) to {output}")

    def handle_map_import(self, file, directory, collection, **_):
        result = import_map(file, directory=directory, store_name=collection)
        self.stdout.write(f"imported {file}: {result.updated} file(s) changed, {result.chunks} chunk(s) re-applied")
        if result.unknown:
            self.stderr.write(f"{len(result.unknown)} map key(s) match no file: {', '.join(result.unknown[:20])}")

    # --- helpers ------------------------------------------------------------------

    def _summary(self, report: StepReport, header: str) -> None:
        self.stdout.write("\n".join(summary_lines(report, header)))

    def _write_template(self, directory: Path) -> None:
        target = directory / TEMPLATE_NAME
        if not writable(directory):
            self.stdout.write(f"metadata map template not written ({directory} is read-only); "
                              f"use `stores map-export --dir {directory} -o FILE`")
            return
        try:
            target.write_text(_json(export_map(directory=directory)) + "\n", encoding="utf-8")
            self.stdout.write(f"metadata map template: {target}")
        except OSError as exc:
            self.stdout.write(f"metadata map template not written ({exc.strerror}); use `stores map-export --dir {directory}`")

    def _exit(self, report: StepReport, fatal_lint: str = "") -> None:
        failed = report.failed
        if failed:
            # Non-zero so scripts notice; the other files were processed all the same.
            done = "stored" if report.step == "store" else "chunked"
            raise CommandError(f"{len(failed)} file(s) failed; the others were {done}")
        if report.errors:
            raise CommandError("; ".join(report.errors))
        if fatal_lint:
            raise CommandError(fatal_lint)

    def _queued(self, job) -> None:
        self.stdout.write(
            f"queued {job.total} file(s) as job {job.pk} ({job.kind}); status: {job.status}, {job.done}/{job.total} done. "
            f"Follow it at /api/jobs/{job.pk} or in the admin (Ingestion jobs)."
        )


def ingest_options(arguments: dict) -> dict:
    """The :class:`ingestion.options.IngestOptions` fields among a step's arguments (an
    option's argument has the field's name as its ``dest``; None leaves the default)."""
    return {f.name: arguments[f.name] for f in fields(IngestOptions) if arguments.get(f.name) is not None}


def checked_library(arguments: dict) -> dict:
    """``--library FILE`` read once before any work (a file that does not parse stops
    the run, naming the line) and made absolute for the Celery tasks."""
    if arguments.get("library"):
        arguments["library"] = str(check_library(arguments["library"]))
    return arguments


def _text(value: str) -> str:
    # Path("") is the current directory: an empty argument must not ingest the cwd.
    if not value.strip():
        raise argparse.ArgumentTypeError("empty path; name it explicitly ('.' for the current directory)")
    return value


def _path(value: str) -> Path:
    return Path(_text(value))


def _json(data) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)

