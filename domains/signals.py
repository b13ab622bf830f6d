"""Signals through which other apps extend the domains app (which imports none of them).

``metadata_map_edited``: a document's metadata map (its MetadataEntry rows) was edited
in the admin, or a person asked to re-apply it. Sent by domains/admin.py with
``sender=Document`` and ``document``; a receiver brings the document's chunks up to
date (ingestion re-applies the map, ingestion/apps.py) and returns the number of chunks
whose metadata changed, which the admin reports.
"""

from django.dispatch import Signal

metadata_map_edited = Signal()


def map_edited(document) -> int:
    """Send :data:`metadata_map_edited` for ``document``. :returns: chunks changed (the
    receivers' counts summed; 0 when no app listens)."""
    from .models import Document

    responses = metadata_map_edited.send(sender=Document, document=document)
    return sum(count for _, count in responses if isinstance(count, int))
