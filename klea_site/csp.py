"""The Content-Security-Policy header of the HTML pages (docs/security.md).

Every script and style sheet of the chat, the sign-in and token pages and the admin is a
static file of the site, so the policy lets the browser run scripts from the site only:
no inline script, no ``eval``, no other host. Should an answer, a title or a file name
ever get markup past the Markdown sanitiser, it still could not run code or load
anything from elsewhere. Style *attributes* stay allowed (``style-src-attr``): the
sanitised Markdown keeps ``style="text-align: ..."`` on table cells, and the pages set
sizes from script. ``<style>`` elements are allowed too ('unsafe-inline' in
``style-src-elem``): the admin's change list writes one (Django's own template); styles
cannot run code. Images may also be ``data:`` URLs (the admin's widgets), connections
go to the site itself (the chat's websocket: 'self' covers ws: and wss: of the same
host), and no page may be framed (``frame-ancestors 'none'``, as X-Frame-Options DENY
says to older browsers; the chat's source view is a dialog, not a frame). Responses that are not HTML (JSON, PDF files, page images) get no header.
"""

from __future__ import annotations

from django.utils.deprecation import MiddlewareMixin

POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "style-src-elem 'self' 'unsafe-inline'",
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds :data:`POLICY` as ``Content-Security-Policy`` to ``text/html`` responses that
    have none (a view may set its own). A MiddlewareMixin, so async views (``/v1/``
    streams) stay async."""

    def process_response(self, request, response):
        if response.get("Content-Type", "").startswith("text/html"):
            response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
