"""The store a run writes into: names checked by the domains app's rules
(:mod:`domains.names`), the store (and, for the Python API, its domain) created on
first use, and refused when it belongs to another domain or has another mode."""

from __future__ import annotations

import logging

from django.db import transaction

from domains.models import Domain, Store
from domains.names import domain_name_problem, store_name_problem
from ingestion.outcomes import IngestError

logger = logging.getLogger("klea.ingestion")


def check_names(store_name, domain_name) -> None:
    """Refuse names the models would refuse, before anything is created.

    :raises IngestError: one line with the rule the name breaks.
    """
    problem = store_name_problem(store_name)
    if problem:
        raise IngestError(f"invalid store name {store_name!r}: {problem}")
    problem = domain_name_problem(domain_name)
    if problem:
        raise IngestError(f"invalid domain name {domain_name!r}: {problem}")


def resolve_store(
    store_name: str, domain_name: str, *, bm25_only: bool = False, create: bool = True,
    new_domain: str | None = None,
) -> Store:
    """The store ``store_name`` of domain ``domain_name`` (created when absent).

    :param bm25_only: a new store gets mode ``bm25`` (no embeddings); an existing store
        must already have it.
    :param create: create the store when it does not exist.
    :param new_domain: with ``create``, a new store's missing domain is created too,
        described by this text; None: the domain must exist.
    :raises IngestError: unknown domain, store of another domain, missing store
        (``create=False``), a mode that contradicts ``bm25_only``, an invalid name.
    """
    check_names(store_name, domain_name)
    with transaction.atomic():  # never a new domain without its store
        store = Store.objects.filter(name=store_name).select_related("domain").first()
        domain = Domain.objects.filter(name=domain_name).first()
        if domain is None and store is None and create and new_domain is not None:
            domain = Domain(name=domain_name, description=new_domain)
            domain.full_clean()
            domain.save()
        if domain is None:
            raise IngestError(
                f"domain '{domain_name}' does not exist; create it in the admin or with `manage.py loaddomains`"
            )
        if store is None:
            if not create:
                raise IngestError(f"store '{store_name}' does not exist")
            store = Store(name=store_name, domain=domain, mode=Store.Mode.BM25 if bm25_only else Store.Mode.BOTH)
            store.full_clean(exclude=["domain"])
            store.save()
            logger.info("created store %s (%s) in domain %s", store_name, store.mode, domain_name)
        elif store.domain_id != domain.id:
            raise IngestError(f"store '{store_name}' belongs to domain '{store.domain.name}', not '{domain_name}'")
        elif bm25_only and store.mode != Store.Mode.BM25:
            raise IngestError(f"store '{store_name}' has mode '{store.mode}'; --bm25-store needs a bm25 store")
    return store
