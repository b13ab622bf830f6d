"""Lists at once: a large store's vector lists on a thread and a connection of their own,
while retrieve() runs its BM25 lists on the caller's (docs/retrieval.md, "Lists at once").

This module owns the threads, the slots and the kept connections; what runs on them is
the engine's (domains/retrieval/engine.py passes a step that runs lists in one transaction).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections

logger = logging.getLogger("klea.retrieval")

# retrieve() calls whose vector lists may run at once beside their BM25 lists; a call
# finding every slot taken runs its lists one after the other: on a busy server the
# cores are taken anyway.
SIDE_SLOTS = 4
# The stores' size decides whether their lists run at once; it is read at most once per
# SIZES_TTL seconds per set of stores (a round trip on every search otherwise).
SIZES_TTL = 60.0
_sizes: dict[tuple[int, ...], tuple[float, int]] = {}


def wanted(store_ids: set[int]) -> bool:
    """Whether a hybrid search of ``store_ids`` runs its vector lists on a second
    connection: the caller holds no transaction (a second connection would not see its
    uncommitted rows) and the stores hold together at least
    KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS chunks (below that a vector list takes 7-11 ms and
    running it beside saves 1-4 ms p50, not worth up to SIDE_SLOTS more connections in
    every process; docs/benchmarks.md)."""
    threshold = settings.KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS
    if threshold < 0 or connection.in_atomic_block or not connection.get_autocommit():
        return False
    if threshold == 0:
        return True
    stores = tuple(sorted(store_ids))
    read_at, rows = _sizes.get(stores, (float("-inf"), 0))
    if time.monotonic() - read_at > SIZES_TTL:
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(sum(chunk_count), 0) FROM domains_bm25stats WHERE store_id = ANY(%s)",
                           [list(stores)])
            rows = cursor.fetchone()[0]
        if len(_sizes) > 1000:
            _sizes.clear()
        _sizes[stores] = (time.monotonic(), rows)
    return rows >= threshold


_side_pool: ThreadPoolExecutor | None = None
_side_free = threading.BoundedSemaphore(SIDE_SLOTS)
_side_lock = threading.Lock()
# Connections of the side calls between calls (at most SIDE_SLOTS): a new backend's first
# HNSW search costs about twice a warm one's (79 against 37 ms p50 at 1M chunks of real
# text, docs/benchmarks.md), more than running the lists at once saves.
_idle: list = []
# A forked child's copies of its parent's connections: kept, never closed or collected
# (closing or freeing one would end the parent's session on the shared socket).
_inherited: list = []


def _after_fork() -> None:
    """A forked child (a Celery prefork worker, a test runner) has none of its parent's
    threads: a pool taken over from the parent would queue work no thread runs; and the
    parent's idle connections are the parent's."""
    global _side_pool, _side_free, _side_lock, _idle
    _inherited.extend(_idle)
    _side_pool, _side_free, _side_lock, _idle = None, threading.BoundedSemaphore(SIDE_SLOTS), threading.Lock(), []


os.register_at_fork(after_in_child=_after_fork)


def close_side_connections() -> int:
    """Close the idle connections kept for the vector lists run at once (at exit, before a
    test database is dropped). :returns: how many were closed."""
    with _side_lock:
        idle, _idle[:] = list(_idle), []
    for wrapper in idle:
        with contextlib.suppress(DatabaseError):
            wrapper.close()
    return len(idle)


atexit.register(close_side_connections)


def _side_connection():
    """An idle side connection, or a new one (not connected yet), usable from any thread."""
    with _side_lock:
        if _idle:
            return _idle.pop()
    wrapper = connections.create_connection(DEFAULT_DB_ALIAS)
    wrapper.inc_thread_sharing()  # handed between the pool's threads, closed from any
    return wrapper


def _keep(wrapper) -> None:
    """Keep ``wrapper`` for the next side call if it still works, else close it."""
    usable = wrapper.connection is not None and not wrapper.in_atomic_block
    if usable and wrapper.errors_occurred:  # a cancelled or failed statement: does it still answer?
        usable = wrapper.is_usable()
        wrapper.errors_occurred = False
    with _side_lock:
        if usable and len(_idle) < SIDE_SLOTS:
            _idle.append(wrapper)
            return
    with contextlib.suppress(DatabaseError):
        wrapper.close()


class SideCall:
    """Jobs run on a pool thread and a connection of their own by ``step`` (jobs -> the
    jobs left after one transaction), until none are left. It holds one of the SIDE_SLOTS
    from :meth:`start` until it ends, released exactly once: by the thread that ran it,
    or by the caller when it never started."""

    def __init__(self, step: Callable[[list], list], jobs: list):
        self.left = jobs
        self._step = step
        self._lock = threading.Lock()
        self._state = "queued"  # -> "running" | "abandoned"
        self._stop = False
        self._connection = None  # the running thread's psycopg connection (to cancel it)
        self._done = threading.Event()

    @classmethod
    def start(cls, step: Callable[[list], list], jobs: list) -> SideCall | None:
        """The started side call, or None: every slot taken, or no thread to be had (the
        interpreter shutting down, a thread that could not start)."""
        global _side_pool
        if not _side_free.acquire(blocking=False):
            return None
        call = cls(step, jobs)
        try:
            with _side_lock:
                if _side_pool is None:
                    _side_pool = ThreadPoolExecutor(SIDE_SLOTS, thread_name_prefix="klea-retrieval")
                pool = _side_pool
            pool.submit(contextvars.copy_context().run, call._run)
        except RuntimeError as exc:
            logger.warning("no thread for the vector lists (%s); they run after the BM25 lists", exc)
            call.abandon()
            return None
        except BaseException:
            call.abandon()
            raise
        return call

    def abandon(self) -> None:
        """The caller no longer waits: a queued call will not run (its slot is released
        here); a running one stops after its current statement, which is cancelled."""
        with self._lock:
            queued = self._state == "queued"
            if queued:
                self._state = "abandoned"
            self._stop = True
            running = self._connection
        if queued:
            _side_free.release()
        elif running is not None:
            with contextlib.suppress(Exception):
                running.cancel_safe(timeout=1.0)

    def wait(self) -> list:
        """Wait for the jobs. :returns: those it could not run (its connection failed)."""
        self._done.wait()
        return self.left

    def _run(self) -> None:
        with self._lock:
            if self._state != "queued":
                return  # abandoned before it started: the caller released the slot
            self._state = "running"
        wrapper = _side_connection()
        connections[DEFAULT_DB_ALIAS] = wrapper  # this thread's default connection for the call
        try:
            connection.ensure_connection()
            with self._lock:
                self._connection = connection.connection
            while self.left and not self._stop:
                self.left = self._step(self.left)
        except DatabaseError as exc:  # the connection itself: refused, too many clients, lost
            logger.warning("a second connection for the vector lists failed (%s); they run after the BM25 lists",
                           str(exc).strip())
        finally:
            with self._lock:
                self._connection = None
            del connections[DEFAULT_DB_ALIAS]
            _keep(wrapper)
            self._done.set()
            _side_free.release()
