from django.apps import AppConfig


class IngestionConfig(AppConfig):
    name = "ingestion"
    verbose_name = "Ingestion"

    def ready(self):
        from . import checks  # noqa: F401  (registers the system checks)
