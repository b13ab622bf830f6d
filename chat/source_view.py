"""The source view's HTTP endpoints (docs/api.md, "The source view"): where a cited
chunk is in its file, PDF pages as images, the original file.

Access is the references' own: a chunk or document is visible when its domain is one
the user may query (:func:`domains.access.queryable_domains`) and, for a document, when
it has chunks (a file that failed to ingest, or waits for OCR, is no source); anything
else is the same 404 as an id that does not exist. Files are read from where ingestion stored
them (:mod:`domains.sources`), never from a path in the request.
"""

from __future__ import annotations

from pathlib import Path

from django.db.models import Exists, OuterRef
from django.http import FileResponse, HttpResponse, JsonResponse

from domains.access import queryable_domains
from domains.models import Chunk, Document
from domains.sources import SourceUnavailable, is_pdf, open_verified, render_page, source_file, text_section

from .api import api, error

# Rendered pages change only with the file (the URL's document is re-ingested under a
# new content hash): browsers may keep them a day.
PAGE_MAX_AGE = 86400


def _visible_chunk(user, chunk_id: int) -> Chunk | None:
    return (
        Chunk.objects.select_related("document", "store__domain")
        .filter(pk=chunk_id, store__domain__in=queryable_domains(user))
        .first()
    )


def _visible_document(user, document_id: int) -> Document | None:
    return (
        Document.objects.select_related("store__domain")
        .filter(pk=document_id, store__domain__in=queryable_domains(user))
        .filter(Exists(Chunk.objects.filter(document=OuterRef("pk"))))
        .first()
    )


def _document_urls(document: Document) -> dict:
    return {
        "page_url": f"/api/documents/{document.pk}/pages/" if is_pdf(document) else None,
        "file_url": f"/api/documents/{document.pk}/file",
    }


@api("GET")
def chunk_source(request, chunk_id: int):
    """``GET /api/chunks/<id>/source``: where the chunk is in its file.

    :returns: 200 ``{"chunk_id", "document_id", "file_name", "title", "domain",
        "heading_chain", "text", "kind" ("pdf" | "text"), "pages", "page_count",
        "boxes" ([[page, left, top, right, bottom]], fractions of the page), "lines",
        "anchor", "section" ({"first", "last", "lines", "highlight"} | null),
        "unavailable" ({"code", "message"} | null), "page_url", "file_url"}``;
        404 not_found for a chunk that is missing or in a domain the user may not query.
    """
    chunk = _visible_chunk(request.user, chunk_id)
    if chunk is None:
        return error(404, "not_found", f"no chunk {chunk_id}")
    document, provenance = chunk.document, chunk.provenance or {}
    payload = {
        "chunk_id": chunk.pk,
        "document_id": document.pk,
        "file_name": document.file_name,
        "title": document.title,
        "domain": chunk.store.domain.name,
        "heading_chain": chunk.heading_chain,
        "text": chunk.text,
        "kind": "pdf" if is_pdf(document) else "text",
        "pages": provenance.get("pages"),
        "page_count": document.pages,
        "boxes": provenance.get("boxes", []),
        "lines": provenance.get("lines"),
        "anchor": provenance.get("anchor", ""),
        "section": None,
        "unavailable": None,
        **_document_urls(document),
    }
    try:
        if payload["kind"] == "pdf":
            source_file(document)
        elif payload["lines"]:
            payload["section"] = text_section(chunk)
    except SourceUnavailable as exc:
        payload["unavailable"] = {"code": exc.code, "message": str(exc)}
    return JsonResponse(payload)


@api("GET")
def document_page(request, document_id: int, page: int):
    """``GET /api/documents/<id>/pages/<n>?width=<px>``: page n (1-based) as a JPEG, at
    the smallest of 480, 800, 1200, 1600 pixels that is at least ``width`` wide.

    :returns: 200 image/jpeg (``X-Klea-Page-Cache``: hit or miss); 400 bad_request (a
        width that is not a number); 404 not_found (no such document for this user, not
        a PDF, or no such page); 410 source_missing / source_changed.
    """
    document = _visible_document(request.user, document_id)
    if document is None:
        return error(404, "not_found", f"no document {document_id}")
    try:
        width = int(request.GET.get("width") or 0)
    except ValueError:
        return error(400, "bad_request", "width must be a whole number of pixels")
    try:
        image = render_page(document, page, width)
    except ValueError as exc:
        return error(404, "not_found", str(exc))
    except SourceUnavailable as exc:
        return error(410, exc.code, str(exc))
    response = HttpResponse(image.data, content_type="image/jpeg")
    response["Cache-Control"] = f"private, max-age={PAGE_MAX_AGE}"
    response["X-Klea-Page-Cache"] = "hit" if image.cached else "miss"
    return response


@api("GET")
def document_file(request, document_id: int):
    """``GET /api/documents/<id>/file``: the original file, as a download named like
    the document, only with the bytes that were ingested (whatever now sits at the
    source path is never served). 404 not_found as :func:`document_page` (also for a
    document without chunks: one that failed to ingest is not a source); 410
    source_missing / source_changed."""
    document = _visible_document(request.user, document_id)
    if document is None:
        return error(404, "not_found", f"no document {document_id}")
    try:
        handle = open_verified(document)
    except SourceUnavailable as exc:
        return error(410, exc.code, str(exc))
    return FileResponse(handle, as_attachment=True, filename=Path(document.file_name).name)
