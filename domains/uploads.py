"""Local copies of uploaded sources kept in the ``uploads`` storage (``STORAGES["uploads"]``,
Django's storage API; docs/deployment.md).

An upload is stored under ``<store folder>/<file name>``; a process that needs the file
(a worker building it, a web process showing it in the source view) reads its own copy
under ``KLEA_UPLOAD_DIR/<store folder>/``, fetched when missing or out of date. The
storage backend itself (:class:`ingestion.blobs.DatabaseStorage` by default) is
configuration; this module uses only the Storage API.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.files.storage import Storage, storages


def upload_storage() -> Storage:
    return storages["uploads"]


def is_local(storage: Storage) -> bool:
    """Whether the storage is this machine's KLEA_UPLOAD_DIR itself (nothing to copy)."""
    location = getattr(storage, "location", None)
    return location is not None and Path(location).resolve() == Path(settings.KLEA_UPLOAD_DIR).resolve()


def stamp(path: Path, storage: Storage, key: str) -> None:
    """Give a local copy the storage's modification time (what :func:`local_copy` compares)."""
    when = storage.get_modified_time(key).timestamp()
    os.utime(path, (when, when))


def local_copy(key: str, storage: Storage | None = None) -> Path | None:
    """``KLEA_UPLOAD_DIR/<key>``, copied from the uploads storage when missing locally or
    of another size or modification time (written whole, then renamed).

    :param key: ``<store folder>/<file name>``.
    :returns: the local path, or None when the storage has no such file.
    """
    storage = storage or upload_storage()
    local = Path(settings.KLEA_UPLOAD_DIR) / key
    if is_local(storage):
        return local if local.is_file() else None
    if not storage.exists(key):
        return None
    if local.is_file():
        same_time = abs(storage.get_modified_time(key).timestamp() - local.stat().st_mtime) < 1e-3
        if same_time and local.stat().st_size == storage.size(key):
            return local
    local.parent.mkdir(parents=True, exist_ok=True)
    partial = local.parent / f".{local.name}.part"
    with storage.open(key) as source, partial.open("wb") as fh:
        for block in source.chunks():
            fh.write(block)
    os.replace(partial, local)
    stamp(local, storage, key)
    return local
