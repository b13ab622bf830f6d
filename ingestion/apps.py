from django.apps import AppConfig


class IngestionConfig(AppConfig):
    name = "ingestion"
    verbose_name = "Ingestion"

    def ready(self):
        from domains.signals import metadata_map_edited

        from . import checks  # noqa: F401  (registers the system checks)
        from .metadata.map import reapply_edited

        # An edit of a document's metadata map in the admin re-applies it to the chunks.
        metadata_map_edited.connect(reapply_edited, dispatch_uid="ingestion.reapply_edited")
