"""Uploaded sources shared between processes through Django's storage API.

Web (daphne) and Celery workers may run on machines that share only ``DATABASE_URL`` and
``REDIS_URL`` (docs/deployment.md). An admin upload is therefore written to the
``uploads`` storage (``STORAGES["uploads"]``: :class:`DatabaseStorage` by default, any
Django storage backend by ``KLEA_UPLOAD_STORAGE``) under ``<store folder>/<file name>``;
the process that builds it copies the folder to its own ``KLEA_UPLOAD_DIR`` first
(:func:`materialise`), since converters read local files; the source view does the same
for one file (domains/uploads.py).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import Storage
from django.db import transaction
from django.utils import timezone
from django.utils.deconstruct import deconstructible

from domains.uploads import is_local, local_copy, stamp, upload_storage


@deconstructible
class DatabaseStorage(Storage):
    """Files as rows of :class:`ingestion.models.StoredFile` (bytea, read whole: fit for
    uploads within the upload size limit). Saving a name that exists replaces it."""

    def _open(self, name, mode="rb"):
        from ingestion.models import StoredFile

        row = StoredFile.objects.filter(name=name).only("data").first()
        if row is None:
            raise FileNotFoundError(f"{name}: not in the database storage")
        return ContentFile(bytes(row.data), name=name)

    def _save(self, name, content):
        from ingestion.models import StoredFile

        content.seek(0)
        data = content.read()
        with transaction.atomic():
            StoredFile.objects.update_or_create(
                name=name, defaults={"data": data, "size": len(data), "modified_at": timezone.now()}
            )
        return name

    def get_available_name(self, name, max_length=None):
        return name  # replace, never rename: the name is the document's key

    def exists(self, name):
        from ingestion.models import StoredFile

        return StoredFile.objects.filter(name=name).exists()

    def delete(self, name):
        from ingestion.models import StoredFile

        StoredFile.objects.filter(name=name).delete()

    def size(self, name):
        from ingestion.models import StoredFile

        return StoredFile.objects.values_list("size", flat=True).get(name=name)

    def get_modified_time(self, name):
        from ingestion.models import StoredFile

        return StoredFile.objects.values_list("modified_at", flat=True).get(name=name)

    def listdir(self, path):
        from ingestion.models import StoredFile

        prefix = path.rstrip("/") + "/" if path else ""
        dirs, files = set(), []
        for name in StoredFile.objects.filter(name__startswith=prefix).values_list("name", flat=True):
            head, sep, tail = name[len(prefix):].partition("/")
            if sep:
                dirs.add(head)
            else:
                files.append(head)
        return sorted(dirs), sorted(files)

    def url(self, name):
        raise NotImplementedError("uploaded sources are not served by URL")


def publish(folder: Path, names: list[str]) -> None:
    """Save ``folder/<name>`` for each name to the uploads storage as ``<folder name>/<name>``
    (a no-op when that storage is this very folder, a FileSystemStorage at KLEA_UPLOAD_DIR)."""
    storage = upload_storage()
    if is_local(storage):
        return
    for name in names:
        key = f"{folder.name}/{name}"
        if storage.exists(key):
            storage.delete(key)
        with (folder / name).open("rb") as fh:
            storage.save(key, File(fh, name=name))
        stamp(folder / name, storage, key)


def materialise(folder_name: str) -> Path:
    """This process's copy of the uploads storage folder ``folder_name``
    (``KLEA_UPLOAD_DIR/<folder_name>``): every file the storage holds there, through
    :func:`domains.uploads.local_copy`. :returns: the local folder."""
    storage = upload_storage()
    folder = Path(settings.KLEA_UPLOAD_DIR) / folder_name
    if not is_local(storage):
        for name in storage.listdir(folder_name)[1]:
            local_copy(f"{folder_name}/{name}", storage)
    return folder
