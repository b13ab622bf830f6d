"""The bibliographic cascade: five tiers, most authoritative first, each filling only the
fields the tiers above left empty (docs/bibliography.md, "The cascade").

1. ``doi-service``: the record of the DOI found by the tiers below (Crossref, OpenAlex,
   Semantic Scholar; :mod:`.resolver`).
2. ``pdf-info``: the PDF Info dictionary (:func:`.info.info_fields`).
3. ``docling``: a converted DoclingDocument, when the caller has one.
4. ``layout-regex``: the printed lines of page one (:mod:`.layout_tier`).
5. ``regex``: plain text of the first pages (:mod:`.text_tier`).

For a scan, tiers 4 and 5 read the OCR lines and text of its first pages, and ``ocr`` is
listed in ``_sources`` after them.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium
from django.conf import settings

from ingestion.convert.textclean import page_text

from .doi import doi_url
from .info import fold, docling_fields, info_fields
from .layout import PageLayout, first_page_layout, lines_layout
from .layout_tier import layout_fields
from .resolver import default_resolver
from .text_tier import text_fields

logger = logging.getLogger("klea.ingestion.biblio")

FIELDS = ("title", "authors", "keywords", "year", "journal", "doi")
FIRST_PAGES = 2  # pages of PDF text the regex tier reads
MAX_URLS = 3  # url_1..url_3 (map-lint warns above 5 url keys)
# pdfium is not thread-safe: one PDF at a time per process.
_PDFIUM = threading.Lock()


@dataclass
class _PdfContent:
    info: dict = field(default_factory=dict)
    layout: PageLayout | None = None
    text: str = ""  # first pages, cleaned


def _read_pdf(path: Path) -> _PdfContent:
    """Info dictionary, page-one layout and first-pages text; empty (with one log line)
    when the file cannot be read."""
    with _PDFIUM:
        try:
            pdf = pdfium.PdfDocument(str(path))
        except (pdfium.PdfiumError, OSError) as exc:
            logger.warning("%s: not read for bibliographic metadata (%s)", path.name, exc)
            return _PdfContent()
        try:
            pages = min(FIRST_PAGES, len(pdf))
            return _PdfContent(
                info=pdf.get_metadata_dict(skip_empty=True),
                layout=first_page_layout(pdf),
                text="\n".join(page_text(pdf[i].get_textpage().get_text_range()) for i in range(pages)),
            )
        except pdfium.PdfiumError as exc:
            logger.warning("%s: page one not read for bibliographic metadata (%s)", path.name, exc)
            return _PdfContent()
        finally:
            pdf.close()


def _surnames(names: list[str]) -> set[str]:
    return {fold(n.split()[-1]) for n in names if n.split()}


def _check_info_authors(tiers: list[tuple[str, dict]]) -> None:
    """Info ``Author`` often names only the first or submitting author: when page one
    prints a byline, the Info names are kept only if they are the same people."""
    info = dict(tiers).get("pdf-info", {})
    byline = next((f["authors"] for name, f in tiers if name in ("layout-regex", "regex") and f.get("authors")), None)
    if info.get("authors") and byline and _surnames(info["authors"]) != _surnames(byline):
        del info["authors"]


def _merge(tiers: list[tuple[str, dict]], complete: bool) -> dict:
    out: dict = {}
    urls: list[str] = []
    labelled: dict[str, str] = {}
    sources: list[str] = []
    for name, found in tiers:
        contributed = False
        for key in FIELDS:
            if key not in out and found.get(key):
                out[key] = found[key]
                contributed = True
        for url in found.get("urls", []):
            if url not in urls and len(urls) < MAX_URLS:
                urls.append(url)
                contributed = True
        if found.get("url_arxiv") and "url_arxiv" not in labelled:
            labelled["url_arxiv"] = found["url_arxiv"]
            contributed = True
        if contributed:
            sources.append(name)
    out = {key: out[key] for key in FIELDS if key in out}
    for number, url in enumerate(urls, start=1):
        out[f"url_{number}"] = url
    out.update(labelled)
    if "doi" in out:
        out["url_doi"] = doi_url(out["doi"])
    out["_metadata_complete"] = complete
    out["_sources"] = sources
    return out


def offline_tiers(
    pdf_path: Path,
    *,
    first_pages_text: str | None = None,
    docling_document=None,
    ocr_page_one: tuple[list, float] | None = None,
) -> tuple[list[tuple[str, dict]], bool]:
    """The tiers that read the file alone (Info dictionary, docling, layout, regex): no
    network, no database, so the conversion child runs them under its time and memory
    limits (docs/security.md, "Hostile documents"). Arguments as :func:`extract_bibliography`.

    :returns: ([(tier name, fields)] in tier order, whether the Info dictionary is complete).
    """
    path = Path(pdf_path)
    pdf = _read_pdf(path)
    if ocr_page_one is not None:
        pdf.layout = lines_layout(*ocr_page_one)
    text = first_pages_text if first_pages_text and first_pages_text.strip() else pdf.text
    page_one = "\n".join(ln.text for ln in pdf.layout.lines) if pdf.layout else text
    info, info_complete = info_fields(pdf.info, page_one, path.stem)
    tiers: list[tuple[str, dict]] = [("pdf-info", info)]
    if docling_document is not None:
        tiers.append(("docling", docling_fields(docling_document)))
    if pdf.layout is not None:
        tiers.append(("layout-regex", layout_fields(pdf.layout)))
    tiers.append(("regex", text_fields(text)))
    _check_info_authors(tiers)
    return tiers, info_complete and "authors" in info


def extract_bibliography(
    pdf_path: Path,
    *,
    first_pages_text: str | None = None,
    docling_document=None,
    network: bool | None = None,
    ocr_page_one: tuple[list, float] | None = None,
    offline: tuple[list[tuple[str, dict]], bool] | None = None,
) -> dict:
    """The DEFAULT metadata-map entry of one PDF, from the five-tier cascade.

    Works from the PDF file alone (pypdfium2: Info dictionary, page-one lines with font
    sizes and positions, text of the first two pages); what a converter already produced
    can be passed in.

    :param pdf_path: the PDF file.
    :param first_pages_text: text of the first pages from the converter (Markdown or
        plain, e.g. OCR output); the regex tier reads it instead of the PDF's text layer.
    :param docling_document: a docling ``DoclingDocument`` of the file (its title item,
        page headers/footers, hyperlinks and origin URI are used).
    :param network: look DOIs up in Crossref/OpenAlex/Semantic Scholar; None = the
        ``KLEA_DOI_NETWORK`` setting. Cached records are used either way.
    :param ocr_page_one: page one of a scan as OCR lines and the page height in points
        (``ConvertedDocument.metadata["ocr"]["page_one"]``): the layout tier reads them
        instead of the text layer, and ``_sources`` ends with ``ocr`` when the layout
        or regex tier contributed.
    :param offline: what :func:`offline_tiers` returned for this file (the conversion
        child computes it, ``ConvertedDocument.metadata["bibliography_tiers"]``); None =
        computed here.
    :returns: a dict with, when found, ``title`` (str), ``authors`` (list[str]),
        ``keywords`` (list[str]), ``year`` (int), ``journal`` (str), ``doi`` (str, as
        printed), ``url_1``.. (str, up to 3), ``url_arxiv`` and ``url_doi``
        (``https://doi.org/<doi>``); always ``_metadata_complete`` (bool: a DOI record
        with title, authors and year, or an Info dictionary with valid Title, Author and
        Keywords) and ``_sources`` (list of tier names that contributed, in tier order:
        ``doi-service``, ``pdf-info``, ``docling``, ``layout-regex``, ``regex``).

    Never raises for a bad PDF or network trouble: an unreadable file logs one line and
    yields what the other inputs give (possibly only the two ``_`` keys).
    """
    if offline is None:
        offline = offline_tiers(pdf_path, first_pages_text=first_pages_text, docling_document=docling_document,
                                ocr_page_one=ocr_page_one)
    tiers, complete = [(name, dict(found)) for name, found in offline[0]], offline[1]
    doi = next((found["doi"] for _, found in tiers if found.get("doi")), None)
    if doi:
        use_network = settings.KLEA_DOI_NETWORK if network is None else network
        lookup = default_resolver.resolve(doi, network=use_network)
        if lookup.record:
            tiers.insert(0, ("doi-service", {**lookup.record, "doi": doi}))
            complete = complete or all(lookup.record.get(k) for k in ("title", "authors", "year"))
    merged = _merge(tiers, complete)
    if ocr_page_one is not None and {"layout-regex", "regex"} & set(merged["_sources"]):
        merged["_sources"].append("ocr")
    return merged
