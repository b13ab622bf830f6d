"""The single entry point of retrieval: :func:`retrieve`.

Per routed domain, per store, per search query: one ranked list per mode (vector,
bm25), filtered in SQL before ranking; all lists of a domain are fused (RRF by
default), blended with recency, cut to k per domain, then to the reference-material
budget round-robin across domains.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from domains import embeddings
from domains.models import Domain, Store
from domains.text import normalize_text, strip_unsafe

from . import side_lists
from .budget import apply_budget
from .acronyms import acronym_definitions, asked_acronym
from .bm25 import bm25_search, query_lexemes
from .definitions import CANDIDATES, asked_subjects, definition_chunks
from .filters import compile_filter, field_specs
from .fusion import FUSION_METHODS, fuse
from .papers import body_first, with_abstract
from .recency import blend_recency
from .types import RetrievalResult, RetrievedChunk
from .vector import vector_search

logger = logging.getLogger("klea.retrieval")

# Each ranked list is fetched this deep (at least k) before fusion: RRF needs agreement
# between lists, which a list cut at k rarely shows.
LIST_DEPTH = 50
MODES = ("vector", "bm25")
# A query asking what a term is ("What is a domain in Klea?") or what an acronym stands
# for ("What does LEMS stand for?") puts up to this many chunks of each domain that
# define it or spell it out first (domains/retrieval/definitions.py, acronyms.py): they
# answer it, and the ranked lists may put them far down.
DEFINING_CHUNKS = 3
# The ranked chunks are read this many times k deep, so that a paper's front matter and
# reference lists can go after its body (domains/retrieval/papers.py).
BODY_READ = 2


def _queries(query: str | Sequence[str]) -> list[str]:
    raw = [query] if isinstance(query, str) else list(query)
    out: list[str] = []
    for text in raw:
        text = normalize_text(strip_unsafe(str(text)))
        if text and text not in out:
            out.append(text)
    return out


def _years(chunk_ids: list[int]) -> dict[int, int | None]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, year FROM domains_chunk WHERE id = ANY(%s)", [chunk_ids])
        return dict(cursor.fetchall())


_ROWS = """
SELECT c.id, c.text, c.headings, c.metadata, c.document_id, d.file_name, s.name, c.provenance
FROM domains_chunk c JOIN domains_document d ON d.id = c.document_id JOIN domains_store s ON s.id = c.store_id
WHERE c.id = ANY(%s)
"""


def _fill(chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """Load text, headings, metadata, provenance and file of the chunks that survived the cut
    (one query; plain SQL because the ORM's row building was a third of the latency)."""
    with connection.cursor() as cursor:
        cursor.execute(_ROWS, [[c.chunk_id for c in chunks]])
        rows = {row[0]: row for row in cursor.fetchall()}
    filled = []
    for chunk in chunks:
        if chunk.chunk_id not in rows:  # deleted meanwhile
            continue
        _, text, headings, metadata, document_id, file_name, store, provenance = rows[chunk.chunk_id]
        if isinstance(metadata, str):  # Django's psycopg set-up loads jsonb as text
            metadata = json.loads(metadata)
        if isinstance(provenance, str):
            provenance = json.loads(provenance)
        chunk.text, chunk.headings, chunk.metadata = text, list(headings or []), metadata or {}
        chunk.provenance = provenance or {}
        chunk.document_id, chunk.file_name, chunk.store = document_id, file_name, store
        filled.append(chunk)
    return filled


@contextlib.contextmanager
def _read_only():
    """The statements of one retrieve(): a transaction of their own (a savepoint inside a
    caller's), each statement cancelled after KLEA_RETRIEVAL_STATEMENT_TIMEOUT seconds
    (QueryCanceled; no bound when 0), rolled back at the end: retrieve() only reads, and
    the settings it makes transaction-local (statement_timeout, vector.py's
    hnsw.ef_search) end with it, with no statement to put them back."""
    seconds = settings.KLEA_RETRIEVAL_STATEMENT_TIMEOUT
    with transaction.atomic():
        if seconds and seconds > 0:
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [f"{max(1, round(seconds * 1000))}ms"])
        yield
        transaction.set_rollback(True)


# PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout (query_canceled).
QUERY_CANCELED = "57014"


