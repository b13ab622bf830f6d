"""A chunk's neighbours in its document (by ``Chunk.ordinal``): the text a retrieved
chunk runs on into (a lead-in whose list, table or code block opens the next chunk), and
the text before it (a chunk cut inside a sentence resumes it)."""

from __future__ import annotations

from django.db.models import Q

from domains.models import Chunk

Neighbours = dict[int, tuple[int, str]]


def neighbour_chunks(next_of: dict[int, int], previous_of: dict[int, int]) -> tuple[Neighbours, Neighbours]:
    """The next chunk of each chunk in ``next_of`` and the previous chunk of each chunk in
    ``previous_of``, read together.

    :param next_of: chunk id -> the id of its document, for chunks whose next chunk
        (ordinal + 1) is wanted; ``previous_of`` likewise for the previous chunk (ordinal - 1).
        A pair that names no stored chunk of that document (a result of a user-written
        knowledge numbered its own way) is left out.
    :returns: (next chunks, previous chunks), each chunk id -> ``(id, text)`` of its
        neighbour; a chunk last (first) in its document is absent. Two queries whatever
        the number of chunks; none when both mappings are empty.
    """
    documents = {**next_of, **previous_of}
    if not documents:
        return {}, {}
    stored = Chunk.objects.filter(id__in=list(documents)).values_list("id", "document_id", "ordinal")
    at: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (document, ordinal) -> [(chunk id, step)]
    for chunk_id, document, ordinal in stored:
        if documents[chunk_id] != document:
            continue
        for step, wanted in ((1, next_of), (-1, previous_of)):
            if chunk_id in wanted:
                at.setdefault((document, ordinal + step), []).append((chunk_id, step))
    found: tuple[Neighbours, Neighbours] = ({}, {})
    if not at:
        return found
    where = Q()
    for document, ordinal in at:
        where |= Q(document_id=document, ordinal=ordinal)
    for neighbour_id, document, ordinal, text in Chunk.objects.filter(where).values_list(
            "id", "document_id", "ordinal", "text"):
        for chunk_id, step in at[(document, ordinal)]:
            found[0 if step == 1 else 1][chunk_id] = (neighbour_id, text)
    return found
