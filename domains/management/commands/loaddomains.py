import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from domains.config_io import DomainConfigError, load_domain_config


class Command(BaseCommand):
    help = (
        "Create or update domains, filter fields and stores from a JSON file in Klea's shape "
        '({"domains": {"<name>": {"description", "vector_stores", "bm25_stores", '
        '"filter_fields"}}}). Idempotent; all or nothing.'
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the JSON file ('-' reads standard input).")

    def handle(self, *args, file, **options):
        if file == "-":
            import sys

            raw = sys.stdin.read()
        else:
            path = Path(file)
            if not path.is_file():
                raise CommandError(f"{file}: no such file")
            raw = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{file}: not valid JSON ({exc})") from None
        try:
            summary = load_domain_config(data)
        except DomainConfigError as exc:
            raise CommandError(f"{file}: {exc}") from None
        for name in summary.created:
            self.stdout.write(f"created domain {name}")
        for name in summary.updated:
            self.stdout.write(f"updated domain {name}")
        for note in summary.notes:
            self.stdout.write(f"note: {note}")
        self.stdout.write(
            self.style.SUCCESS(
                f"{len(summary.created) + len(summary.updated)} domains, {len(summary.stores)} stores"
            )
        )
