"""Keep credentials out of what people and logs see (docs/security.md).

Configured URLs may carry ``user:password@`` and query strings with tokens
(``?key=...``); messages name a server by :func:`public_url` only, and texts that may
quote a configured value (driver and HTTP client errors) pass :func:`scrub` first.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "[secret]"
# Shorter values are not masked (masking "1" or "true" would destroy the text).
MIN_SECRET_CHARS = 4


def public_url(url: str) -> str:
    """``https://user:pw@host:8080/v1?key=x#f`` -> ``https://host:8080/v1``; "" for ""."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all: say nothing about it
        return "(invalid URL)"
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment=""))


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that may be secret: its user info (raw and decoded, whole
    and the password alone) and its query string."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    userinfo = parts.netloc.rpartition("@")[0]
    password = userinfo.partition(":")[2]
    values = [userinfo, password, unquote(password), parts.query]
    return [v for v in values if v]


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (longest first) replaced by ``[secret]``."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