def _failure_kind(exc: Exception) -> str:
    """What users see of a failed list: the error's class, or ``statement timeout``."""
    if getattr(exc.__cause__, "sqlstate", None) == QUERY_CANCELED:
        return "statement timeout"
    return type(exc).__name__


class _Search:
    """The state of one retrieve() call shared by its domains."""

    def __init__(self, queries: list[str], modes: tuple[str, ...], vectors: np.ndarray | None = None):
        self.queries = queries
        self.modes = modes
        self.lexemes = [query_lexemes(q) for q in queries] if "bm25" in modes else [[] for _ in queries]
        self.acronyms = list(dict.fromkeys(a for a in map(asked_acronym, queries) if a))
        self.subjects = list(dict.fromkeys(s for q in queries for s in asked_subjects(q)))
        self._vectors = vectors

    @property
    def vectors(self) -> np.ndarray:
        if self._vectors is None:
            self._vectors = embeddings.embed_queries(self.queries)
        return self._vectors

    def store_lists(self, store: Store, domain: Domain, where, depth: int, mode: str) -> list[tuple[str, list]]:
        """The ranked lists of one (store, mode), one per query."""
        label = f"{store.name}:{mode}"
        if mode == "vector":
            return [
                (label, vector_search(store.id, vector, depth, domain.min_relevance, where=where,
                                      restore_settings=False).hits)
                for vector in self.vectors
            ]
        # queries that differ only in stop words or word forms share one search (and its
        # list still counts once per query in the fusion)
        found: dict[frozenset, list] = {}
        for lexemes in self.lexemes:
            if frozenset(lexemes) not in found:
                found[frozenset(lexemes)] = bm25_search(store.id, lexemes, depth, where=where)
        return [(label, found[frozenset(lexemes)]) for lexemes in self.lexemes]

    def defining(self, store: Store, where, k: int) -> list[int]:
        """The store's chunks that spell out an acronym or define a term a query asks
        about (read through its BM25 index: none for a store without one, or when BM25
        is not searched)."""
        if not (store.uses_bm25 and "bm25" in self.modes):
            return []
        return ([cid for acronym in self.acronyms for cid in acronym_definitions(acronym, store.id, k, where=where)]
                + [cid for subject in self.subjects for cid in definition_chunks(subject, store.id, k, where=where)])

    def store_modes(self, store: Store) -> list[str]:
        allowed = {"vector": store.uses_vector, "bm25": store.uses_bm25}
        return [mode for mode in self.modes if allowed[mode]]


