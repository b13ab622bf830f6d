import time

from django.core.management import call_command
from django.core.management.base import BaseCommand

# What `make run` does before serving, in this order.
STEPS = (
    ("prepare_models", (), {}),
    ("migrate", (), {"interactive": False, "verbosity": 0}),
    ("demo", (), {}),
    ("collectstatic", (), {"interactive": False, "verbosity": 0}),
)


class Command(BaseCommand):
    help = (
        "Build the embedding model when missing, migrate, ingest the demo (unchanged files "
        "skipped) and collect the static files, in one process: `make run` runs it before "
        "serving. One process, because each `manage.py` start imports the whole site "
        "(seconds idle, a minute on a loaded machine); each step is a no-op when up to date."
    )

    def handle(self, *args, **options):
        for name, positional, keywords in STEPS:
            started = time.perf_counter()
            self.stdout.write(f"{name} ...")
            self.stdout.flush()
            call_command(name, *positional, stdout=self.stdout._out, stderr=self.stderr._out, **keywords)
            self.stdout.write(f"{name}: done in {time.perf_counter() - started:.0f} s")
