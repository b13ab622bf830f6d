"""Without a broker (no REDIS_URL: Celery eager, the ``make run`` default) an admin
upload's tasks run here, on one background thread of the server process, so the upload
view redirects at once to the job page, which follows the progress.

One task at a time, in the order queued (a job's files run one after the other, then
the next job's). The task code is Celery's own (:func:`ingestion.tasks.ingest_file`,
run with ``apply``), so a document is still replaced in one transaction: a server
stopped mid-document rolls that transaction back (the thread is a daemon), never
leaving half a document; on a normal stop (SIGTERM, Ctrl-C) the work not done is
``abandon``-ed first, so its job closes instead of staying "running". While a job has
work here, a second thread renews its lease (ingestion/runs/lease.py), so the job of a
process that was killed or crashed is closed once its lease runs out.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connections

from . import lease

logger = logging.getLogger("klea.ingestion")

_Item = tuple[Callable[[], object], Callable[[], object], int]  # work, abandon, job id
_queue: queue.Queue[_Item] = queue.Queue()
_unfinished: list[_Item] = []  # queued or running, in order
_threads: dict[str, threading.Thread] = {}
_lock = threading.Lock()


def submit(work: Callable[[], object], abandon: Callable[[], object], job_id: int) -> None:
    """Queue ``work`` (no arguments; its result is dropped, an exception logged) for the
    background thread, starting it on first use. ``abandon()`` is called instead, at the
    server's exit, when ``work`` has not finished by then. Job ``job_id``'s lease is
    renewed while it has work here."""
    item = (work, abandon, job_id)
    lease.renew([job_id])
    with _lock:
        for name, target in (("klea-ingest", _loop), ("klea-ingest-lease", _renew_leases)):
            if name not in _threads or not _threads[name].is_alive():
                _threads[name] = threading.Thread(target=target, name=name, daemon=True)
                _threads[name].start()
        _unfinished.append(item)
    _queue.put(item)


def _renew_leases() -> None:
    while True:
        time.sleep(settings.KLEA_JOB_LEASE_SECONDS / 4)
        with _lock:
            job_ids = {item[2] for item in _unfinished}
        if not job_ids:
            continue
        try:
            lease.renew(job_ids)
        except Exception:  # the database is back next time, or the lease runs out
            logger.exception("renewing ingestion job leases failed")
        finally:
            connections.close_all()  # this thread's connection only


def _loop() -> None:
    while True:
        item = _queue.get()
        try:
            item[0]()
        except Exception:  # the next task still runs
            logger.exception("background ingestion task failed")
        finally:
            with _lock:
                _unfinished.remove(item)
            connections.close_all()  # this thread's connections only; none idles between tasks
            _queue.task_done()


@atexit.register
def _abandon_unfinished() -> None:
    with _lock:
        items = list(_unfinished)
    for _, abandon, _ in items:
        try:
            abandon()
        except Exception:  # the others are still closed
            logger.exception("closing an abandoned ingestion task failed")
    connections.close_all()
