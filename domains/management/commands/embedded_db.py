import os

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from domains.embedded_postgres import stop_embedded_postgres


class Command(BaseCommand):
    help = "Manage the embedded PostgreSQL (used when DATABASE_URL is unset): status or stop."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["status", "stop"])

    def handle(self, *args, action, **options):
        if os.environ.get("DATABASE_URL"):
            raise CommandError("DATABASE_URL is set: the embedded server is not in use")
        pgdata = settings.VAR_DIR / "pgdata"
        if action == "stop":
            stopped = stop_embedded_postgres(pgdata)
            self.stdout.write("stopped" if stopped else "not running")
        else:
            self.stdout.write(f"running, data in {pgdata}, socket in {settings.DATABASES['default']['HOST']}")
