"""The three DOI services: request URL and the answer normalised to one record shape.

Record shape (every key optional except ``title``): ``title`` str, ``authors``
list[str], ``year`` int, ``journal`` str, ``keywords`` list[str].

- Crossref REST API: ``GET {KLEA_CROSSREF_URL}/works/{doi}`` -> ``{"message": {...}}``.
- OpenAlex: ``GET {KLEA_OPENALEX_URL}/works/doi:{doi}`` -> a Work object.
- Semantic Scholar Graph API: ``GET {KLEA_SEMANTIC_SCHOLAR_URL}/graph/v1/paper/DOI:{doi}
  ?fields=title,authors,year,venue,journal`` -> a Paper object.

The DOI is percent-encoded once (``/`` kept) in every path.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Callable

from django.conf import settings

from .doi import quote_doi
from .names import COLLABORATION, fix_caps

PRODUCT = "Klea/1.0"
DESCRIPTION = "self-hosted retrieval-augmented generation server"
_TAGS = re.compile(r"<[^>]+>")


def _text(value) -> str:
    """A string with JATS/HTML tags and entities removed, white space collapsed."""
    if isinstance(value, list):
        value = value[0] if value else ""
    return " ".join(html.unescape(_TAGS.sub("", str(value or ""))).split())


def _person(name: str) -> str:
    """A person's name with capitals normalised; collaborations kept as written."""
    if COLLABORATION.search(name or ""):
        return _text(name)
    return " ".join(fix_caps(w) for w in _text(name).split())


def _record(title, authors, year, journal, keywords=()) -> dict | None:
    record: dict = {"title": _text(title)}
    if not record["title"]:
        return None
    names = [a for a in authors if a]
    if names:
        record["authors"] = names
    if isinstance(year, int) and 1000 < year < 3000:
        record["year"] = year
    if _text(journal):
        record["journal"] = _text(journal)
    words = [_text(k) for k in keywords if _text(k)]
    if words:
        record["keywords"] = words
    return record


def _crossref(payload: dict) -> dict | None:
    work = payload.get("message", payload) if isinstance(payload, dict) else {}
    # "name" holds an organisation (kept as written); persons come as given + family.
    authors = [
        _text(a["name"]) if a.get("name") else _person(" ".join(p for p in (a.get("given"), a.get("family")) if p))
        for a in work.get("author") or []
    ]
    year = None
    # The printed issue's year first: that is how the article is cited.
    for key in ("published-print", "issued", "published-online", "published", "created"):
        parts = (work.get(key) or {}).get("date-parts") or [[None]]
        if parts and parts[0] and isinstance(parts[0][0], int):
            year = parts[0][0]
            break
    return _record(work.get("title"), authors, year, work.get("container-title"))


def _openalex(payload: dict) -> dict | None:
    work = payload if isinstance(payload, dict) else {}
    authors = [
        _person((a.get("author") or {}).get("display_name") or a.get("raw_author_name") or "")
        for a in work.get("authorships") or []
    ]
    source = ((work.get("primary_location") or {}).get("source") or {}).get("display_name")
    keywords = [k.get("display_name", "") for k in work.get("keywords") or [] if isinstance(k, dict)]
    return _record(work.get("title") or work.get("display_name"), authors, work.get("publication_year"), source, keywords)


def _semanticscholar(payload: dict) -> dict | None:
    paper = payload if isinstance(payload, dict) else {}
    authors = [_person(a.get("name", "")) for a in paper.get("authors") or []]
    journal = (paper.get("journal") or {}).get("name") or paper.get("venue")
    return _record(paper.get("title"), authors, paper.get("year"), journal)


@dataclass(frozen=True)
class DoiService:
    """One service: ``name``, the setting holding its base URL, the path template
    (``{doi}`` = the encoded DOI), fixed query parameters and the record parser."""

    name: str
    base_setting: str
    path: str
    parse: Callable[[dict], dict | None]
    params: tuple[tuple[str, str], ...] = ()
    polite: bool = False  # send KLEA_INGEST_MAILTO as ?mailto=

    def url(self, doi: str) -> str:
        base = str(getattr(settings, self.base_setting)).rstrip("/")
        return base + self.path.format(doi=quote_doi(doi))

    def query(self) -> dict[str, str]:
        query = dict(self.params)
        if self.polite and settings.KLEA_INGEST_MAILTO:
            query["mailto"] = settings.KLEA_INGEST_MAILTO
        return query

    def headers(self) -> dict[str, str]:
        if self.name == "semanticscholar" and settings.KLEA_SEMANTIC_SCHOLAR_API_KEY:
            return {"x-api-key": settings.KLEA_SEMANTIC_SCHOLAR_API_KEY}
        return {}


SERVICES = (
    DoiService("crossref", "KLEA_CROSSREF_URL", "/works/{doi}", _crossref, polite=True),
    DoiService("openalex", "KLEA_OPENALEX_URL", "/works/doi:{doi}", _openalex, polite=True),
    DoiService(
        "semanticscholar",
        "KLEA_SEMANTIC_SCHOLAR_URL",
        "/graph/v1/paper/DOI:{doi}",
        _semanticscholar,
        params=(("fields", "title,authors,year,venue,journal"),),
    ),
)


def user_agent() -> str:
    """``Klea/1.0 (...; mailto:<KLEA_INGEST_MAILTO>)``: names the product and, when set,
    the contact (Crossref's etiquette asks for both)."""
    mailto = settings.KLEA_INGEST_MAILTO
    return f"{PRODUCT} ({DESCRIPTION}; mailto:{mailto})" if mailto else f"{PRODUCT} ({DESCRIPTION})"
