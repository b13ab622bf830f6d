"""A table held by another transaction, for tests of what waits on it."""

from __future__ import annotations

import contextlib
import threading

from django.db import connections, transaction


@contextlib.contextmanager
def table_locked(table: str, hold_seconds: float):
    """Another connection (on a thread of its own) holds ``table`` in ACCESS EXCLUSIVE mode
    while the block runs, at most ``hold_seconds``; the lock is taken before the block starts.

    :raises AssertionError: the lock was not taken within 10 s.
    """
    locked, done = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic(), connections["default"].cursor() as cursor:
                cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
                locked.set()
                done.wait(hold_seconds)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        yield
    finally:
        done.set()
        holder.join()
