"""Which chunks of a paper (a PDF) retrieval hands over: its body before its front matter
and reference list, and its abstract when the paper fills the results.

A paper's affiliations, bylines and reference list name people, places and titles that
match questions on anything: three of the eight chunks of "What did Fischer, Lynch and
Paterson show ...?" were reference lists (:func:`body_first`). Its abstract states the
results that its body spreads over many chunks in other words: asked for GW150914's
masses, distance or signal-to-noise ratio, all eight chunks were body chunks of the
paper, which name "GW150914" where the abstract never does (:func:`with_abstract`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from django.db import connection

from domains.front_matter import body_share

from .types import RetrievedChunk

# Under this share of body text a PDF's chunk is front matter or reference list.
BODY_SHARE = 0.5
# The abstract: the first chunk of the paper with at least this much text, mostly body
# text, among its first ABSTRACT_WITHIN chunks.
ABSTRACT_CHARS = 400
ABSTRACT_WITHIN = 4


def _paper(chunk: RetrievedChunk) -> bool:
    return chunk.file_name.lower().endswith(".pdf")


def body_first(chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """``chunks`` (best first) with those of PDFs that are mostly front matter or reference
    entries (body share under :data:`BODY_SHARE`, :func:`domains.front_matter.body_share`)
    after the others, each part in its order."""
    return sorted(chunks, key=lambda c: _paper(c) and body_share(c.text) < BODY_SHARE)  # stable


def _abstract_id(document_id: int) -> int | None:
    """The id of the paper's abstract chunk (see :data:`ABSTRACT_CHARS`), or None."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, text FROM domains_chunk WHERE document_id = %s ORDER BY ordinal LIMIT %s",
                       [document_id, ABSTRACT_WITHIN])
        rows = cursor.fetchall()
    return next((cid for cid, text in rows if len(text) >= ABSTRACT_CHARS and body_share(text) >= BODY_SHARE), None)


def with_abstract(top: list[RetrievedChunk], fill: Callable[[list[RetrievedChunk]], list[RetrievedChunk]]
                  ) -> list[RetrievedChunk]:
    """``top`` (one domain's results) with the abstract of the paper that holds at least
    half of them in place of its last one, when the abstract is not among them. One or two
    queries, only then."""
    counts = Counter(c.document_id for c in top if _paper(c))
    if not counts:
        return top
    document_id, held = counts.most_common(1)[0]
    if held < max(2, len(top) / 2):
        return top
    abstract = _abstract_id(document_id)
    if abstract is None or any(c.chunk_id == abstract for c in top):
        return top
    last = max(i for i, c in enumerate(top) if c.document_id == document_id)
    replaced = top[last]
    chunk = RetrievedChunk(chunk_id=abstract, text="", headings=[], metadata={}, file_name="", document_id=0,
                           store="", domain=replaced.domain, year=replaced.year, score=replaced.score,
                           source_scores={})
    filled = fill([chunk])
    return top if not filled else [*top[:last], filled[0], *top[last + 1:]]
