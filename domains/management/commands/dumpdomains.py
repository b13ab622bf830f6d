import json

from django.core.management.base import BaseCommand

from domains.config_io import dump_domain_config


class Command(BaseCommand):
    help = "Print the domain configuration as JSON in the shape `loaddomains` reads."

    def add_arguments(self, parser):
        parser.add_argument("--indent", type=int, default=2)

    def handle(self, *args, indent, **options):
        self.stdout.write(json.dumps(dump_domain_config(), indent=indent, ensure_ascii=False))
