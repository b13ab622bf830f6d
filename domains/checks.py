"""System checks: misconfiguration fails loudly instead of giving silently empty results."""

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.db import connections
from django.db.utils import DatabaseError

E001_MSG = "The database server has no pgvector extension (version 0.6 or newer)."
E001_HINT = "Install pgvector >= 0.6 on the server, or unset DATABASE_URL for the embedded one."
E002_MSG = "Store {name!r} holds {dim}-dimension vectors; the embedding model gives {model_dim}."
E002_HINT = "Set KLEA_EMBEDDING_MODEL/KLEA_EMBEDDING_DIM back, or rebuild the store with --force."
W003_MSG = "Store {name!r} was embedded with {store_model!r}, the configured model is {model!r}."
W003_HINT = "Query vectors would not match the stored ones; rebuild the store with --force."


@register(Tags.database)
def check_pgvector(app_configs=None, databases=None, **kwargs):
    if not databases or "default" not in databases:
        return []
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute(
                "SELECT coalesce(e.extversion, a.default_version) FROM pg_available_extensions a "
                "LEFT JOIN pg_extension e ON e.extname = a.name WHERE a.name = 'vector'"
            )
            row = cursor.fetchone()
    except DatabaseError:
        return []  # Django's own checks report an unreachable server
    if row is None or _version(row[0]) < (0, 6):
        return [Error(E001_MSG, hint=E001_HINT, id="domains.E001")]
    return []


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


@register(Tags.database)
def check_store_embeddings(app_configs=None, databases=None, **kwargs):
    if not databases or "default" not in databases:
        return []
    from .models import Store

    problems = []
    try:
        stores = list(Store.objects.values("name", "embedding_model", "embedding_dim"))
    except DatabaseError:
        return []  # not migrated yet
    for store in stores:
        if store["embedding_dim"] != settings.KLEA_EMBEDDING_DIM:
            problems.append(
                Error(
                    E002_MSG.format(
                        name=store["name"], dim=store["embedding_dim"], model_dim=settings.KLEA_EMBEDDING_DIM
                    ),
                    hint=E002_HINT,
                    id="domains.E002",
                )
            )
        elif store["embedding_model"] != settings.KLEA_EMBEDDING_MODEL:
            problems.append(
                Warning(
                    W003_MSG.format(
                        name=store["name"],
                        store_model=store["embedding_model"],
                        model=settings.KLEA_EMBEDDING_MODEL,
                    ),
                    hint=W003_HINT,
                    id="domains.W003",
                )
            )
    return problems
