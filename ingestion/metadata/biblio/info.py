"""The pdf-info tier (the PDF Info dictionary) and the docling tier (a converted
DoclingDocument's title item, page headers/footers, hyperlinks and origin URI).

Info values are often junk: a file name as Title (``Microsoft Word - 02. 206.doc``,
``paper.dvi``), a job code (``ipg1300180a``), the DOI or the arXiv stamp, the
uploader or the publisher as Author. Junk is ignored, and when page one has text the
Title must match its words and each Author name must be printed there.
"""

from __future__ import annotations

import re
import unicodedata

from .doi import find_dois, normalize_doi
from .fields import arxiv_id, is_junk_title, is_title_text, urls_in
from .names import split_author_field

MIN_CHECK_CHARS = 200  # page one needs this much text to check Info values against it
TITLE_WORDS_PRINTED = 0.8  # share of the Info Title's words that page one must print


def fold(text: str) -> str:
    """Lower case, accents and punctuation removed, white space dropped: for "is it
    printed on the page" checks that ignore spacing (``C.K. Law`` = ``C. K. Law``)."""
    text = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode().lower()
    return re.sub(r"[\W_]+", "", text)


def _title_printed(title: str, page: str) -> bool:
    words = re.findall(r"[^\W\d_]{3,}", title.lower())
    folded = fold(page)
    return bool(words) and sum(fold(w) in folded for w in words) >= TITLE_WORDS_PRINTED * len(words)


def info_fields(info: dict, page_text: str = "", file_stem: str = "") -> tuple[dict, bool]:
    """Fields from the Info dictionary ``info`` (``Title``, ``Author``, ``Subject``,
    ``Keywords`` as pypdfium2 returns them).

    :param page_text: the text of page one, to check Title and Author against.
    :param file_stem: the file name without extension (a Title equal to it is junk).
    :returns: (fields, complete): fields ``title``, ``authors``, ``keywords``, ``doi``,
        ``url_arxiv`` when found; complete is True when Title, Author and Keywords all
        held valid values.
    """
    out: dict = {}
    checkable = len((page_text or "").strip()) >= MIN_CHECK_CHARS
    title = " ".join(str(info.get("Title") or "").split())
    if title and not is_junk_title(title, file_stem) and (not checkable or _title_printed(title, page_text)):
        out["title"] = title
    names = split_author_field(str(info.get("Author") or ""))
    if checkable:
        names = [n for n in names if fold(n) in fold(page_text)]
    if names:
        out["authors"] = names
    keywords = [k.strip(" .") for k in re.split(r"\s*[;,]\s*", str(info.get("Keywords") or "")) if k.strip(" .")]
    if keywords:
        out["keywords"] = keywords
    for key in ("Subject", "Title", "Keywords"):
        dois = find_dois(str(info.get(key) or "")) or []
        doi = dois[0].doi if dois else normalize_doi(str(info.get(key) or ""))
        if doi:
            out["doi"] = doi
            break
    arxiv = arxiv_id(f"{info.get('Title') or ''} {info.get('Subject') or ''}")
    if arxiv:
        out["url_arxiv"] = f"https://arxiv.org/abs/{arxiv}"
    return out, all(k in out for k in ("title", "authors", "keywords"))


def _label(item) -> str:
    label = getattr(item, "label", "")
    return str(getattr(label, "value", label))


def _on_page_one(item) -> bool:
    prov = getattr(item, "prov", None) or []
    return not prov or getattr(prov[0], "page_no", 1) == 1


def docling_fields(document) -> dict:
    """Fields from a docling ``DoclingDocument``: ``title`` (its title item), ``doi`` (a
    doi.org hyperlink or a DOI in a page header/footer of page one), ``urls`` (other
    hyperlinks on page one and the origin URI).

    Reference-list items are skipped: their DOIs and links are cited works.
    """
    out: dict = {}
    urls: list[str] = []
    origin = getattr(document, "origin", None)
    uri = str(getattr(origin, "uri", "") or "")
    if uri.lower().startswith("http"):
        urls.append(uri)
    for item in getattr(document, "texts", []) or []:
        label = _label(item)
        if label == "reference" or not _on_page_one(item):
            continue
        text = str(getattr(item, "text", "") or "")
        if label == "title" and "title" not in out and is_title_text(text):
            out["title"] = " ".join(text.split())
        link = str(getattr(item, "hyperlink", "") or "")
        if link:
            doi = normalize_doi(link) if "doi.org/" in link.lower() else None
            if doi:
                out.setdefault("doi", doi)
            else:
                urls.extend(urls_in(link))
        if label in ("page_header", "page_footer") and "doi" not in out:
            dois = find_dois(text)
            if dois:
                out["doi"] = dois[0].doi
    if urls:
        out["urls"] = list(dict.fromkeys(urls))
    return out
