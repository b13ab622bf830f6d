"""A chunk's neighbours in its document (by ``Chunk.ordinal``): the text a retrieved
chunk runs on into (a lead-in whose list, table or code block opens the next chunk)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from domains.models import Chunk


def next_chunks(chunk_ids: Iterable[int | None]) -> dict[int, tuple[int, str]]:
    """Per chunk id, the next chunk of its document (ordinal + 1) as ``(id, text)``.

    Two queries whatever the number of ids. Ids that are None or unknown, and chunks
    last in their document, are absent from the result.
    """
    ids = [chunk_id for chunk_id in chunk_ids if chunk_id is not None]
    if not ids:
        return {}
    at = {(document, ordinal + 1): chunk_id
          for chunk_id, document, ordinal in Chunk.objects.filter(id__in=ids).values_list("id", "document_id", "ordinal")}
    if not at:
        return {}
    wanted = Q()
    for document, ordinal in at:
        wanted |= Q(document_id=document, ordinal=ordinal)
    rows = Chunk.objects.filter(wanted).values_list("id", "document_id", "ordinal", "text")
    return {at[(document, ordinal)]: (chunk_id, text) for chunk_id, document, ordinal, text in rows}
