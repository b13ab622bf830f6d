"""The metadata map: per file a DEFAULT entry and entries keyed by heading chains.

Lookup for a chunk under headings A > B > C (docs/ingestion.md, "The metadata map"):
the full chain "A > B > C", then its suffixes "B > C", "C", then its ancestors "A > B",
"A"; the first non-empty entry is merged over DEFAULT (heading keys win); ``{}`` falls
through. Person-name
fields of the store's domain are expanded into ``_<field>_variants`` at store time.

File format of ``metadata-map.template.json``::

    {"<file>": {"DEFAULT": {"title": ..., "authors": [...], ...}, "<heading chain>": {}}}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from django.db import transaction
from django.db.models import F

from domains.models import Chunk, Document, FilterField, MetadataEntry
from domains.person_names import name_variants, variants_key
from domains.text import heading_chain, storable

from .defaults import year_of

DEFAULT = MetadataEntry.DEFAULT
TEMPLATE_NAME = "metadata-map.template.json"
EDITED_NAME = "metadata-map.json"


class MapError(ValueError):
    """A metadata map file or value that cannot be used; the message names the bad part."""


def lookup_keys(headings: Sequence[str]) -> list[str]:
    """Heading keys to try, in order: full chain, suffixes, ancestors."""
    parts = [h for h in headings if h]
    keys = [heading_chain(parts[i:]) for i in range(len(parts))]
    keys += [heading_chain(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
    return keys


def lookup(entries: dict[str, dict], headings: Sequence[str]) -> dict:
    """DEFAULT merged with the first non-empty heading entry (heading keys win)."""
    merged = dict(entries.get(DEFAULT) or {})
    for key in lookup_keys(headings):
        values = entries.get(key)
        if values:
            merged.update(values)
            break
    return merged


# Kept on the document's DEFAULT entry only: a library's abstract would otherwise ride
# along with every chunk (and into the reference material the answer model reads).
DOCUMENT_ONLY = ("abstract",)


def chunk_metadata(entries: dict[str, dict], headings: Sequence[str], person_fields: Iterable[str]) -> dict:
    """What a chunk stores: :func:`lookup` without :data:`DOCUMENT_ONLY` keys, plus
    ``_<field>_variants`` of person names."""
    metadata = {k: v for k, v in lookup(entries, headings).items() if k not in DOCUMENT_ONLY}
    for field in person_fields:
        value = metadata.get(field)
        if value:
            metadata[variants_key(field)] = name_variants(value if isinstance(value, (list, str)) else str(value))
    return metadata


def person_fields(store) -> list[str]:
    """Names of the store's domain filter fields declared ``person_name``."""
    return list(FilterField.objects.filter(domain_id=store.domain_id, person_name=True).values_list("name", flat=True))


def template_for(default: dict, chains: Iterable[Sequence[str]]) -> dict[str, dict]:
    """A file's fresh map: DEFAULT plus an empty entry per distinct heading chain."""
    entries: dict[str, dict] = {DEFAULT: dict(default)}
    for headings in chains:
        key = heading_chain(headings)
        if key and key not in entries:
            entries[key] = {}
    return entries


def validate(data) -> dict[str, dict[str, dict]]:
    """Check a template's shape: {file: {heading key: {field: value}}} with a DEFAULT.

    :raises MapError: naming the first bad file or key.
    """
    if not isinstance(data, dict):
        raise MapError("the map must be a JSON object keyed by file name")
    for file_name, entries in data.items():
        if not isinstance(entries, dict):
            raise MapError(f"{file_name}: expected an object of heading entries")
        if DEFAULT not in entries:
            raise MapError(f"{file_name}: no DEFAULT entry")
        for key, values in entries.items():
            if not isinstance(values, dict):
                raise MapError(f"{file_name} [{key}]: expected an object of fields, got {type(values).__name__}")
    return data


def read_template(path: Path) -> dict[str, dict[str, dict]]:
    """Load and :func:`validate` a map file. :raises MapError: unreadable or bad JSON."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise MapError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise MapError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return validate(data)


def document_entries(document: Document) -> dict[str, dict]:
    return dict(document.metadata_entries.values_list("heading_key", "values"))


@transaction.atomic
def replace_entries(document: Document, entries: dict[str, dict]) -> None:
    """Make the document's MetadataEntry rows exactly ``entries``; DEFAULT mirrors
    into ``Document.metadata``. Strings are made storable (:func:`domains.text.storable`:
    a library or map file may hold a NUL as well as a PDF)."""
    entries = storable(entries)
    document.metadata_entries.exclude(heading_key__in=list(entries)).delete()
    existing = {e.heading_key: e for e in document.metadata_entries.all()}
    for key, values in entries.items():
        entry = existing.get(key)
        if entry is None:
            MetadataEntry.objects.create(document=document, heading_key=key, values=values)
        elif entry.values != values:
            entry.values = values
            entry.save(update_fields=["values"])
    _set_metadata(document, entries.get(DEFAULT, {}))


def _set_metadata(document: Document, metadata: dict) -> None:
    """Store the document's DEFAULT entry as ``Document.metadata``; when its title changes,
    the chunks without headings are re-tokenised (an update of their text, which the
    search-vector trigger follows): they are searched by the title (domains/bm25_sql.py,
    ``SEARCH_SOURCE``)."""
    retitled = (document.metadata or {}).get("title") != metadata.get("title")
    document.metadata = metadata
    document.save(update_fields=["metadata", "updated_at"])
    if retitled:
        document.chunks.filter(headings=[]).update(text=F("text"))


@transaction.atomic
def reapply(document: Document) -> int:
    """Recompute every chunk's metadata and year from the document's map rows, without
    re-embedding. :returns: the number of chunks whose metadata changed."""
    entries = document_entries(document)
    fields = person_fields(document.store)
    _set_metadata(document, entries.get(DEFAULT, {}))
    changed = []
    for chunk in document.chunks.only("id", "headings", "metadata", "year"):
        metadata = chunk_metadata(entries, chunk.headings, fields)
        year = year_of(metadata)
        if metadata != chunk.metadata or year != chunk.year:
            chunk.metadata, chunk.year = metadata, year
            changed.append(chunk)
    Chunk.objects.bulk_update(changed, ["metadata", "year"], batch_size=500)
    return len(changed)


def reapply_edited(sender, document: Document, **kwargs) -> int:
    """Receiver of :data:`domains.signals.metadata_map_edited`: :func:`reapply`."""
    return reapply(document)
