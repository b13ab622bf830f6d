"""Without a broker (no REDIS_URL: Celery eager, the ``make run`` default) an admin
upload's tasks run here, on one background thread of the server process, so the upload
view redirects at once to the job page, which follows the progress.

One task at a time, in the order queued (a job's files run one after the other, then
the next job's). The task code is Celery's own (:func:`ingestion.tasks.ingest_file`,
run with ``apply``), so a document is still replaced in one transaction: a server
stopped mid-document rolls that transaction back (the thread is a daemon), never
leaving half a document; on a normal stop (SIGTERM, Ctrl-C) the work not done is
``abandon``-ed first, so its job closes instead of staying "running".
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Callable

from django.db import connections

logger = logging.getLogger("klea.ingestion")

_Item = tuple[Callable[[], object], Callable[[], object]]
_queue: queue.Queue[_Item] = queue.Queue()
_unfinished: list[_Item] = []  # queued or running, in order
_thread: threading.Thread | None = None
_lock = threading.Lock()


def submit(work: Callable[[], object], abandon: Callable[[], object]) -> None:
    """Queue ``work`` (no arguments; its result is dropped, an exception logged) for the
    background thread, starting it on first use. ``abandon()`` is called instead, at the
    server's exit, when ``work`` has not finished by then."""
    global _thread
    item = (work, abandon)
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="klea-ingest", daemon=True)
            _thread.start()
        _unfinished.append(item)
    _queue.put(item)


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
    for _, abandon in items:
        try:
            abandon()
        except Exception:  # the others are still closed
            logger.exception("closing an abandoned ingestion task failed")
    connections.close_all()
