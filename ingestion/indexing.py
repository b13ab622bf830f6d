"""Directory -> Documents + Chunks of one store: convert, chunk, embed, write.

Each file is written in its own transaction (its old chunks replaced), so a crash
leaves every file either fully old or fully new; re-running converges. Unchanged files
(same sha256) are skipped; files gone from the directory are pruned; one bad file is
recorded as ``failed`` with a one-line reason and never stops the others.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from domains import embeddings
from domains.models import Chunk, Document, Domain, MetadataEntry, Store
from domains.text import indexed_text

from .chunking import DEFAULT_MAX_TOKENS, ChunkDraft, chunk_document
from .convert import SUPPORTED_EXTENSIONS, ConversionError, convert_file
from .metadata import document_metadata, year_of
from .models import IngestionJob

logger = logging.getLogger("klea.ingestion")

# Conversion outcomes that are not failures: the file is fine but has nothing to index.
SKIP_REASONS = {"no_text"}
# Chunks embedded per model call across files (small files share a batch).
EMBED_GROUP = 64


class IngestError(ValueError):
    """A problem with the whole run (directory, domain, store); one line, names the input."""


@dataclass
class FileOutcome:
    file_name: str
    status: str  # stored | unchanged | skipped | failed | pruned
    chunks: int = 0
    error: str = ""


@dataclass
class IngestReport:
    store: str
    outcomes: list[FileOutcome] = field(default_factory=list)
    seconds: float = 0.0
    job_id: int | None = None

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def chunks(self) -> int:
        return sum(o.chunks for o in self.outcomes if o.status == "stored")


@dataclass
class _Prepared:
    path: Path
    file_name: str
    content_hash: str
    drafts: list[ChunkDraft] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    error: ConversionError | None = None


def list_source_files(directory: Path) -> list[Path]:
    """Supported files under ``directory``, recursively, hidden folders skipped, sorted."""
    return sorted(
        p
        for p in directory.rglob("*")
        if p.is_file()
        and p.suffix.lower() in SUPPORTED_EXTENSIONS
        and not any(part.startswith(".") for part in p.relative_to(directory).parts)
    )


def resolve_store(store_name: str, domain_name: str, create: bool = True) -> Store:
    """The store named ``store_name`` of domain ``domain_name``.

    :raises IngestError: the domain does not exist, the store belongs to another domain,
        or (``create=False``) the store does not exist.
    """
    domain = Domain.objects.filter(name=domain_name).first()
    if domain is None:
        raise IngestError(
            f"domain '{domain_name}' does not exist; create it in the admin or with `manage.py loaddomains`"
        )
    store = Store.objects.filter(name=store_name).select_related("domain").first()
    if store is None:
        if not create:
            raise IngestError(f"store '{store_name}' does not exist")
        store = Store(name=store_name, domain=domain)
        store.full_clean(exclude=["domain"])
        store.save()
        logger.info("created store %s in domain %s", store_name, domain_name)
    elif store.domain_id != domain.id:
        raise IngestError(f"store '{store_name}' belongs to domain '{store.domain.name}', not '{domain_name}'")
    return store


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _prepare(path: Path, file_name: str, content_hash: str, max_tokens: int) -> _Prepared:
    prepared = _Prepared(path, file_name, content_hash)
    try:
        converted = convert_file(path)
        prepared.drafts = chunk_document(converted, embeddings.count_tokens, max_tokens)
        prepared.metadata = document_metadata(converted, file_name)
    except ConversionError as exc:
        prepared.error = exc
    return prepared


@transaction.atomic
def _write(store: Store, prepared: _Prepared, vectors) -> int:
    document, _ = Document.objects.select_for_update().get_or_create(store=store, file_name=prepared.file_name)
    document.chunks.all().delete()
    document.source_path = str(prepared.path)
    document.content_hash = prepared.content_hash
    if prepared.error is not None:
        document.status = (
            Document.Status.STORED if prepared.error.reason in SKIP_REASONS else Document.Status.FAILED
        )
        document.error = str(prepared.error)
        document.save()
        return 0
    document.status = Document.Status.STORED
    document.error = ""
    document.metadata = prepared.metadata
    document.save()
    MetadataEntry.objects.update_or_create(
        document=document, heading_key=MetadataEntry.DEFAULT, defaults={"values": prepared.metadata}
    )
    year = year_of(prepared.metadata)
    Chunk.objects.bulk_create(
        Chunk(
            store=store,
            document=document,
            ordinal=i,
            text=draft.text,
            headings=list(draft.headings),
            metadata=prepared.metadata,
            year=year,
            token_count=draft.token_count,
            embedding=vector,
        )
        for i, (draft, vector) in enumerate(zip(prepared.drafts, vectors))
    )
    return len(prepared.drafts)


def _groups(items: list[_Prepared]) -> Iterator[list[_Prepared]]:
    group, size = [], 0
    for item in items:
        group.append(item)
        size += len(item.drafts)
        if size >= EMBED_GROUP:
            yield group
            group, size = [], 0
    if group:
        yield group


def ingest_directory(
    directory: Path | str,
    store_name: str,
    domain_name: str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    force: bool = False,
    on_file: Callable[[FileOutcome], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest every supported file under ``directory`` into a store of a domain.

    :param force: re-convert and re-embed files whose content did not change.
    :param on_file: called once per file with its outcome (progress bars).
    :param on_start: called with the number of files before any work.
    :returns: IngestReport with one FileOutcome per file (and per pruned document).
    :raises IngestError: missing or empty directory, unknown domain, store in another domain.
    """
    started = time.monotonic()
    directory = Path(directory)
    if not directory.is_dir():
        raise IngestError(f"{directory}: no such directory")
    files = list_source_files(directory)
    if not files:
        raise IngestError(
            f"{directory}: no files to ingest (supported: {', '.join(sorted(SUPPORTED_EXTENSIONS))})"
        )
    store = resolve_store(store_name, domain_name)
    job = IngestionJob.objects.create(
        kind="build",
        store=store,
        status=IngestionJob.Status.RUNNING,
        total=len(files),
        arguments={"directory": str(directory), "max_tokens": max_tokens, "force": force},
    )
    report = IngestReport(store=store.name, job_id=job.pk)
    notify = on_file or (lambda outcome: None)
    if on_start:
        on_start(len(files))

    known = dict(store.documents.values_list("file_name", "content_hash"))
    stored_ok = set(store.documents.filter(status=Document.Status.STORED).values_list("file_name", flat=True))
    pending: list[_Prepared] = []
    for path in files:
        file_name = path.relative_to(directory).as_posix()
        content_hash = _sha256(path)
        if not force and known.get(file_name) == content_hash and file_name in stored_ok:
            outcome = FileOutcome(file_name, "unchanged")
            report.outcomes.append(outcome)
            notify(outcome)
            continue
        pending.append(_prepare(path, file_name, content_hash, max_tokens))
        if sum(len(p.drafts) for p in pending) >= EMBED_GROUP:
            _flush(store, pending, report, notify)
            pending = []
    _flush(store, pending, report, notify)

    present = {path.relative_to(directory).as_posix() for path in files}
    for document in store.documents.exclude(file_name__in=present):
        document.delete()
        report.outcomes.append(FileOutcome(document.file_name, "pruned"))

    report.seconds = time.monotonic() - started
    failed = {o.file_name: o.error for o in report.outcomes if o.status == "failed"}
    job.done = len(files)
    job.errors = failed
    job.status = IngestionJob.Status.PARTIAL if failed else IngestionJob.Status.SUCCEEDED
    job.finished_at = timezone.now()
    job.messages = [
        f"{report.count('stored')} stored, {report.count('unchanged')} unchanged, "
        f"{len(failed)} failed, {report.count('pruned')} pruned, {report.chunks} chunks"
    ]
    job.save()
    return report


def _flush(store: Store, pending: list[_Prepared], report: IngestReport, notify) -> None:
    for group in _groups(pending):
        texts = [indexed_text(d.headings, d.text) for p in group for d in p.drafts]
        vectors = embeddings.embed_texts(texts)
        offset = 0
        for prepared in group:
            n = len(prepared.drafts)
            written = _write(store, prepared, vectors[offset : offset + n])
            offset += n
            if prepared.error is not None:
                status = "skipped" if prepared.error.reason in SKIP_REASONS else "failed"
                outcome = FileOutcome(prepared.file_name, status, error=str(prepared.error))
                logger.debug("%s: %s", status, prepared.error)
            else:
                outcome = FileOutcome(prepared.file_name, "stored", chunks=written)
            report.outcomes.append(outcome)
            notify(outcome)
