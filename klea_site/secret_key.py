"""The SECRET_KEY when DJANGO_SECRET_KEY is not set: a random key generated once into a
file (``var/secret_key`` by default, mode 0600) and read back by every later process, so
sessions survive restarts and no deployment runs on a key everyone knows
(docs/security.md)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def load_or_create(path: Path) -> str:
    """The key stored in ``path``; generated (URL-safe, 67 characters) when the file is
    missing. Creation is atomic (a temporary file linked into place), so processes starting
    together agree on one key.

    :raises ImproperlyConfigured: the file exists but is empty or unreadable, or cannot be
        created (the message names the file and DJANGO_SECRET_KEY)."""
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_urlsafe(50) + "\n")
            try:
                os.link(temporary, path)  # fails if another process won the race: use its key
            except FileExistsError:
                pass
            finally:
                temporary.unlink()
        key = path.read_text().strip()
    except OSError as exc:
        raise ImproperlyConfigured(
            f"cannot read or create the secret key file {path} ({exc.strerror}); "
            "set DJANGO_SECRET_KEY or KLEA_SECRET_KEY_FILE"
        ) from None
    if not key:
        raise ImproperlyConfigured(f"the secret key file {path} is empty; delete it to generate a new key")
    return key
