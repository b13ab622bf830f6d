"""``manage.py stores <step> ...``: build and inspect stores (Klea's klea-stores-create)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ingestion.chunking import DEFAULT_MAX_TOKENS
from ingestion.indexing import IngestError, ingest_directory


class Command(BaseCommand):
    help = "Build and inspect stores. Steps: build (convert, chunk, embed, index a folder)."

    def add_arguments(self, parser):
        steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")
        build = steps.add_parser(
            "build",
            help="Convert, chunk, embed and index every supported file of DIR into a store.",
            description="Unchanged files are skipped, changed ones replaced, removed ones pruned.",
        )
        build.add_argument("directory", metavar="DIR", type=Path)
        build.add_argument("--collection", required=True, help="Store name (created if absent).")
        build.add_argument("--domain", required=True, help="Domain the store belongs to (must exist).")
        build.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, help="Chunk size budget.")
        build.add_argument("--force", action="store_true", help="Rebuild unchanged files too.")
        build.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args, step, **options):
        return getattr(self, f"handle_{step.replace('-', '_')}")(**options)

    def handle_build(self, directory, collection, domain, max_tokens, force, no_progress, **_):
        bar = None

        def on_start(total):
            nonlocal bar
            bar = tqdm(total=total, unit="file", disable=no_progress, file=self.stderr._out, dynamic_ncols=True)

        def on_file(outcome):
            bar.update(1)
            if outcome.status in ("failed", "skipped"):
                bar.write(f"{outcome.status}: {outcome.error}", file=self.stderr._out)

        try:
            report = ingest_directory(
                directory, collection, domain, max_tokens=max_tokens, force=force, on_file=on_file, on_start=on_start
            )
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        finally:
            if bar is not None:
                bar.close()
        rows = [
            ("stored", report.count("stored")),
            ("unchanged", report.count("unchanged")),
            ("skipped", report.count("skipped")),
            ("failed", report.count("failed")),
            ("pruned", report.count("pruned")),
            ("chunks written", report.chunks),
            ("seconds", f"{report.seconds:.1f}"),
        ]
        self.stdout.write(f"store {report.store} (job {report.job_id})")
        for label, value in rows:
            self.stdout.write(f"  {label:<15} {value:>8}")
        if report.count("failed"):
            # Non-zero exit so scripts notice; the other files were stored all the same.
            raise CommandError(f"{report.count('failed')} file(s) failed; the others were stored")
