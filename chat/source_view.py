"""The source view's HTTP endpoints (docs/api.md, "The source view"): where a cited
chunk (and the passage an answer quotes of it) is in its file, the top of a document
cited as a whole, PDF pages as images, the original file.

Access is the references' own: a chunk or document is visible when its domain is one
the user may query (:func:`domains.access.queryable_domains`) and, for a document, when
it has chunks (a file that failed to ingest, or waits for OCR, is no source); anything
else is the same 404 as an id that does not exist. Files are read from where ingestion stored
them (:mod:`domains.sources`), never from a path in the request; a quoted passage is
located on a PDF page by :mod:`domains.pdf_quotes`.
"""

from __future__ import annotations

from pathlib import Path

from django.db.models import Exists, OuterRef
from django.http import FileResponse, HttpResponse, JsonResponse

from domains.access import queryable_domains
from domains.models import Chunk, Document
from domains.pdf_quotes import quoted_boxes
from domains.sources import (
    PageUnavailable, SourceUnavailable, document_top, is_pdf, open_verified, render_page, source_file, text_section,
)
from domains.text import without_misleading

from .api import api, error

# Quoted passages a request may name (``quote`` parameters) and the characters of each
# that are read: an answer's marker quotes a few sentences.
MAX_QUOTES = 20
MAX_QUOTE_CHARS = 4000
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


def _payload(document: Document, domain: str) -> dict:
    """The keys of a source payload that describe the document."""
    return {
        "chunk_id": None,
        "document_id": document.pk,
        "file_name": document.file_name,
        "title": document.title,
        "domain": domain,
        "heading_chain": "",
        "text": "",
        "kind": "pdf" if is_pdf(document) else "text",
        "pages": None,
        "page_count": document.pages,
        "boxes": [],
        "quoted": [],
        "lines": None,
        "anchor": "",
        "section": None,
        "unavailable": None,
        **_document_urls(document),
    }


@api("GET")
def chunk_source(request, chunk_id: int):
    """``GET /api/chunks/<id>/source[?quote=<text>&quote=...]``: where the chunk is in its
    file, and for a PDF where the quoted passages are (``quote``: the text an answer's
    marker quotes of the chunk, verbatim; at most MAX_QUOTES of MAX_QUOTE_CHARS each).

    :returns: 200 ``{"chunk_id", "document_id", "file_name", "title", "domain",
        "heading_chain", "text", "kind" ("pdf" | "text"), "pages", "page_count",
        "boxes" ([[page, left, top, right, bottom]], fractions of the page), "quoted"
        (boxes of the quoted passages on the page's text layer, one per line; [] when
        none is asked for or one cannot be located there), "lines", "anchor", "section"
        ({"first", "last", "lines", "highlight"} | null), "unavailable" ({"code",
        "message"} | null), "page_url", "file_url"}``;
        404 not_found for a chunk that is missing or in a domain the user may not query.
    """
    chunk = _visible_chunk(request.user, chunk_id)
    if chunk is None:
        return error(404, "not_found", f"no chunk {chunk_id}")
    provenance = chunk.provenance or {}
    payload = {
        **_payload(chunk.document, chunk.store.domain.name),
        "chunk_id": chunk.pk,
        "heading_chain": chunk.heading_chain,
        "text": chunk.text,
        "pages": provenance.get("pages"),
        "boxes": provenance.get("boxes", []),
        "lines": provenance.get("lines"),
        "anchor": provenance.get("anchor", ""),
    }
    quotes = [quote[:MAX_QUOTE_CHARS] for quote in request.GET.getlist("quote")[:MAX_QUOTES]]
    try:
        if payload["kind"] == "pdf":
            source_file(chunk.document)
            payload["quoted"] = quoted_boxes(chunk, quotes)
        elif payload["lines"]:
            payload["section"] = text_section(chunk)
    except SourceUnavailable as exc:
        payload["unavailable"] = {"code": exc.code, "message": str(exc)}
    return JsonResponse(payload)


@api("GET")
def document_source(request, document_id: int):
    """``GET /api/documents/<id>/source``: the top of a document cited as a whole (an
    answer from its metadata: who wrote it, when it was published).

    :returns: 200 the shape of :func:`chunk_source` with ``chunk_id`` null, no boxes
        and, for a PDF, ``"pages": [1, 1]``; for a text source ``section`` holds its
        first lines with ``"highlight": null``; 404 not_found as :func:`document_page`.
    """
    document = _visible_document(request.user, document_id)
    if document is None:
        return error(404, "not_found", f"no document {document_id}")
    payload = _payload(document, document.store.domain.name)
    try:
        if payload["kind"] == "pdf":
            source_file(document)
            payload["pages"] = [1, 1]
        else:
            payload["section"] = document_top(document)
    except SourceUnavailable as exc:
        payload["unavailable"] = {"code": exc.code, "message": str(exc)}
    return JsonResponse(payload)


@api("GET")
def document_page(request, document_id: int, page: int):
    """``GET /api/documents/<id>/pages/<n>?width=<px>``: page n (1-based) as a JPEG, at
    the smallest of 480, 800, 1200, 1600 pixels that is at least ``width`` wide.

    :returns: 200 image/jpeg (``X-Klea-Page-Cache``: hit or miss); 400 bad_request (a
        width that is not a number); 404 not_found (no such document for this user, not
        a PDF, or no such page); 410 source_missing / source_changed; 422
        page_too_complex (pdfium took longer than KLEA_PAGE_TIMEOUT to draw it).
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
    except PageUnavailable as exc:
        return error(422, exc.code, str(exc))
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
    return FileResponse(handle, as_attachment=True, filename=without_misleading(Path(document.file_name).name))
