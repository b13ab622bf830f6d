"""Committed rows for the websocket and browser tests: users, a group, three small
domains (one restricted to the group).

Websocket consumers and the daphne subprocess read the database from other threads or
processes, so these rows must be committed, not left in the test's rolled-back
transaction. A transactional test would flush every table afterwards, the session-wide
documentation domains (conftest.py) included; so the tests are ordinary ``django_db``
tests (which makes pytest-django create the test database) and the rows are written and
deleted from a thread of their own, on its own autocommit connection.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.db import connections
from django.test import Client

from chat.models import ChatSession
from domains.models import Domain

from .pipeline_data import ARRAYS, ARRAYS_DESCRIPTION, NEURO, NEURO_DESCRIPTION, make_domain

PASSWORD = "correct horse battery staple"
SECRET_TEXT = "The Zorblax protein folds in seven minutes at room temperature in the basement lab."
SECRET = {"zorblax.md": ({"title": "Zorblax folding notes"}, [(["Notes", "Folding"], SECRET_TEXT)])}
DOMAINS = ("wsneuro", "wsarrays", "wssecret")
USERS = ("ws-alice", "ws-bob")
GROUP = "ws-lab"
ORIGIN = b"http://127.0.0.1"


@dataclass
class World:
    alice: User  # member of GROUP: may query wssecret
    bob: User  # not a member
    domains: dict[str, Domain]


def cleanup(first_session_id: int) -> None:
    Domain.objects.filter(name__in=DOMAINS).delete()
    User.objects.filter(username__in=USERS).delete()
    Group.objects.filter(name=GROUP).delete()
    ChatSession.objects.filter(pk__gt=first_session_id, owner__isnull=True).delete()


def in_thread(function, *args):
    """``function(*args)`` on a new thread's own (autocommit) connection: committed at once."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # re-raised in the caller
            outcome["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


@contextmanager
def group_domain(root: Path, name: str, description: str) -> Iterator[None]:
    """The files of ``root`` ingested (committed) as domain ``name`` with store
    ``<name>-store``, open to GROUP only; removed with its jobs and staged files after."""

    def create():
        from ingestion.runs.ingest import ingest

        Domain.objects.filter(name=name).delete()
        domain = Domain.objects.create(name=name, description=description)
        domain.allowed_groups.add(Group.objects.get(name=GROUP))
        return ingest(root, f"{name}-store", name, mirror=True)

    def remove():
        from ingestion.models import IngestionJob, StagedFile

        Domain.objects.filter(name=name).delete()
        IngestionJob.objects.filter(arguments__directory=str(root)).delete()
        StagedFile.objects.filter(directory=str(root)).delete()

    in_thread(create)
    try:
        yield
    finally:
        in_thread(remove)


def _create() -> tuple[int, World]:
    last = ChatSession.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    cleanup(last)  # rows a crashed earlier run may have left
    group = Group.objects.create(name=GROUP)
    alice = User.objects.create_user("ws-alice", password=PASSWORD)
    alice.groups.add(group)
    bob = User.objects.create_user("ws-bob", password=PASSWORD)
    domains = {
        "wsneuro": make_domain("wsneuro", NEURO_DESCRIPTION, NEURO,
                               fields=[("year", "int", False), ("authors", "string", True)]),
        "wsarrays": make_domain("wsarrays", ARRAYS_DESCRIPTION, ARRAYS),
        "wssecret": make_domain("wssecret", "Secret lab notes on protein folding times.", SECRET),
    }
    domains["wssecret"].allowed_groups.add(group)
    return last, World(alice, bob, domains)


@pytest.fixture
def world(db):
    """The committed rows, deleted afterwards."""
    last, created = in_thread(_create)
    try:
        yield created
    finally:
        in_thread(cleanup, last)


def session_cookie(user: User) -> str:
    """A signed-in Django session for ``user`` (committed): the ``sessionid`` cookie value."""

    def login():
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    return in_thread(login)


def ws_headers(cookie: str | None = None) -> list[tuple[bytes, bytes]]:
    headers = [(b"origin", ORIGIN), (b"host", b"127.0.0.1")]
    if cookie:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    return headers
