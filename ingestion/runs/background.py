"""Without a broker (no REDIS_URL: Celery eager, the ``make run`` default) an admin
upload's tasks run here, on one background thread of the server process, so the upload
view redirects at once to the job page, which follows the progress.

One task at a time, in the order queued (a job's files run one after the other, then
the next job's). The task code is Celery's own (:func:`ingestion.tasks.ingest_file`,
run with ``apply``), so a document is still replaced in one transaction: a server
stopped mid-document rolls that transaction back (the thread is a daemon), never
leaving half a document.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from django.db import connections

logger = logging.getLogger("klea.ingestion")

_queue: queue.Queue[Callable[[], object]] = queue.Queue()
_thread: threading.Thread | None = None
_start_lock = threading.Lock()


def submit(work: Callable[[], object]) -> None:
    """Queue ``work`` (no arguments; its result is dropped, an exception logged) for the
    background thread, starting it on first use."""
    global _thread
    with _start_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="klea-ingest", daemon=True)
            _thread.start()
    _queue.put(work)


def _loop() -> None:
    while True:
        work = _queue.get()
        try:
            work()
        except Exception:  # the next task still runs
            logger.exception("background ingestion task failed")
        finally:
            connections.close_all()  # this thread's connections only; none idles between tasks
            _queue.task_done()
