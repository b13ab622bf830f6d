from django.apps import AppConfig


class DomainsConfig(AppConfig):
    name = "domains"
    verbose_name = "Domains and stores"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
