"""``stores store DIR --collection NAME``: staged chunks -> Documents, map rows, Chunks.

Each file is written in one transaction under a row lock on its Document: old chunks
deleted, map rows set, new chunks inserted with their metadata (map lookup + person
name variants) and embeddings. A crash or a second concurrent writer therefore leaves
exactly one copy of every chunk. Unchanged files are skipped; documents whose source
file left DIR are pruned (only documents that came from DIR).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from domains import embeddings
from domains.models import Chunk, Document, Store
from domains.text import indexed_text
from ingestion.metadata.defaults import year_of
from ingestion.metadata.layers import STORED, apply_sources, merge
from ingestion.metadata.map import chunk_metadata, document_entries, person_fields, reapply, replace_entries
from ingestion.models import StagedFile
from ingestion.options import IngestOptions
from ingestion.outcomes import FileOutcome, StepReport, failed_alone
from ingestion.sources import relative_name, require_files, resolve_directory, sha256, unreadable

from .target import resolve_store

EMBED_GROUP = 256  # chunks embedded per call across files (length-sorted inside)
NOT_CHUNKED = "{name}: not chunked, or changed since `stores chunk`; run `manage.py stores chunk` first"

# StagedFile.sources key: per store, the staged options of the chunks stored there.
STORED_CHUNKING = "stored_chunking"


@dataclass
class _Pending:
    staged: StagedFile
    path: Path


def _locked_document(store: Store, file_name: str) -> Document:
    Document.objects.get_or_create(store=store, file_name=file_name)
    return Document.objects.select_for_update().get(store=store, file_name=file_name)


def _record_problem(store: Store, staged: StagedFile, path: Path) -> FileOutcome:
    """A staged file that failed or needs OCR: its Document says so, with no chunks (an
    older version's chunks are removed). A file with no text (skipped) has no Document:
    an empty "stored" one would read as a success, and the chunk step's StagedFile
    already keeps the hash that makes re-runs incremental."""
    outcome = FileOutcome(staged.file_name, str(staged.status), error=staged.error, reason=staged.reason)
    if staged.status == StagedFile.Status.SKIPPED:
        Document.objects.filter(store=store, file_name=staged.file_name).delete()
        return outcome
    status = Document.Status.NEEDS_OCR if staged.status == StagedFile.Status.NEEDS_OCR else Document.Status.FAILED
    with transaction.atomic():
        document = _locked_document(store, staged.file_name)
        document.chunks.all().delete()
        document.status, document.error = status, staged.error
        document.content_hash, document.source_path = staged.content_hash, str(path)
        document.save()
    return outcome


def plan(store: Store, staged: StagedFile | None, path: Path, file_name: str, force: bool) -> FileOutcome | _Pending:
    """What storing this file needs: an outcome already (unchanged, problem, not
    chunked, vanished) or a pending write."""
    try:
        content_hash = sha256(path)
    except OSError as exc:
        return unreadable(file_name, exc)
    if staged is None or staged.content_hash != content_hash:
        message = NOT_CHUNKED.format(name=file_name)
        return FileOutcome(file_name, "failed", error=message, reason="not_chunked")
    if staged.status != StagedFile.Status.CHUNKED:
        return _record_problem(store, staged, path)
    document = Document.objects.filter(store=store, file_name=file_name).first()
    if (
        not force
        and document is not None
        and document.status == Document.Status.STORED
        and document.content_hash == staged.content_hash
        and _same_chunking(staged, store, document)
    ):
        last = _stored_map(staged, store)
        if last == staged.metadata_map or (last is None and document.updated_at >= staged.updated_at):
            return FileOutcome(file_name, "unchanged", chunks=document.chunks.count(), pages=document.pages)
        return apply_map(store, staged)  # same content, changed map: no re-embedding
    return _Pending(staged, path)


MAX_NOTES = 8  # map changes listed per file


def _stored_map(staged: StagedFile, store: Store) -> dict | None:
    """The staged map as it was when last stored into ``store`` (None: not recorded)."""
    return ((staged.sources or {}).get(STORED) or {}).get(str(store.pk))


def _same_chunking(staged: StagedFile, store: Store, document: Document) -> bool:
    """Whether the document's stored chunks were made with the staged chunking options
    (budget, format): same content chunked otherwise since must be stored again. Without
    a record (stored before it was kept): unless staged again after the store."""
    stored = ((staged.sources or {}).get(STORED_CHUNKING) or {}).get(str(store.pk))
    if stored is None:
        return document.updated_at >= staged.updated_at
    return stored == staged.options


def _remember_stored(staged: StagedFile, store: Store) -> None:
    row = StagedFile.objects.select_for_update().get(pk=staged.pk)
    sources = dict(row.sources or {})
    sources[STORED] = {**(sources.get(STORED) or {}), str(store.pk): staged.metadata_map}
    sources[STORED_CHUNKING] = {**(sources.get(STORED_CHUNKING) or {}), str(store.pk): staged.options}
    row.sources = sources
    row.save(update_fields=["sources"])  # not updated_at: the staged map itself did not change


def _entries_to_store(document: Document, staged: StagedFile, store: Store) -> tuple[dict, list[str]]:
    """The document's new map: the staged fields that changed since the last store,
    written over the stored map (admin edits of other fields kept); notes name what
    was applied and each admin edit that a change replaced (docs/ingestion.md,
    "Where a file's map comes from")."""
    ours = document_entries(document)
    if not ours:
        return dict(staged.metadata_map), []
    last = _stored_map(staged, store)
    result = merge(ours, last if last is not None else ours, staged.metadata_map)
    notes = [f"map applied {change.line()}" for change in result.changes[:MAX_NOTES]]
    if len(result.changes) > MAX_NOTES:
        notes.append(f"map applied ... and {len(result.changes) - MAX_NOTES} more field(s)")
    notes += [f"conflict: {c.line().replace(': ', ': admin edit ', 1)} (the map changed since the last store; "
              f"the change wins)" for c in result.conflicts]
    return result.entries, notes


@transaction.atomic
def apply_map(store: Store, staged: StagedFile) -> FileOutcome:
    """A stored file whose map changed: the map rows are updated and re-applied to the
    chunks (metadata and year), nothing is re-embedded."""
    document = _locked_document(store, staged.file_name)
    entries, notes = _entries_to_store(document, staged, store)
    replace_entries(document, entries)
    changed = reapply(document)
    _remember_stored(staged, store)
    return FileOutcome(staged.file_name, "metadata", chunks=changed, pages=document.pages, notes=notes)


@transaction.atomic
def write(store: Store, pending: _Pending, vectors, fields: list[str]) -> FileOutcome:
    """Replace the document's chunks and map rows in one transaction."""
    staged = pending.staged
    document = _locked_document(store, staged.file_name)
    document.chunks.all().delete()
    entries, notes = _entries_to_store(document, staged, store)
    document.status, document.error = Document.Status.STORED, ""
    document.content_hash, document.source_path, document.pages = staged.content_hash, str(pending.path), staged.pages
    document.save()
    replace_entries(document, entries)
    rows = []
    for ordinal, chunk in enumerate(staged.chunks):
        metadata = chunk_metadata(entries, chunk["headings"], fields)
        rows.append(
            Chunk(
                store=store,
                document=document,
                ordinal=ordinal,
                text=chunk["text"],
                headings=chunk["headings"],
                metadata=metadata,
                year=year_of(metadata),
                token_count=chunk["tokens"],
                provenance=chunk.get("provenance") or {},
                embedding=None if vectors is None else vectors[ordinal],
            )
        )
    Chunk.objects.bulk_create(rows, batch_size=500)
    _remember_stored(staged, store)
    return FileOutcome(staged.file_name, "stored", chunks=len(rows), pages=staged.pages, notes=notes)


def reapply_maps(directory: Path | str, store: Store) -> StepReport:
    """Apply the folder's libraries and map file, then re-apply the changed maps of the
    store's documents from it (no conversion, no embedding): what an uploaded library
    needs. :returns: StepReport with one ``metadata`` outcome per document changed."""
    directory = resolve_directory(directory)
    report = StepReport("store", str(directory), store=store.name)
    apply_sources(directory, report, IngestOptions())
    stored = {d.file_name: d for d in Document.objects.filter(store=store, status=Document.Status.STORED)}
    for staged in StagedFile.objects.filter(directory=str(directory), status=StagedFile.Status.CHUNKED):
        document = stored.get(staged.file_name)
        if (document is not None and document.content_hash == staged.content_hash
                and _stored_map(staged, store) != staged.metadata_map):
            report.outcomes.append(apply_map(store, staged))
    return report


def _embed(store: Store, group: list[_Pending]):
    """Vectors per pending file (None for a BM25-only store), one model call per group."""
    if not store.uses_vector:
        return [None] * len(group)
    texts = [indexed_text(c["headings"], c["text"]) for p in group for c in p.staged.chunks]
    vectors = embeddings.embed_texts(texts)
    out, offset = [], 0
    for pending in group:
        n = len(pending.staged.chunks)
        out.append(vectors[offset : offset + n])
        offset += n
    return out


def store_file(store: Store, path: Path, directory: Path, options: IngestOptions) -> FileOutcome:
    """Store one staged file (the Celery task's unit of work); idempotent."""
    file_name = relative_name(path, directory)
    staged = StagedFile.objects.filter(directory=str(directory), file_name=file_name).first()
    step = plan(store, staged, path, file_name, options.force)
    if isinstance(step, FileOutcome):
        return step
    (vectors,) = _embed(store, [step])
    return write(store, step, vectors, person_fields(store))


def _groups(items: list[_Pending]) -> Iterator[list[_Pending]]:
    group, size = [], 0
    for item in items:
        group.append(item)
        size += len(item.staged.chunks)
        if size >= EMBED_GROUP:
            yield group
            group, size = [], 0
    if group:
        yield group


def prune_documents(store: Store, directory: Path, present: set[str]) -> list[str]:
    """Delete the store's documents that came from ``directory`` but are gone from it."""
    prefix = str(directory).rstrip("/") + "/"
    gone = [
        d
        for d in store.documents.exclude(file_name__in=present).only("id", "file_name", "source_path")
        if d.source_path.startswith(prefix)
    ]
    for document in gone:
        document.delete()
    return sorted(d.file_name for d in gone)


def store_directory(
    directory: Path | str,
    store_name: str,
    domain_name: str,
    *,
    on_start: Callable[[int], None] | None = None,
    on_file: Callable[[FileOutcome], None] | None = None,
    **options,
) -> StepReport:
    """Store every staged file of ``directory`` into a store of a domain.

    :param options: :class:`ingestion.options.IngestOptions` fields: ``bm25_only`` (a
        BM25-only store), ``force`` (rewrite and re-embed unchanged files too),
        ``library``. The folder's libraries and ``metadata-map.json`` are applied first.
    :returns: StepReport with outcomes stored / metadata (map re-applied, not
        re-embedded) / unchanged / failed / needs_ocr / skipped / pruned.
    :raises MapError: a malformed ``metadata-map.json``.
    :raises IngestError: see :func:`ingestion.store.target.resolve_store`; not a directory; no files.
    """
    started = time.monotonic()
    storing = IngestOptions(**options)
    directory = resolve_directory(directory)
    files = require_files(directory)
    store = resolve_store(store_name, domain_name, bm25_only=storing.bm25_only)
    report = StepReport("store", str(directory), store=store.name)
    apply_sources(directory, report, storing)  # a library or map file edited since `chunk`
    staged = {s.file_name: s for s in StagedFile.objects.filter(directory=str(directory))}
    fields = person_fields(store)
    if on_start:
        on_start(len(files))

    def done(outcome: FileOutcome) -> None:
        report.outcomes.append(outcome)
        if on_file:
            on_file(outcome)

    pending: list[_Pending] = []
    for path in files:
        file_name = relative_name(path, directory)
        try:
            step = plan(store, staged.get(file_name), path, file_name, storing.force)
        except Exception as exc:  # this file alone: the others are stored
            step = failed_alone(file_name, "stored", exc)
        if isinstance(step, FileOutcome):
            done(step)
            continue
        pending.append(step)
        if sum(len(p.staged.chunks) for p in pending) >= EMBED_GROUP:
            _flush(store, pending, fields, done)
            pending = []
    _flush(store, pending, fields, done)
    pruned = prune_documents(store, directory, {relative_name(p, directory) for p in files})
    report.outcomes.extend(FileOutcome(name, "pruned") for name in pruned)
    report.seconds = time.monotonic() - started
    return report


def _flush(store: Store, pending: list[_Pending], fields: list[str], done) -> None:
    for group in _groups(pending):
        for item, vectors in zip(group, _embed(store, group)):
            try:
                outcome = write(store, item, vectors, fields)
            except Exception as exc:  # this file alone: the others are stored
                outcome = failed_alone(item.staged.file_name, "stored", exc)
            done(outcome)