def retrieve(
    query: str | Sequence[str],
    domains: Sequence[Domain],
    *,
    k: int | None = None,
    filters: dict | None = None,
    max_chars: int | None = None,
    stores: Sequence[str] | None = None,
    modes: Sequence[str] | None = None,
    fusion: str | None = None,
    depth: int | None = None,
    query_vectors: Sequence[np.ndarray] | None = None,
) -> RetrievalResult:
    """Search the stores of ``domains`` for one or several queries.

    :param query: one search query, or several (all their ranked lists are fused).
    :param domains: the routed Domain instances (inactive ones are skipped).
    :param k: chunks kept per domain; defaults to each domain's ``default_k``.
    :param filters: filter DSL (domains/retrieval/filters.py), applied per domain to
        the fields it declares, before ranking.
    :param max_chars: reference budget (KLEA_MAX_REFS_SIZE, 20,000 characters).
    :param stores: only these store names (default: all stores of each domain).
    :param modes: subset of ("vector", "bm25") (default both, as each store allows).
    :param fusion: "rrf" or "convex", overriding each domain's ``fusion``.
    :param depth: length of each ranked list before fusion (default max(50, k)).
    :param query_vectors: the queries' embeddings when the caller already has them
        (one per query, in order); computed here otherwise.
    :returns: RetrievalResult: chunks best first per domain after the budget cut;
        ``keywords`` = the BM25 lexemes of all queries; ``retrieval_failed`` with
        ``error`` when a store could not be searched (the other stores' hits are
        still returned); a statement over KLEA_RETRIEVAL_STATEMENT_TIMEOUT seconds
        fails its list as ``statement timeout``.
    :raises ValueError: a malformed filter (naming the field), an unknown mode or
        fusion method, ``k`` not a positive integer, an unknown store name.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError("k must be a positive integer")
    unknown = set(modes or ()) - set(MODES)
    if unknown:
        raise ValueError(f"unknown retrieval mode(s) {sorted(unknown)}; allowed: {', '.join(MODES)}")
    if fusion is not None and fusion not in FUSION_METHODS:
        raise ValueError(f"unknown fusion method {fusion!r}; allowed: {', '.join(FUSION_METHODS)}")
    result = RetrievalResult()
    queries = _queries(query)
    if not queries:
        return result
    if query_vectors is not None and len(query_vectors) != len(queries):
        raise ValueError(f"{len(query_vectors)} query vectors for {len(queries)} distinct non-empty queries")
    active = [d for d in domains if d.active]
    if stores is not None:
        stores = [stores] if isinstance(stores, str) else list(stores)
        known = {s.name for d in active for s in d.stores.all()}
        missing = sorted(set(stores) - known)
        if missing:
            raise ValueError(f"unknown store(s) {missing}: not stores of the domains searched")
    try:
        # a domain's declared fields are read only when there is a filter to compile
        compiled = {d.pk: compile_filter(filters, field_specs(d) if filters else {}, prefix=f"f{d.pk}_")
                    for d in active}
        for domain in active:
            for name in compiled[domain.pk].dropped:
                result.dropped_filters.setdefault(name, []).append(domain.name)
        search = _Search(queries, tuple(modes or MODES), None if query_vectors is None else np.asarray(query_vectors))
        for lexemes in search.lexemes:
            result.keywords += [lex for lex in lexemes if lex not in result.keywords]
        jobs = [
            _Job(domain, store, mode, compiled[domain.pk], depth or max(LIST_DEPTH, _k(k, domain)))
            for domain in active for store in _stores(domain, stores) for mode in search.store_modes(store)
        ]
        lists = _Lists()
        step = _in_one_transaction(search, lists)
        hybrid = {job.mode for job in jobs} == set(MODES)
        side = None
        if hybrid and side_lists.wanted({job.store.id for job in jobs}):
            side = side_lists.SideCall.start(step, [(i, job) for i, job in enumerate(jobs) if job.mode == "vector"])
        try:
            pending = [(i, job) for i, job in enumerate(jobs) if side is None or job.mode != "vector"]
            if side is not None:
                # This connection's lists in transactions ended before waiting: its locks
                # held while the side connection waits behind a DDL request queued between
                # them would be a lock cycle PostgreSQL cannot see (the wait is in Python).
                while pending:
                    pending = step(pending)
                pending = side.wait()  # the vector lists it could not run (no connection)
                result.lists_at_once, side = not pending, None
            while True:
                # A failed list aborts the transaction: it is rolled back and the lists after
                # the failed one run in a new one (a savepoint per list cost two statements
                # each, a fifth of a hybrid search's round trips).
                with _read_only():
                    pending, failed = _run_lists(search, pending, lists)
                    if failed:
                        continue
                    per_domain = [
                        _top(domain, lists.of(domain, jobs), _k(k, domain), fusion or domain.fusion,
                             _defining(search, domain, compiled[domain.pk], stores))
                        for domain in active
                    ]
                    break
        finally:
            if side is not None:  # an exception (KeyboardInterrupt, a database error): stop it
                side.abandon()
            lists.report(result)
    except DatabaseError as exc:  # the database as a whole, not one list
        logger.exception("retrieval failed")
        message = f"database: {exc}".strip()
        result.retrieval_failed = True
        result.error = f"{result.error}; {message}" if result.error else message
        result.failures.append(f"database: {_failure_kind(exc)}")
        return result
    result.results = apply_budget(per_domain, settings.KLEA_MAX_REFS_SIZE if max_chars is None else max_chars)
    return result


def _k(k: int | None, domain: Domain) -> int:
    return k if k is not None else domain.default_k


def _stores(domain: Domain, names: list[str] | None) -> list[Store]:
    rows = domain.stores.all()
    return list(rows if names is None else rows.filter(name__in=names))


@dataclass
class _Job:
    """The ranked lists of one (domain, store, mode): one per query."""

    domain: Domain
    store: Store
    mode: str
    where: object
    depth: int


class _Lists:
    """The ranked lists of one retrieve() and its failed lists, by job position (each
    position written by one thread only), so that both are read in job order whichever
    thread ran them."""

    def __init__(self):
        self.found: dict[int, list[tuple[str, list]]] = {}
        self.failed: dict[int, tuple[str, str]] = {}

    def of(self, domain: Domain, jobs: list[_Job]) -> list[tuple[str, list]]:
        """The lists of ``domain``, in job order (as when they run one after the other)."""
        return [found for i, job in enumerate(jobs) if job.domain.pk == domain.pk for found in self.found.get(i, [])]

    def report(self, result: RetrievalResult) -> None:
        """The failures into ``result``, in job order."""
        for position in sorted(self.failed):
            message, failure = self.failed[position]
            result.retrieval_failed = True
            result.error = f"{result.error}; {message}" if result.error else message
            result.failures.append(failure)


def _run_lists(search: _Search, jobs: list[tuple[int, _Job]], lists: _Lists) -> tuple[list[tuple[int, _Job]], bool]:
    """Run ``jobs`` ((position, job) pairs) in order, their lists into ``lists``, until one fails.

    :returns: (the jobs after the failed one, True), or ([], False) when none failed;
        a failure is noted in ``lists`` and leaves the transaction aborted.
    """
    for i, (position, job) in enumerate(jobs):
        store, domain, mode = job.store, job.domain, job.mode
        try:
            lists.found[position] = search.store_lists(store, domain, job.where, job.depth, mode)
        except (DatabaseError, embeddings.EmbeddingError) as exc:
            logger.exception("%s search failed for store %s of domain %s", mode, store.name, domain.name)
            lists.failed[position] = (f"{store.name}:{mode} (domain {domain.name}): {exc}".strip(),
                                      f"{store.name}:{mode} (domain {domain.name}): {_failure_kind(exc)}")
            return jobs[i + 1:], True
    return [], False


def _in_one_transaction(search: _Search, lists: _Lists) -> Callable[[list], list]:
    """A step that runs jobs in one transaction until one fails (rolled back) and returns
    the jobs after it: run again until none are left (the side thread's too)."""
    def step(jobs: list[tuple[int, _Job]]) -> list[tuple[int, _Job]]:
        with _read_only():
            return _run_lists(search, jobs, lists)[0]
    return step


def _defining(search: _Search, domain: Domain, where, names: list[str] | None) -> list[int]:
    if not (search.acronyms or search.subjects):
        return []
    return [cid for store in _stores(domain, names) for cid in search.defining(store, where, CANDIDATES)]


def _top(domain: Domain, lists: list[tuple[str, list]], k: int, fusion: str,
         first: Sequence[int] = ()) -> list[RetrievedChunk]:
    """One domain's lists fused, blended with recency, cut to ``k`` and filled. Of the
    chunks in ``first`` (those defining what a query asks about), DEFINING_CHUNKS lead,
    with the best blended score: those the lists ranked, in their order, then the others."""
    fused = fuse(lists, fusion, domain.fusion_alpha)
    order = {cid: i for i, (cid, _, _) in enumerate(fused)}
    lead = sorted(dict.fromkeys(first), key=lambda cid: (order.get(cid, len(order)), cid))[:DEFINING_CHUNKS]
    sources = {cid: scores for cid, _, scores in fused}
    years = _years([cid for cid, _, _ in fused] + lead)

    def chunk(cid: int, score: float) -> RetrievedChunk:
        return RetrievedChunk(chunk_id=cid, text="", headings=[], metadata={}, file_name="", document_id=0, store="",
                              domain=domain.name, year=years[cid], score=score, source_scores=sources.get(cid, {}))

    ranked = blend_recency([chunk(cid, score) for cid, score, _ in fused if cid in years and cid not in lead])
    best = ranked[0].score if ranked else 1.0
    leading = [chunk(cid, best) for cid in lead if cid in years]
    filled = _fill(leading + ranked[:max(0, k - len(leading)) * BODY_READ])  # one query
    first = {c.chunk_id for c in leading}
    top = ([c for c in filled if c.chunk_id in first] + body_first([c for c in filled if c.chunk_id not in first]))[:k]
    return with_abstract(top, _fill)

