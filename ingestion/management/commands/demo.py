from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from domains.models import Domain
from ingestion.outcomes import IngestError
from ingestion.runs.ingest import ingest

DEMO_DOMAIN = "klea-docs"
DEMO_STORE = "klea-docs"
DEMO_DESCRIPTION = (
    "The documentation of this Klea RAG server: installing and running it, configuration "
    "settings, domains, stores and filter fields, ingesting documents, asking questions, "
    "the HTTP and Python APIs, retrieval (BM25, vectors, RRF) and deployment."
)
# Offered by the empty chat (Domain.examples); each is answered from docs/.
DEMO_EXAMPLES = (
    "How do I point Klea at my own PostgreSQL?\n"
    "How do I stop the embedded database?\n"
    "How do I create an API token?"
)


class Command(BaseCommand):
    help = (
        f"Create the demo domain '{DEMO_DOMAIN}' and ingest the project's own docs/ into it "
        "(incremental: unchanged files are skipped)."
    )

    def handle(self, *args, **options):
        domain, created = Domain.objects.get_or_create(
            name=DEMO_DOMAIN, defaults={"description": DEMO_DESCRIPTION, "examples": DEMO_EXAMPLES}
        )
        if created:
            self.stdout.write(f"created demo domain {DEMO_DOMAIN}")
        elif not domain.examples:  # a demo domain from before examples existed; an admin's edit stays
            domain.examples = DEMO_EXAMPLES
            domain.save(update_fields=["examples"])
        try:
            report = ingest(settings.BASE_DIR / "docs", DEMO_STORE, domain.name, mirror=True)
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"demo store {DEMO_STORE}: {report.count('stored')} stored, "
            f"{report.count('unchanged')} unchanged, {report.chunks} chunks written"
        )
