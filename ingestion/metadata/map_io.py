"""Export and import of the metadata map as ``metadata-map.template.json``.

A folder's map is its StagedFiles' maps (before ``store``); a store's map is its
Documents' MetadataEntry rows. Importing into a store re-applies the map to the
existing chunks (metadata and year only; no re-embedding).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from domains.models import Document, Store
from ingestion.models import StagedFile
from ingestion.outcomes import IngestError
from ingestion.sources import resolve_directory

from .map import document_entries, read_template, reapply, replace_entries


@dataclass
class ImportResult:
    updated: int = 0
    chunks: int = 0
    unknown: list[str] = field(default_factory=list)


def _store(store_name: str) -> Store:
    store = Store.objects.filter(name=store_name).first()
    if store is None:
        raise IngestError(f"store '{store_name}' does not exist")
    return store


def export_map(directory: Path | str | None = None, store_name: str | None = None) -> dict[str, dict]:
    """The map of a chunked folder or of a store, in the template format (files sorted).

    :raises IngestError: neither or both targets given, unknown folder or store.
    """
    if (directory is None) == (store_name is None):
        raise IngestError("give either a folder or a store")
    if directory is not None:
        rows = StagedFile.objects.filter(directory=str(resolve_directory(directory))).exclude(metadata_map={})
        return {row.file_name: row.metadata_map for row in rows.order_by("file_name")}
    documents = _store(store_name).documents.order_by("file_name").prefetch_related("metadata_entries")
    return {d.file_name: {e.heading_key: e.values for e in d.metadata_entries.all()} for d in documents}


def import_map(path: Path, directory: Path | str | None = None, store_name: str | None = None) -> ImportResult:
    """Replace the maps of the files named in ``path`` (files it does not name keep theirs).

    :returns: ImportResult (files changed, chunks whose metadata changed, unknown keys).
    :raises MapError: a malformed file. :raises IngestError: bad target.
    """
    if (directory is None) == (store_name is None):
        raise IngestError("give either a folder or a store")
    data = read_template(path)
    result = ImportResult()
    with transaction.atomic():
        if directory is not None:
            rows = {r.file_name: r for r in StagedFile.objects.filter(directory=str(resolve_directory(directory)))}
            for file_name, entries in data.items():
                row = rows.get(file_name)
                if row is None:
                    result.unknown.append(file_name)
                elif row.metadata_map != entries:
                    row.metadata_map = entries
                    row.save(update_fields=["metadata_map", "updated_at"])
                    result.updated += 1
            return result
        documents = {d.file_name: d for d in Document.objects.filter(store=_store(store_name))}
        for file_name, entries in data.items():
            document = documents.get(file_name)
            if document is None:
                result.unknown.append(file_name)
            elif document_entries(document) != entries:
                replace_entries(document, entries)
                result.updated += 1
                result.chunks += reapply(document)
    return result
