"""Client input for the websocket and the HTTP API: JSON decoding and query fields.

One set of rules for both (docs/api.md): JSON that is not JSON or nests too deeply is
``bad_json``; text, titles and filter strings with a NUL character or a lone surrogate
(``"\\ud800"``) are refused with ``bad_request`` naming the field (never stripped); a
question longer than KLEA_MAX_QUESTION_CHARS and a filter list of more than
MAX_FILTER_VALUES values are ``too_large`` (docs/security.md).
"""

from __future__ import annotations

import json
import sys

from django.conf import settings

from domains.retrieval.filters import MAX_FILTER_VALUES
from domains.text import blank, refused

# Filter DSL objects nest this deep at most (the compiler allows 8 levels of $and).
MAX_FILTER_DEPTH = 20


class BadRequest(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def decode_json(raw: str | bytes):
    """Parse client JSON.

    :raises BadRequest: ``bad_json`` saying what and where, e.g. ``not valid JSON
        (expecting property name enclosed in double quotes at line 1, column 2)``, ``not
        valid JSON: nested too deeply``, ``not valid JSON: not UTF-8 text``, ``not valid
        JSON: a number of more than 4300 digits``."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise BadRequest("bad_json", "not valid JSON: nested too deeply") from None
    except json.JSONDecodeError as exc:
        what = exc.msg[:1].lower() + exc.msg[1:]
        raise BadRequest("bad_json", f"not valid JSON ({what} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError:  # bytes that are not UTF-8 (or UTF-16/32) text
        raise BadRequest("bad_json", "not valid JSON: not UTF-8 text") from None
    except ValueError:  # an integer longer than Python converts (it was told "not UTF-8 text")
        raise BadRequest("bad_json", f"not valid JSON: a number of more than {sys.get_int_max_str_digits()} "
                                     "digits") from None


def check_text(name: str, text: str) -> str:
    """:raises BadRequest: ``bad_request`` naming the field ``name``."""
    if refused(text):
        raise BadRequest("bad_request", f'"{name}" contains a NUL character or a lone surrogate')
    return text


def check_filters(filters: dict) -> dict:
    """Walk the filter object (without recursion): no unsafe string, bounded depth, no
    list of more than MAX_FILTER_VALUES values (``$in``, ``$contains``, ``$and``)."""
    stack = [(filters, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_FILTER_DEPTH:
            raise BadRequest("bad_request", f'"filters" nests more than {MAX_FILTER_DEPTH} levels')
        if isinstance(value, dict):
            for key, item in value.items():
                check_text("filters", key)
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            if len(value) > MAX_FILTER_VALUES:
                raise BadRequest("too_large", f'"filters" has a list of {len(value)} values; '
                                 f"the limit is {MAX_FILTER_VALUES}")
            stack += [(item, depth + 1) for item in value]
        elif isinstance(value, str):
            check_text("filters", value)
    return filters


def check_question(name: str, text: str) -> str:
    """A question (or search query) of any transport, stripped.

    :raises BadRequest: ``bad_request`` (NUL, lone surrogate), ``too_large`` (longer than
        KLEA_MAX_QUESTION_CHARS), naming the field ``name``.
    """
    text = check_text(name, text).strip()
    if len(text) > settings.KLEA_MAX_QUESTION_CHARS:
        raise BadRequest("too_large", f'"{name}" has {len(text)} characters; '
                         f"the limit is {settings.KLEA_MAX_QUESTION_CHARS} (KLEA_MAX_QUESTION_CHARS)")
    return text


def parse_query(content: dict) -> dict:
    """Check a query's fields. :returns: ``{"text", "session", "domains", "filters"}``.
    :raises BadRequest: ``bad_request`` naming the wrong field."""
    text = content.get("text")
    if not isinstance(text, str) or blank(text):
        raise BadRequest("bad_request", '"text" must be a non-empty string')
    text = check_question("text", text)
    session = content.get("session")
    if session is not None and (not isinstance(session, int) or isinstance(session, bool)):
        raise BadRequest("bad_request", '"session" must be a session id (integer) or null')
    domains = content.get("domains")
    if domains is not None and (not isinstance(domains, list) or not all(isinstance(d, str) for d in domains)):
        raise BadRequest("bad_request", '"domains" must be a list of domain names')
    for name in domains or ():
        check_text("domains", name)
    filters = content.get("filters")
    if filters is not None and not isinstance(filters, dict):
        raise BadRequest("bad_request", '"filters" must be an object (the filter DSL)')
    if filters:
        check_filters(filters)
    return {"text": text, "session": session, "domains": domains, "filters": filters or None}


def parse_title(body: dict, required: bool, max_chars: int) -> str:
    """A session title from a JSON body. :raises BadRequest: not a string, unsafe text."""
    title = body.get("title", None if required else "")
    if not isinstance(title, str):
        raise BadRequest("bad_request", '"title" must be a string')
    check_text("title", title)
    return " ".join(title.split())[:max_chars]
