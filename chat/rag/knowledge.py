"""Knowledge: a handle on one store (or a whole domain) for adding files and searching.

Usage::

    knowledge = Knowledge(store="papers", domain="papers", create=True)
    report = knowledge.add(["~/papers/hh1952.pdf", "~/papers/notes/"])
    hits = knowledge.search("sodium conductance", top_k=3)
    hits[0].filename, hits[0].score, hits.retrieval_failed

``add`` runs the ingestion pipeline per file (convert, chunk, metadata, embed, index:
:func:`ingestion.runs.ingest.ingest`), so a file that changed replaces its chunks and an
unchanged one is skipped. Unlike ``manage.py stores build DIR`` it never prunes: the
store's other documents stay, whatever folder they came from. A document is keyed by
its file name in the store (relative to the folder given, or the bare name of a file
given alone): adding another file under the same name replaces it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from pathlib import Path

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection, transaction

from domains.models import Document, Domain, Store
from domains.retrieval import RetrievedChunk, retrieve
from domains.text import check_refused

from .config import RetrievalStrategy, check_positive
from .results import SearchResultItem, SearchResults
from .strategies import plan

# Knowledge.search returns top_k whatever their length: the context budget is the
# caller's (RAG's max_context_tokens), not the chat pipeline's KLEA_MAX_REFS_SIZE.
NO_BUDGET = sys.maxsize


class Knowledge:
    """A store (``store=``) or all stores of a domain (``domain=`` alone).

    :param store: the store name (``--collection``).
    :param domain: the store's domain; with ``store`` it is checked (and used when the
        store is created); alone, searches span all the domain's stores.
    :param create: ``add`` may create the store, and the domain (named after the store
        unless ``domain`` is given, described by ``description``, by default
        "Documents of the store <store>.").
    :raises ValueError: neither ``store`` nor ``domain`` given.
    """

    def __init__(self, store: str | None = None, *, domain: str | None = None, create: bool = False,
                 description: str = ""):
        if not store and not domain:
            raise ValueError("Knowledge needs a store name, a domain name, or both")
        self.store = store or None
        self.domain = domain or None
        self.create = create
        self.description = description

    def __repr__(self) -> str:
        return f"Knowledge(store={self.store!r}, domain={self.domain!r})"

    # -- adding ----------------------------------------------------------------------

    def add(self, paths: str | Path | Iterable[str | Path], *, max_tokens: int | None = None, ocr: str = "auto",
            force: bool = False, library: str | Path | None = None):
        """Ingest files and folders (recursively) into the store, through
        :func:`ingestion.runs.ingest.ingest` (``mirror=False``: nothing is pruned).

        :param paths: one path or several; ``~`` is expanded.
        :param max_tokens: chunk size bound in tokens of the embedding model (default
            KLEA_CHUNK_MAX_TOKENS, 450).
        :param ocr: ``auto`` | ``on`` | ``off``.
        :param force: re-convert and re-embed unchanged files too.
        :param library: a BibTeX or CSL-JSON export of a reference manager whose records
            fill the metadata of the files they match (docs/bibliography.md,
            "Reference-manager libraries"); libraries in the folders are read anyway.
        :returns: :class:`ingestion.outcomes.StepReport` with one outcome per file (stored,
            unchanged, failed, needs_ocr, skipped, unsupported) and ``job_id`` (an
            IngestionJob, shown in the admin).
        :raises TypeError: ``paths`` (or one of them) not a str or Path.
        :raises IngestError: no paths, an empty path, a missing path, a folder without supported files, a missing
            store or domain without ``create``, a store of another domain.
        :raises ValueError: a Knowledge without a store; bad ``ocr`` or ``max_tokens``; a
            ``library`` that is missing or does not parse (``LibraryError``, naming the line).
        """
        from ingestion.metadata.layers import check_library
        from ingestion.runs.ingest import ingest

        if self.store is None:
            raise ValueError(f"Knowledge(domain={self.domain!r}) has no store to add to; name one with store=...")
        existing = Store.objects.select_related("domain").filter(name=self.store).first()
        domain_name = self.domain or (existing.domain.name if existing else self.store)
        new_domain = (self.description or f"Documents of the store {self.store}.") if self.create else None
        options = {"ocr": ocr, "force": force} | ({"max_tokens": max_tokens} if max_tokens else {})
        if library is not None:
            options["library"] = str(check_library(library))
        return ingest(paths, self.store, domain_name, create=self.create, new_domain=new_domain, **options)

    # -- searching -------------------------------------------------------------------

    def _scope(self, modes: tuple[str, ...]) -> tuple[Domain | None, list[str] | None, str]:
        """(domain, store restriction, error): an error means nothing can be searched."""
        if self.store is not None:
            store = Store.objects.select_related("domain").filter(name=self.store).first()
            if store is None:
                return None, None, f"store '{self.store}' does not exist (deleted, or its domain was)"
            if self.domain is not None and store.domain.name != self.domain:
                return None, None, f"store '{self.store}' belongs to domain '{store.domain.name}', not '{self.domain}'"
            if "bm25" not in modes and not store.uses_vector:
                raise ValueError(
                    f"store '{self.store}' has mode '{store.mode}' (no vectors): the basic and fusion strategies "
                    "search dense vectors; use RetrievalStrategy.HYBRID"
                )
            domain, stores = store.domain, [store.name]
        else:
            domain = Domain.objects.filter(name=self.domain).first()
            if domain is None:
                return None, None, f"domain '{self.domain}' does not exist"
            stores = None
        if not domain.active:
            return None, None, f"domain '{domain.name}' is inactive"
        return domain, stores, ""

    def search(self, query: str, top_k: int = 5, filters: dict | None = None,
               strategy: RetrievalStrategy | str = RetrievalStrategy.BASIC, **_ignored) -> SearchResults:
        """Search the store (or the domain's stores) through :func:`domains.retrieval.retrieve`.

        :param query: the question (FUSION derives its rephrasings from it).
        :param top_k: items returned at most (no character budget is applied).
        :param filters: the filter DSL (docs/retrieval.md), on the domain's declared fields.
        :param strategy: BASIC, FUSION or HYBRID (:mod:`chat.rag.strategies`).
        :returns: SearchResults of SearchResultItem, best first; ``retrieval_failed``
            and ``error`` when the store, its domain or the database could not be
            searched (never raised), else a genuine (possibly empty) match.
        :raises ValueError: ``top_k`` < 1, a malformed filter, an unknown strategy, a
            dense strategy on a BM25-only store, a NUL character or a lone surrogate in
            ``query`` (refused as the HTTP API refuses them, never stripped).
        """
        check_positive("top_k", top_k)
        check_refused("query", query)
        steps = plan(strategy, query, top_k)
        # A savepoint inside a caller's transaction: a failed statement must not abort it.
        guard = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
        try:
            with guard:
                domain, stores, error = self._scope(steps.modes)
                if error:
                    return SearchResults(retrieval_failed=True, error=error, queries=steps.queries)
                result = retrieve(
                    steps.queries, [domain], k=top_k, filters=filters, max_chars=NO_BUDGET, stores=stores,
                    modes=steps.modes, fusion="rrf", depth=steps.depth,
                )
                if result.retrieval_failed and result.error.startswith("database:"):
                    # The engine caught a database error outside its per-list savepoints:
                    # roll ours back so that the caller's transaction stays usable.
                    if connection.in_atomic_block:
                        transaction.set_rollback(True)
                    return SearchResults(retrieval_failed=True, error=result.error, queries=steps.queries)
                items = _items(result.results) if result.results else []
        except DatabaseError as exc:
            return SearchResults(retrieval_failed=True, error=f"database: {exc}".strip(), queries=steps.queries)
        return SearchResults(
            items[:top_k], retrieval_failed=result.retrieval_failed, error=result.error,
            queries=steps.queries, keywords=result.keywords,
        )

    async def asearch(self, query: str, **kwargs) -> SearchResults:
        """:meth:`search` from async code (the ORM runs in the sync thread)."""
        return await sync_to_async(self.search)(query, **kwargs)


# Provenance keys a result's metadata carries (the line boxes stay with the source view).
PROVENANCE_KEYS = ("pages", "lines", "offset", "anchor")


def _items(chunks: list[RetrievedChunk]) -> list[SearchResultItem]:
    """Result items with their documents' source paths (one query)."""
    paths = dict(Document.objects.filter(id__in={c.document_id for c in chunks}).values_list("id", "source_path"))
    items = []
    for chunk in chunks:
        source = paths.get(chunk.document_id) or chunk.file_name
        metadata = {k: v for k, v in chunk.metadata.items() if not k.startswith("_")}
        metadata.update(
            source=source, filename=chunk.file_name, doc_id=str(chunk.document_id), chunk_id=str(chunk.chunk_id),
            store=chunk.store, domain=chunk.domain, headings=list(chunk.headings),
            source_scores=dict(chunk.source_scores),
        )
        # Where the chunk is: pages of a PDF; source lines, character offset, anchor of a text
        metadata.update({k: v for k, v in chunk.provenance.items() if k in PROVENANCE_KEYS})
        items.append(
            SearchResultItem(id=str(chunk.chunk_id), text=chunk.text, score=chunk.score,
                             metadata=metadata, source=source, filename=chunk.file_name)
        )
    return items
