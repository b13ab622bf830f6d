"""Without a broker (no REDIS_URL: Celery eager, the ``make run`` default) an admin
upload's tasks run here, on a small pool of background threads of the server process
(KLEA_INGEST_THREADS, default 2), so the upload view redirects at once to the job page,
which follows the progress.

A job's files run one after the other, and the jobs waiting take turns: a free thread
takes the next file of the job that has waited longest and has no file running. So one
large file (or a large upload) holds one thread, and other users' uploads go on on the
others; each thread converts in its own conversion process
(:func:`ingestion.chunk.step.shared_worker`), so one file's conversion never waits for
another's. The task code is Celery's own (:func:`ingestion.tasks.ingest_file`, run with
``apply``), so a document is still replaced in one transaction: a server stopped
mid-document rolls that transaction back (the threads are daemons), never leaving half a
document; on a normal stop (SIGTERM, Ctrl-C) the work not done is ``abandon``-ed first,
so its job closes instead of staying "running". While a job has work here, another
thread renews its lease (ingestion/runs/lease.py), so the job of a process that was
killed or crashed is closed once its lease runs out.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from django.conf import settings
from django.db import connections

from ingestion.chunk.step import use_own_worker

from . import lease

logger = logging.getLogger("klea.ingestion")

_Item = tuple[Callable[[], object], Callable[[], object], int]  # work, abandon, job id
_waiting: dict[int, deque[_Item]] = {}  # job id -> its items not started; the job waiting longest first
_running: set[int] = set()  # jobs with a file running
_unfinished: list[_Item] = []  # queued or running, in order
_threads: dict[str, threading.Thread] = {}
_changed = threading.Condition()


def submit(work: Callable[[], object], abandon: Callable[[], object], job_id: int) -> None:
    """Queue ``work`` (no arguments; its result is dropped, an exception logged) for the
    background threads, starting them on first use. ``abandon()`` is called instead, at
    the server's exit, when ``work`` has not finished by then. Job ``job_id``'s lease is
    renewed while it has work here."""
    item = (work, abandon, job_id)
    lease.renew([job_id])
    with _changed:
        names = [(f"klea-ingest-{n}", _loop) for n in range(1, max(settings.KLEA_INGEST_THREADS, 1) + 1)]
        for name, target in names + [("klea-ingest-lease", _renew_leases)]:
            if name not in _threads or not _threads[name].is_alive():
                _threads[name] = threading.Thread(target=target, name=name, daemon=True)
                _threads[name].start()
        _unfinished.append(item)
        _waiting.setdefault(job_id, deque()).append(item)
        _changed.notify_all()


def _next() -> _Item:
    """The next file of the job waiting longest with no file running (blocks)."""
    with _changed:
        while True:
            job_id = next((j for j in _waiting if j not in _running), None)
            if job_id is not None:
                items = _waiting.pop(job_id)
                item = items.popleft()
                if items:
                    _waiting[job_id] = items  # to the back: the other jobs' turn first
                _running.add(job_id)
                return item
            _changed.wait()


def _loop() -> None:
    use_own_worker()
    while True:
        item = _next()
        try:
            item[0]()
        except Exception:  # the next task still runs
            logger.exception("background ingestion task failed")
        finally:
            with _changed:
                _unfinished.remove(item)
                _running.discard(item[2])
                _changed.notify_all()
            connections.close_all()  # this thread's connections only; none idles between tasks


def _renew_leases() -> None:
    while True:
        time.sleep(settings.KLEA_JOB_LEASE_SECONDS / 4)
        with _changed:
            job_ids = {item[2] for item in _unfinished}
        if not job_ids:
            continue
        try:
            lease.renew(job_ids)
        except Exception:  # the database is back next time, or the lease runs out
            logger.exception("renewing ingestion job leases failed")
        finally:
            connections.close_all()  # this thread's connection only


@atexit.register
def _abandon_unfinished() -> None:
    with _changed:
        items = list(_unfinished)
    for _, abandon, _ in items:
        try:
            abandon()
        except Exception:  # the others are still closed
            logger.exception("closing an abandoned ingestion task failed")
    connections.close_all()
