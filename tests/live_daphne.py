"""A real daphne server in a subprocess on a free loopback port, on the test database.

It is started like ``make run`` starts it (the same daphne websocket cap), with the
extractive backend and the in-memory channel layer, and is handed over once ``/health``
says it is ready (its embedding models loaded), as a load balancer would.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection

from domains import embedded_postgres

# The Makefile's DAPHNE_ARGS (WS_PROTOCOL_MAX = 8 MiB).
WS_PROTOCOL_MAX = 8 * 1024 * 1024
DAPHNE_ARGS = ["--websocket-max-message-size", str(WS_PROTOCOL_MAX), "--websocket-max-frame-size",
               str(WS_PROTOCOL_MAX)]
# The one line a healthy server logs on its own (domains/embeddings.py, start_warm_up).
READY_LOG = re.compile(r" INFO klea\.embeddings: embedding models ready in \d+\.\d s$")
START_SECONDS = 300  # the models load in 5 s on a quiet machine, in minutes on a crowded one


def database_url() -> str:
    """DATABASE_URL of the database this process uses (the test database in tests)."""
    return embedded_postgres.database_url(connection.settings_dict)


@contextmanager
def celery_on_redis(url: str, **conf):
    """This process's Celery app sends tasks to the Redis at ``url`` (not eager), with the
    extra ``conf``; the Redis database is flushed before and after, the app restored after.
    Yields the Redis client. A missing Redis is an error, never a skip."""
    from klea_site.celery import app

    client = redis.Redis.from_url(url)
    client.ping()
    client.flushdb()
    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", *conf)}
    app.conf.update(broker_url=url, task_always_eager=False, **conf)
    app._pool = None
    app.amqp._producer_pool = None
    try:
        yield client
    finally:
        app.conf.update(saved)
        app._pool = None
        app.amqp._producer_pool = None
        client.flushdb()


def wait_for(condition, what: str, seconds: float, interval: float = 0.1):
    """Poll ``condition()`` until it returns a true value (returned); fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out waiting for {what}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveDaphne:
    """``with LiveDaphne(log_path, **env) as server: server.url`` (http://127.0.0.1:port)."""

    def __init__(self, log: Path, ready_status: int = 200, **env: str):
        """``env`` values override the environment (None unsets a variable).

        :param ready_status: the /health status that means "started" (503: no database);
        with 200, the server must also say ``"ready": true`` unless ``KLEA_WARM_START="false"``
        (for servers that answer no question: they load no model)."""
        self.log = log
        self.ready_status = ready_status
        self.wait_ready = env.get("KLEA_WARM_START", "true") != "false"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": "",
            "KLEA_LLM_BACKEND": "extractive",
            "KLEA_RAG_GUARD_MODEL": "",
            "KLEA_EMBEDDING_CACHE_DIR": str(settings.KLEA_EMBEDDING_CACHE_DIR),
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,  # the test process's: its session cookies work
            **env,
        }
        self.env = {name: value for name, value in self.env.items() if value is not None}  # None: unset
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> LiveDaphne:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), *DAPHNE_ARGS,
                   "klea_site.asgi:application"]
        self.process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=self.env, stdout=self.log.open("ab"),
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited ({self.process.returncode}): {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
                    status, ready = response.status, json.loads(response.read())["ready"]
            except urllib.error.HTTPError as exc:
                status, ready = exc.code, None
            except OSError:
                time.sleep(0.2)
                continue
            if status == self.ready_status == 200 and self.wait_ready and not ready:
                time.sleep(0.2)
                continue
            if status == self.ready_status:
                return self
            raise RuntimeError(f"/health answered {status}, expected {self.ready_status}")
        self.__exit__()
        raise RuntimeError(f"daphne did not answer /health in {START_SECONDS} s: {self.log.read_text()[-2000:]}")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
