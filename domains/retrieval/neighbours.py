"""A chunk's neighbours in its document (by ``Chunk.ordinal``): the text a retrieved
chunk runs on into (a lead-in whose list, table or code block opens the next chunk), and
the text before it (a chunk cut inside a sentence resumes it)."""

from __future__ import annotations

from django.db.models import Q

from domains.models import Chunk


def next_chunks(chunks: dict[int, int]) -> dict[int, tuple[int, str]]:
    """Per chunk id, the next chunk of its document (ordinal + 1) as ``(id, text)``.

    :param chunks: chunk id -> the id of its document, as retrieval gave them; a pair
        that names no stored chunk of that document (a result of a user-written knowledge
        numbered its own way) is left out, as are chunks last in their document.
    Two queries whatever the number of chunks; none for an empty mapping.
    """
    return _neighbours(chunks, 1)


def previous_chunks(chunks: dict[int, int]) -> dict[int, tuple[int, str]]:
    """Per chunk id, the previous chunk of its document (ordinal - 1) as ``(id, text)``;
    as :func:`next_chunks` (chunks first in their document are absent)."""
    return _neighbours(chunks, -1)


def _neighbours(chunks: dict[int, int], step: int) -> dict[int, tuple[int, str]]:
    if not chunks:
        return {}
    stored = Chunk.objects.filter(id__in=list(chunks)).values_list("id", "document_id", "ordinal")
    at = {(document, ordinal + step): chunk_id for chunk_id, document, ordinal in stored
          if chunks[chunk_id] == document}
    if not at:
        return {}
    wanted = Q()
    for document, ordinal in at:
        wanted |= Q(document_id=document, ordinal=ordinal)
    rows = Chunk.objects.filter(wanted).values_list("id", "document_id", "ordinal", "text")
    return {at[(document, ordinal)]: (chunk_id, text) for chunk_id, document, ordinal, text in rows}
