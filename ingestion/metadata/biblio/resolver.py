"""DOI -> bibliographic record through Crossref, OpenAlex and Semantic Scholar, with one
shared cache (the ``DoiRecord`` table) so no DOI is fetched twice.

Round-robin: each lookup that goes to the network starts with the next service
(Crossref, then OpenAlex, then Semantic Scholar, then Crossref again) and falls through
the others in order. A 429, a 5xx, a timeout, a connection error, a body that is not
JSON or a record without a title moves on to the next service. A service that answered
404 (or a record without a title) is not asked again for that DOI; the ones that failed
transiently are asked again in up to ``KLEA_DOI_RETRIES`` more rounds, after
``KLEA_DOI_BACKOFF * 2**n`` seconds (tenacity, capped at 30 s). "Not found" everywhere is
cached too; a lookup that only met transient failures is not, so a later run retries it.
When not one service could be connected to (no network at all), the resolver stops
asking for ``OFFLINE_PAUSE`` seconds, so an offline ingest does not wait out the
backoff for every file.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field

import httpx
from django.conf import settings
from django.db import IntegrityError, transaction
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from .doi import doi_key
from .services import SERVICES, DoiService, user_agent

logger = logging.getLogger("klea.ingestion.biblio")
MAX_BACKOFF = 30.0  # seconds between two rounds at most
# When no service could even be connected to (no network), later lookups skip the
# network for this long instead of paying the retry backoff for every PDF.
OFFLINE_PAUSE = 300.0


class _Transient(Exception):
    """Every service still pending failed in a way worth retrying."""


@dataclass
class _Tally:
    requests: int = 0
    connected: bool = False  # some service could be connected to
    # The last failure per service ("ConnectError", "answered 503"): one warning line
    # per DOI names them, not one log line per request (9 for 3 services x 3 tries).
    failures: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DoiLookup:
    """A lookup's outcome. ``record``: see :mod:`.services` (None = not found or gave up);
    ``service``: who answered; ``cached``: served from the DoiRecord table;
    ``requests``: HTTP requests this lookup sent."""

    record: dict | None
    service: str = ""
    cached: bool = False
    requests: int = 0


class DoiResolver:
    """Looks DOIs up, round-robin over ``services``, through the shared cache.

    >>> DoiResolver().resolve("10.1038/s41586-019-1666-5").record["title"]
    'Quantum supremacy using a programmable superconducting processor'
    """

    def __init__(self, services: tuple[DoiService, ...] = SERVICES):
        self.services = services
        self._turns = itertools.count()
        self._lock = threading.Lock()
        self._offline_until = 0.0

    def reset(self) -> None:
        """Start the rotation again at the first service; forget an offline pause."""
        with self._lock:
            self._turns = itertools.count()
            self._offline_until = 0.0

    def _order(self) -> list[DoiService]:
        with self._lock:
            first = next(self._turns) % len(self.services)
        return list(self.services[first:] + self.services[:first])

    def resolve(self, doi: str, *, network: bool = True) -> DoiLookup:
        """The record for ``doi`` (any case): from the cache, else (``network``) from the
        services. Never raises for network trouble: it logs one line and returns
        ``DoiLookup(None)``."""
        from ingestion.models import DoiRecord  # not at import time: apps may not be ready

        cached = DoiRecord.objects.filter(key=doi_key(doi)).first()
        if cached is not None:
            return DoiLookup(cached.record if cached.found else None, cached.service, cached=True)
        if not network or time.monotonic() < self._offline_until:
            return DoiLookup(None)
        pending = self._order()
        tally = _Tally()
        retrying = Retrying(
            stop=stop_after_attempt(1 + max(0, settings.KLEA_DOI_RETRIES)),
            wait=wait_exponential(multiplier=settings.KLEA_DOI_BACKOFF, max=MAX_BACKOFF),
            retry=retry_if_exception_type(_Transient),
        )
        headers = {"User-Agent": user_agent(), "Accept": "application/json"}
        with httpx.Client(timeout=settings.KLEA_DOI_TIMEOUT, headers=headers, follow_redirects=True) as client:
            try:
                service, record = retrying(self._round, client, doi, pending, tally)
            except RetryError:
                failures = ", ".join(f"{name} {why}" for name, why in tally.failures.items())
                pause = ""
                if not tally.connected:
                    self._offline_until = time.monotonic() + OFFLINE_PAUSE
                    pause = f"; DOI services unreachable: no lookups for {OFFLINE_PAUSE:.0f} s"
                logger.warning("DOI %s: no service answered (%s; %d requests); not cached, retried next time%s",
                               doi, failures, tally.requests, pause)
                return DoiLookup(None, requests=tally.requests)
        self._store(doi, service, record)
        return DoiLookup(record, service, requests=tally.requests)

    def _round(self, client: httpx.Client, doi: str, pending: list[DoiService], tally: _Tally):
        """Ask each pending service once, in order; the first titled record wins.

        :returns: (service name, record), or ("", None) when all answered "not found".
        :raises _Transient: no record, and some services failed transiently (they stay
            in ``pending`` for the next round).
        """
        failed: list[DoiService] = []
        for service in pending:
            tally.requests += 1
            try:
                response = client.get(service.url(doi), params=service.query(), headers=service.headers())
            except httpx.HTTPError as exc:  # timeouts, refused connections, DNS failures
                logger.debug("DOI %s: %s failed (%s)", doi, service.name, type(exc).__name__)
                tally.failures[service.name] = type(exc).__name__
                tally.connected = tally.connected or not isinstance(exc, httpx.ConnectError)
                failed.append(service)
                continue
            tally.connected = True
            if response.status_code == 429 or response.status_code >= 500:
                logger.debug("DOI %s: %s answered %s", doi, service.name, response.status_code)
                tally.failures[service.name] = f"answered {response.status_code}"
                failed.append(service)
                continue
            if response.status_code != 200:
                continue  # 404: this service does not know the DOI
            try:
                record = service.parse(response.json())
            except ValueError:
                tally.failures[service.name] = "answered no JSON"
                failed.append(service)  # not JSON: a proxy's error page
                continue
            if record:
                return service.name, record
        pending[:] = failed
        if failed:
            raise _Transient(doi)
        return "", None

    @staticmethod
    def _store(doi: str, service: str, record: dict | None) -> None:
        from ingestion.models import DoiRecord

        try:
            with transaction.atomic():
                DoiRecord.objects.get_or_create(
                    key=doi_key(doi),
                    defaults={"doi": doi, "found": record is not None, "service": service, "record": record or {}},
                )
        except IntegrityError:  # another worker stored it first
            pass


default_resolver = DoiResolver()
