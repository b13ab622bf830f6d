"""The one entry point for "ingest these files and folders into a store": the ``stores
build`` command, the demo, admin uploads and the Python API (``Knowledge.add``) all call
:func:`ingest`, which runs convert -> chunk -> metadata -> store under one
IngestionJob (kind ``build``).

- ``mirror=True`` (``stores build DIR``, the demo): the store mirrors one folder. Every
  file is chunked, then stored (embedded in groups across files); documents and staged
  files whose source left the folder are pruned; other file types are reported as
  ``unsupported``.
- ``mirror=False`` (admin uploads, ``Knowledge.add``): the named files, and the files of
  the named folders, are added one at a time; no other document is touched. A file is
  keyed by its name relative to the folder named (or its bare name when named alone).
- ``queue=True``: one Celery task per file instead; the call returns once they are
  queued, with the job id to follow (``GET /api/jobs/<id>``). Without Redis a folder's
  tasks (``stores build --queue``) run in the call; added files' tasks (admin uploads)
  on the server's background thread (ingestion/runs/background.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ingestion.chunk.step import chunk_directory
from ingestion.convert import SUPPORTED_EXTENSIONS
from ingestion.models import IngestionJob
from ingestion.options import IngestOptions
from ingestion.outcomes import FileOutcome, IngestError, StepReport
from ingestion.sources import (
    bad_name,
    checked_path,
    inside,
    list_bad_names,
    list_outside_links,
    outside_link,
    relative_name,
    require_files,
    resolve_directory,
)
from ingestion.store.step import store_directory
from ingestion.store.target import resolve_store

from . import jobs
from .steps import (
    OnFile, OnPage, closed_on_error, enqueue, folder_job, guarded, recording, recording_pages, run_error, run_file,
)


def ingest(
    paths: str | Path | Iterable[str | Path],
    store_name: str,
    domain_name: str,
    *,
    mirror: bool = False,
    queue: bool = False,
    create: bool = True,
    new_domain: str | None = None,
    on_start: Callable[[int], None] | None = None,
    on_chunked: OnFile | None = None,
    on_file: OnFile | None = None,
    on_page: OnPage | None = None,
    user=None,
    upload: str = "",
    refused: Iterable[FileOutcome] = (),
    **options,
) -> StepReport:
    """Ingest files and folders (recursively) into the store ``store_name`` of
    ``domain_name``, as one IngestionJob.

    :param paths: a file or folder, or several; ``~`` is expanded. ``mirror`` takes one folder.
    :param mirror: the store mirrors the folder (prunes what left it); see the module docstring.
    :param queue: one Celery task per file; the report then has no outcomes, only ``job_id``.
    :param create: create the store when absent (else it must exist).
    :param new_domain: with ``create``, also create a missing domain with this description.
    :param on_start: called with the number of files; ``on_chunked`` per file after
        chunking (``mirror`` only); ``on_file`` per file once it is stored; ``on_page``
        with (file name, pages OCRed, pages to OCR) during OCR (also shown on the job).
    :param upload: with ``queue``, the files are the uploads storage folder of that name
        (ingestion/blobs.py): each task builds from its own process's copy of it.
    :param refused: (``mirror=False``) outcomes of files the caller turned away before
        saving them (admin uploads: status ``refused``), counted and recorded on the job first.
    :param options: :class:`ingestion.options.IngestOptions` fields (``max_tokens``,
        ``ocr``, ``bm25_only``, ``force``).
    :returns: the StepReport: one outcome per file (stored / unchanged / skipped /
        needs_ocr / failed / unsupported / pruned), ``job_id`` and the chunk notes.
    :raises TypeError: a path that is not a str or Path.
    :raises IngestError: no paths, a missing path, a folder without supported files, an
        invalid name, an unknown domain or store, a store of another domain or mode.
    :raises ValueError: bad ``ocr`` or ``max_tokens``.
    """
    checked = IngestOptions(**options)
    if mirror:
        directory = resolve_directory(paths)
        require_files(directory)
    else:
        items = _path_list(paths)
        work = _work(items)
        # a folder's files whose names are not UTF-8 fail alone (the others are ingested)
        refused = list(refused) + [bad_name(name) for item in items if Path(item).expanduser().is_dir()
                                   for name in list_bad_names(Path(item).expanduser().resolve())]
    store = resolve_store(store_name, domain_name, bm25_only=checked.bm25_only, create=create, new_domain=new_domain)
    if mirror and queue:
        job = enqueue("build", directory, store_name=store.name, domain_name=domain_name, user=user, **options)
        return StepReport("build", str(directory), store=store.name, job_id=job.pk)
    if mirror:
        job = folder_job("build", directory, checked, store=store, user=user)
        return guarded(job, lambda: _mirror(directory, store, domain_name, checked, on_start, on_chunked,
                                            recording(job.pk, on_file), recording_pages(job.pk, on_page)))
    report = StepReport("build", ", ".join(str(p) for p in items), store=store.name)
    arguments = {"paths": [str(p) for p in items], **checked.as_dict(), "async": queue}
    report.job_id = jobs.start_job("build", len(work) + len(refused), arguments, store=store, user=user).pk
    if on_start:
        on_start(len(work) + len(refused))
    for outcome in refused:
        _add(report, outcome, on_file)
    _add_files(report, work, store, checked, queue, on_file, recording_pages(report.job_id, on_page), upload)
    return report


def _mirror(directory: Path, store, domain_name: str, options: IngestOptions, on_start, on_chunked,
            on_stored: OnFile, on_page: OnPage) -> StepReport:
    """``stores build DIR``: chunk every file of the folder, then store it (and prune)."""
    values = options.as_dict()
    chunked = chunk_directory(directory, on_start=on_start, on_file=on_chunked, on_page=on_page, **values)
    stored = store_directory(directory, store.name, domain_name, on_file=on_stored, **values)
    stored.notes = chunked.notes + stored.notes
    # A file that could not be staged reads so, not as "not chunked" to the store step.
    crashed = {o.file_name: o for o in chunked.outcomes if o.reason == "crashed"}
    stored.outcomes = [crashed.get(o.file_name, o) for o in stored.outcomes]
    # Files the store step did not see: unsupported ones, and any gone since chunking.
    seen = {o.file_name for o in stored.outcomes}
    stored.outcomes += [o for o in chunked.outcomes if o.file_name not in seen and o.status != "pruned"]
    return stored


def _add_files(report: StepReport, work: list[tuple[Path, str]], store, options: IngestOptions, queue: bool,
               on_file: OnFile | None, on_page: OnPage, upload: str = "") -> None:
    """Each file built on its own (or queued), its outcome recorded as it comes; the job
    closes with the last one. An unexpected error fails the job, naming the file."""
    supported = []
    for folder, name in work:
        if not inside(folder / name, folder):
            _add(report, outside_link(name), on_file)
            continue
        if Path(name).suffix.lower() not in SUPPORTED_EXTENSIONS:
            error = f"{name}: unsupported file type '{Path(name).suffix}'"
            _add(report, FileOutcome(name, "unsupported", reason="unsupported", error=error), on_file)
            continue
        supported.append((folder, name))
        if queue:
            continue
        try:
            jobs.start_file(report.job_id, name)
            outcome = run_file("build", str(folder), name, store.pk, options.as_dict(), on_page=on_page)
        except BaseException as exc:  # the job must never stay running
            jobs.fail(report.job_id, f"{name}: {run_error(exc)}")
            raise
        _add(report, outcome, on_file)
    if queue and supported:
        from ingestion.tasks import enqueue as enqueue_tasks

        job = IngestionJob.objects.get(pk=report.job_id)
        closed_on_error(job, lambda: enqueue_tasks(job, "build", supported, store.pk, options, upload=upload,
                                                   in_background=True))


def _add(report: StepReport, outcome: FileOutcome, on_file: OnFile | None) -> None:
    report.outcomes.append(outcome)
    jobs.record(report.job_id, outcome, finish_when_done=True)
    if on_file:
        on_file(outcome)


def _path_list(paths) -> list[str | Path]:
    if isinstance(paths, (str, Path)):
        items = [paths]
    elif isinstance(paths, Iterable) and not isinstance(paths, (bytes, dict)):
        items = list(paths)
    else:
        raise TypeError(f"paths must be a str or pathlib.Path, or a list of them; got {type(paths).__name__}")
    if not items:
        raise IngestError("no paths given")
    return items


def _work(items: list[str | Path]) -> list[tuple[Path, str]]:
    """(folder, file name relative to it) per file: a folder's supported files, or a file."""
    work: list[tuple[Path, str]] = []
    for raw in items:
        path = Path(checked_path(raw)).expanduser().resolve()
        if path.is_dir():
            files = require_files(path) + list_outside_links(path)
            work += [(path, relative_name(p, path)) for p in files]
        elif path.is_file():
            work.append((path.parent, path.name))
        elif path.exists():  # a device, a pipe, a socket: nothing to read to an end
            raise IngestError(f"{raw}: not a regular file or folder")
        else:
            raise IngestError(f"{raw}: no such file or directory")
    return _distinct(work)


def _distinct(work: list[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """``work`` with a file named twice kept once. Two different files with one name
    would be one document (the later replacing the earlier) counted twice by the job,
    which then never closes: refused before anything is written.

    :raises IngestError: naming the first such name and both files.
    """
    seen: dict[str, Path] = {}
    distinct = []
    for folder, name in work:
        path = folder / name
        if name not in seen:
            seen[name] = path
            distinct.append((folder, name))
        elif seen[name] != path:
            raise IngestError(f"two files would both be stored as {name!r}: {seen[name]} and {path}; "
                              "add them in separate calls, or from a folder that holds both")
    return distinct

