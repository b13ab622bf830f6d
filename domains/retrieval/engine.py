"""The single entry point of retrieval: :func:`retrieve`.

Per routed domain and per store: one ranked list per mode (vector, keyword), fused by
RRF, blended with recency, cut to k per domain and to the reference-material budget.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from django.conf import settings
from django.db import DatabaseError

from domains import embeddings
from domains.models import Chunk, Domain
from domains.text import normalize_text

from .fusion import reciprocal_rank_fusion
from .keyword import keyword_search, query_lexemes
from .recency import blend_recency
from .types import RetrievalResult, RetrievedChunk
from .vector import vector_search

logger = logging.getLogger("klea.retrieval")

# Each ranked list is fetched this deep (at least) before fusion: RRF needs agreement
# between lists, which a list cut at k rarely shows.
LIST_DEPTH = 50
# Each chunk costs len(text) + CHUNK_OVERHEAD characters of the budget (headers, metadata).
CHUNK_OVERHEAD = 200


def _load(chunk_ids: list[int]) -> dict[int, Chunk]:
    rows = Chunk.objects.filter(id__in=chunk_ids).select_related("document", "store__domain")
    return {row.id: row for row in rows}


def _domain_lists(domain: Domain, query_vector: np.ndarray, lexemes: list[str], k: int) -> dict:
    lists = {}
    for store in domain.stores.all():
        if store.uses_vector:
            lists[f"{store.name}:vector"] = vector_search(store.id, query_vector, k, domain.min_relevance)
        if store.uses_bm25:
            lists[f"{store.name}:bm25"] = keyword_search(store.id, lexemes, k)
    return lists


def apply_budget(per_domain: list[list[RetrievedChunk]], max_chars: int) -> list[RetrievedChunk]:
    """Take chunks round-robin across domains while the budget lasts.

    A chunk costs ``len(text) + 200``; the first chunk that does not fit ends that
    domain's turn for good (lower-ranked chunks are not used to fill gaps).
    """
    taken: list[RetrievedChunk] = []
    used = 0
    queues = [list(chunks) for chunks in per_domain]
    open_queues = [True] * len(queues)
    while any(open_queues):
        for i, queue in enumerate(queues):
            if not open_queues[i]:
                continue
            if not queue:
                open_queues[i] = False
                continue
            cost = len(queue[0].text) + CHUNK_OVERHEAD
            if used + cost > max_chars:
                open_queues[i] = False
                continue
            taken.append(queue.pop(0))
            used += cost
    return taken


def retrieve(
    query: str | Sequence[str],
    domains: Sequence[Domain],
    *,
    k: int | None = None,
    filters: dict | None = None,
    max_chars: int | None = None,
) -> RetrievalResult:
    """Search the stores of ``domains`` for ``query``.

    :param query: one search query, or several (their ranked lists are fused together).
    :param domains: the routed domains (inactive ones are skipped).
    :param k: chunks kept per domain; defaults to each domain's ``default_k``.
    :param filters: metadata filter in the filter DSL (applied per domain to the fields
        it declares); not applied yet by this first engine.
    :param max_chars: reference budget (KLEA_MAX_REFS_SIZE, 20,000 characters).
    :returns: RetrievalResult; ``retrieval_failed`` with ``error`` when a store could not
        be searched (the other stores' hits are still returned).
    """
    text = normalize_text(query if isinstance(query, str) else " ".join(query))
    result = RetrievalResult()
    if not text:
        return result
    max_chars = settings.KLEA_MAX_REFS_SIZE if max_chars is None else max_chars
    query_vector = embeddings.embed_query(text)
    result.keywords = query_lexemes(text)
    per_domain: list[list[RetrievedChunk]] = []
    for domain in domains:
        if not domain.active:
            continue
        domain_k = k or domain.default_k
        try:
            lists = _domain_lists(domain, query_vector, result.keywords, max(LIST_DEPTH, domain_k))
        except DatabaseError as exc:
            logger.exception("retrieval failed for domain %s", domain.name)
            result.retrieval_failed = True
            result.error = f"domain {domain.name}: {exc}"
            continue
        fused = reciprocal_rank_fusion(lists)
        rows = _load([cid for cid, _, _ in fused])
        chunks = [
            RetrievedChunk(
                chunk_id=cid,
                text=rows[cid].text,
                headings=list(rows[cid].headings),
                metadata=rows[cid].metadata,
                file_name=rows[cid].document.file_name,
                document_id=rows[cid].document_id,
                store=rows[cid].store.name,
                domain=domain.name,
                year=rows[cid].year,
                score=score,
                source_scores=sources,
            )
            for cid, score, sources in fused
            if cid in rows
        ]
        per_domain.append(blend_recency(chunks)[:domain_k])
    result.results = apply_budget(per_domain, max_chars)
    return result
