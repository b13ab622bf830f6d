"""The embedded default database: PostgreSQL 16 + pgvector from the PyPI package ``pgserver``
(started from klea_site/settings.py, stopped by ``manage.py embedded_db``; it imports no
Django code, so that settings can use it before apps load).

Used when ``DATABASE_URL`` is unset, so a fresh checkout needs no configuration. The
server keeps running after the process that started it exits (``cleanup_mode=None``)
and is reused by every later process (manage.py, daphne, Celery, pytest), which all
talk to it over a Unix socket inside the data folder. Stop it with
``manage.py embedded_db stop`` (or ``make stop-db``).
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)
# pgserver logs each start and reuse at INFO with whole PostmasterInfo(...) dumps. The
# server starts while settings load, before Django applies LOGGING, under daphne's and
# Celery's own INFO-level logging; so its level is set here: warnings and errors only.
logging.getLogger("pgserver").setLevel(logging.WARNING)

DATABASE_NAME = "klea"

# Applied once, right after initdb (ALTER SYSTEM + restart). Sized for a 2-core /
# 24 GiB machine: HNSW builds want maintenance_work_mem, BM25 aggregation wants
# work_mem; everything else stays at PostgreSQL's defaults.
SERVER_SETTINGS = {
    "shared_buffers": "1GB",
    "work_mem": "64MB",
    "maintenance_work_mem": "1GB",
    "max_connections": "200",
    "effective_cache_size": "8GB",
    "random_page_cost": "1.1",
    "fsync": "on",
}


def _server(pgdata: Path):
    # pgserver asks platformdirs for a runtime folder and warns when XDG_RUNTIME_DIR is
    # unset; the warning is noise for our users.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        pgdata.parent.mkdir(parents=True, exist_ok=True)
        return pgserver.get_server(pgdata, cleanup_mode=None)


def _initialise(server) -> None:
    """First start only: apply SERVER_SETTINGS, restart, create the database.

    A marker file in the data folder records that this ran, so later processes pay
    nothing but pgserver's own "is it running?" check.
    """
    marker = Path(server.pgdata) / "klea_initialised"
    if marker.exists():
        return
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    server.psql("".join(f"ALTER SYSTEM SET {k} = '{v}';\n" for k, v in SERVER_SETTINGS.items()))
    pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=60)
    server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)
    present = server.psql(f"SELECT 'present' FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "present" not in present:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    marker.write_text("settings applied and database created\n")
    logger.info("initialised the embedded PostgreSQL in %s", server.pgdata)


def ensure_embedded_postgres(pgdata: Path) -> dict:
    """Start (or reuse) the embedded server and return a Django ``DATABASES`` entry.

    :param pgdata: the data folder (created on first use), e.g. ``var/pgdata``.
    :returns: dict with ENGINE, NAME (``klea``), USER (``postgres``), HOST (socket folder).
    :raises RuntimeError: when the server cannot start; the message points at its log.
    """
    try:
        server = _server(pgdata)
        _initialise(server)
        info = server.get_postmaster_info()
    except Exception as exc:  # pgserver raises bare CalledProcessError/AssertionError
        raise RuntimeError(
            f"the embedded PostgreSQL in {pgdata} did not start ({exc!r}); see "
            f"{Path(pgdata) / 'log'}, or set DATABASE_URL to use another server"
        ) from exc
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(info.socket_dir),
        "PORT": str(info.port or ""),
    }


def stop_embedded_postgres(pgdata: Path) -> bool:
    """Stop the embedded server if it runs. :returns: True when a server was stopped."""
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(Path(pgdata))
    if info is None or not info.is_running():
        return False
    from pgserver._commands import pg_ctl

    server = _server(pgdata)
    pg_ctl(["-w", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=60)
    return True


def database_url(settings_dict: dict) -> str:
    """The ``DATABASE_URL`` of a Django database's settings (socket or TCP), for starting
    another process (a worker, a server) on the same database, e.g. ``connection.settings_dict``."""
    db = settings_dict
    host = db["HOST"] or db["OPTIONS"].get("host", "")
    port = db["PORT"] or db["OPTIONS"].get("port", "5432")
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    if host.startswith("/"):
        return f"postgres://{db['USER']}{password}@/{db['NAME']}?host={host}&port={port}"
    return f"postgres://{db['USER']}{password}@{host}:{port}/{db['NAME']}"
