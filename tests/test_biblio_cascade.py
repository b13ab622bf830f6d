"""extract_bibliography on PDFs written at test time: tier precedence, _sources,
_metadata_complete, url_doi and url labels, the article's own DOI, bylines, rotated
pages, bad files; the DOI tier against local fake services (real HTTP)."""

import logging

import pytest
from docling_core.types.doc import DocItemLabel, DoclingDocument
from docling_core.types.doc.document import DocumentOrigin

from bench.fake_doi_services import FakeDoiServices
from ingestion.metadata.biblio import extract_bibliography
from ingestion.metadata.biblio.resolver import default_resolver
from tests.biblio_pdfs import Line, Run, article, line, write_pdf

DOI = "10.1234/jt.2019.001"
HEADER = "Journal of Testing 12 (2019) 1-10"
KEYWORDS = "Keywords: alpha; beta gamma; delta"
TITLE = "A Study of Synthetic Test Documents"
AUTHORS = ["Ada Lovelace", "Alan Turing", "Grace Hopper"]
RECORD = {
    "title": "A study of synthetic test documents: the journal version",
    "authors": ["Ada Lovelace", "Alan M. Turing", "Grace B. Hopper"],
    "year": 2020,
    "journal": "Journal of Testing",
}


def two_line_title():
    return ("A Study of Synthetic", "Test Documents")


@pytest.fixture
def paper(tmp_path):
    """A journal article: header citation line, two-line title, byline with raised
    affiliation marks, keywords, DOI in the footer, junk Info dictionary."""
    return write_pdf(
        tmp_path / "paper.pdf",
        [article(title=two_line_title(), header=HEADER, footer=f"doi:{DOI}", keywords=KEYWORDS)],
        info={"Title": "Microsoft Word - draft.doc", "Author": "Admin", "Creator": "Word"},
    )


@pytest.fixture
def fakes(settings, db):
    services = FakeDoiServices({DOI: RECORD}).start()
    for name, value in services.settings().items():
        setattr(settings, name, value)
    settings.KLEA_DOI_TIMEOUT = 2.0  # a scripted timeout costs this; a loaded machine must still answer within it
    settings.KLEA_DOI_RETRIES = 0
    settings.KLEA_DOI_BACKOFF = 0
    settings.KLEA_INGEST_MAILTO = "ingest@example.org"
    default_resolver.reset()
    yield services
    services.stop()


def test_offline_tiers_fill_the_default_entry(paper, db):
    out = extract_bibliography(paper, network=False)
    assert out == {
        "title": TITLE,
        "authors": AUTHORS,
        "keywords": ["alpha", "beta gamma", "delta"],
        "year": 2019,
        "journal": "Journal of Testing",
        "doi": DOI,
        "url_doi": f"https://doi.org/{DOI}",
        "_metadata_complete": False,
        "_sources": ["layout-regex", "regex"],
    }
    assert list(out) == ["title", "authors", "keywords", "year", "journal", "doi", "url_doi",
                         "_metadata_complete", "_sources"]


def test_doi_service_comes_first_and_lower_tiers_fill_only_what_it_left(paper, fakes):
    out = extract_bibliography(paper, network=True)
    assert out == {
        "title": "A study of synthetic test documents: the journal version",
        "authors": ["Ada Lovelace", "Alan M. Turing", "Grace B. Hopper"],
        "keywords": ["alpha", "beta gamma", "delta"],
        "year": 2020,
        "journal": "Journal of Testing",
        "doi": DOI,
        "url_doi": f"https://doi.org/{DOI}",
        "_metadata_complete": True,
        "_sources": ["doi-service", "regex"],
    }
    assert fakes.services_asked() == ["crossref"]


def test_second_extraction_sends_zero_requests(paper, fakes, tmp_path):
    first = extract_bibliography(paper, network=True)
    copy = tmp_path / "copy.pdf"
    copy.write_bytes(paper.read_bytes())
    again = [extract_bibliography(paper, network=True), extract_bibliography(copy)]
    assert len(fakes.seen) == 1
    assert again == [first, first]


def test_network_none_means_the_setting(paper, fakes, settings):
    settings.KLEA_DOI_NETWORK = False
    offline = extract_bibliography(paper)
    assert (fakes.seen, offline["_sources"], offline["year"]) == ([], ["layout-regex", "regex"], 2019)
    settings.KLEA_DOI_NETWORK = True
    online = extract_bibliography(paper)
    assert (fakes.services_asked(), online["_sources"], online["year"]) == (["crossref"], ["doi-service", "regex"], 2020)


def test_record_without_authors_is_not_complete(paper, fakes):
    fakes.records[DOI.lower()] = (DOI, {"title": "Only a title"})
    out = extract_bibliography(paper, network=True)
    assert (out["title"], out["authors"], out["year"], out["_metadata_complete"], out["_sources"]) == (
        "Only a title", AUTHORS, 2019, False, ["doi-service", "layout-regex", "regex"]
    )


def test_failed_lookup_keeps_the_offline_values(paper, fakes):
    for service in ("crossref", "openalex", "semanticscholar"):
        fakes.script(service, "500")
    out = extract_bibliography(paper, network=True)
    assert (out["title"], out["year"], out["_metadata_complete"], out["_sources"]) == (
        TITLE, 2019, False, ["layout-regex", "regex"]
    )


def test_valid_info_dictionary_is_complete_and_outranks_the_page(tmp_path, db):
    pdf = write_pdf(
        tmp_path / "info.pdf",
        [article(title=two_line_title(), header=HEADER)],
        info={"Title": "A study of synthetic test documents", "Author": "Ada Lovelace; Alan Turing; Grace Hopper",
              "Keywords": "alpha, beta gamma"},
    )
    out = extract_bibliography(pdf, network=False)
    assert out == {
        "title": "A study of synthetic test documents",
        "authors": AUTHORS,
        "keywords": ["alpha", "beta gamma"],
        "year": 2019,
        "journal": "Journal of Testing",
        "_metadata_complete": True,
        "_sources": ["pdf-info", "layout-regex"],
    }


def test_info_author_naming_fewer_people_than_the_byline_is_dropped(tmp_path, db):
    pdf = write_pdf(tmp_path / "first.pdf", [article(header=HEADER)],
                    info={"Title": TITLE, "Author": "Ada Lovelace", "Keywords": "alpha"})
    out = extract_bibliography(pdf, network=False)
    assert (out["title"], out["authors"], out["keywords"], out["_metadata_complete"], out["_sources"]) == (
        TITLE, AUTHORS, ["alpha"], False, ["pdf-info", "layout-regex"]
    )


def test_doi_in_info_subject_counts(tmp_path, db):
    pdf = write_pdf(tmp_path / "subject.pdf", [article(header=HEADER)],
                    info={"Subject": "Nature, doi:10.1038/s41586-019-1666-5"})
    out = extract_bibliography(pdf, network=False)
    assert (out["doi"], out["url_doi"], out["_sources"]) == (
        "10.1038/s41586-019-1666-5", "https://doi.org/10.1038/s41586-019-1666-5", ["pdf-info", "layout-regex"]
    )


def test_the_articles_own_doi_wins_over_cited_ones(tmp_path, db):
    cited = (
        "[1] A. Smith, J. Test 3 (2001) 1-9, doi:10.9999/cited.1",
        "as reported in https://doi.org/10.9999/cited.2 and in the data set 10.5281/zenodo.123.",
    )
    own = write_pdf(tmp_path / "own.pdf", [article(extra_body=cited, footer=f"https://doi.org/{DOI}")])
    only_cited = write_pdf(tmp_path / "cited.pdf", [article(extra_body=cited[:1])])
    in_sentence = write_pdf(tmp_path / "sentence.pdf", [article(extra_body=cited[1:])])
    bare = write_pdf(tmp_path / "bare.pdf", [article(extra_body=("the data set 10.5281/zenodo.123 of the experiment.",))])
    assert extract_bibliography(own, network=False)["doi"] == DOI
    for pdf in (only_cited, in_sentence, bare):
        assert "doi" not in extract_bibliography(pdf, network=False)


def test_labelled_doi_under_the_abstract_is_the_articles(tmp_path, db):
    pdf = write_pdf(tmp_path / "aps.pdf", [article(extra_body=("DOI: 10.1103/PhysRevA.66.014304 PACS number(s): 03.67.-a",))])
    assert extract_bibliography(pdf, network=False)["doi"] == "10.1103/PhysRevA.66.014304"


def test_side_column_doi_and_dates_before_the_title_in_text_order(tmp_path, db):
    side = ("Submitted 25 March 2016", "Accepted 9 May 2017", "Published 5 June 2017",
            "Corresponding author", "Mary J. O'Connell,", "DOI 10.7717/peerj-cs.118", "OPEN ACCESS")
    pages = [article(x=200, side=side)]
    pages[0] = pages[0][-len(side):] + pages[0][:-len(side)]  # the side column comes first in the file
    out = extract_bibliography(write_pdf(tmp_path / "peerj.pdf", pages), network=False)
    assert (out["title"], out["authors"], out["year"], out["doi"]) == (TITLE, AUTHORS, 2017, "10.7717/peerj-cs.118")


def test_margin_stamp_gives_arxiv_link_and_year_never_the_title(tmp_path, db):
    stamp = Line(30, 600, [Run("arXiv:2101.00001v2 [cs.CL] 3 Feb 2021", 20, font="F2")], vertical=True)
    out = extract_bibliography(write_pdf(tmp_path / "arxiv.pdf", [[stamp] + article()]), network=False)
    assert out == {
        "title": TITLE,
        "authors": AUTHORS,
        "year": 2021,
        "url_arxiv": "https://arxiv.org/abs/2101.00001",
        "_metadata_complete": False,
        "_sources": ["layout-regex"],
    }


def test_rotated_page_reads_like_an_upright_one(tmp_path, db):
    pdf = write_pdf(tmp_path / "rotated.pdf", [article(title=two_line_title(), header=HEADER, footer=f"doi:{DOI}")],
                    rotate=90)
    out = extract_bibliography(pdf, network=False)
    assert (out["title"], out["authors"], out["year"], out["journal"], out["doi"]) == (
        TITLE, AUTHORS, 2019, "Journal of Testing", DOI
    )


def test_collaboration_byline_is_kept_as_written(tmp_path, db):
    byline = Line(72, 130, [Run("B. P. Abbott ", 11), Run("et al.", 11), Run("*", 7, 4)])
    pages = [article(byline=byline)]
    pages[0].insert(3, line(72, 145, "(LIGO Scientific Collaboration and Virgo Collaboration)", 10))
    out = extract_bibliography(write_pdf(tmp_path / "ligo.pdf", pages), network=False)
    assert out["authors"] == ["B. P. Abbott et al."]


def test_urls_are_numbered_and_labelled(tmp_path, db):
    header = "Journal of Testing 12 (2019) 1-10 http://www.testing.org/12/1 www.testing.org/archive"
    footer = f"doi:{DOI} http://creativecommons.org/licenses/by/4.0/ https://example.org/a https://example.org/b"
    stamp = Line(30, 600, [Run("arXiv:hep-ph/9412269 09 Dec 94", 12)], vertical=True)
    out = extract_bibliography(write_pdf(tmp_path / "urls.pdf", [[stamp] + article(header=header, footer=footer)]),
                               network=False)
    assert {k: v for k, v in out.items() if k.startswith("url")} == {
        "url_1": "http://www.testing.org/12/1",
        "url_2": "http://www.testing.org/archive",
        "url_3": "https://example.org/a",
        "url_arxiv": "https://arxiv.org/abs/hep-ph/9412269",
        "url_doi": f"https://doi.org/{DOI}",
    }
    assert list(out)[-7:] == ["url_1", "url_2", "url_3", "url_arxiv", "url_doi", "_metadata_complete", "_sources"]


def test_docling_signals_rank_above_the_page(paper, db):
    doc = DoclingDocument(name="paper", origin=DocumentOrigin(
        mimetype="application/pdf", binary_hash=1, filename="paper.pdf", uri="https://journal.example.org/paper/1"))
    doc.add_title("A Study of Synthetic Test Documents (docling)")
    doc.add_text(DocItemLabel.TEXT, "Code at our site", hyperlink="https://code.example.org/repo")
    doc.add_text(DocItemLabel.REFERENCE, "[1] cited", hyperlink="https://doi.org/10.9999/cited.1")
    doc.add_text(DocItemLabel.PAGE_FOOTER, "doi:10.5555/docling.7")
    out = extract_bibliography(paper, docling_document=doc, network=False)
    assert (out["title"], out["doi"], out["url_1"], out["url_2"], out["_sources"]) == (
        "A Study of Synthetic Test Documents (docling)", "10.5555/docling.7",
        "https://journal.example.org/paper/1", "https://code.example.org/repo", ["docling", "layout-regex", "regex"],
    )


def test_first_pages_text_from_a_converter(tmp_path, db):
    blank = write_pdf(tmp_path / "scan.pdf", [[]], info={"Title": "scan0001.tif"})
    text = (
        "# Deep Learning for Cats\n\nJane DOE1 and John Smith2\n\n1 University of Cats\n\n## Abstract\n\n"
        "We show that cats can be classified. DOI: 10.5555/cats.1\n\nKey words: cats, deep learning\n"
    )
    out = extract_bibliography(blank, first_pages_text=text, network=False)
    assert out == {
        "title": "Deep Learning for Cats",
        "authors": ["Jane Doe", "John Smith"],
        "keywords": ["cats", "deep learning"],
        "doi": "10.5555/cats.1",
        "url_doi": "https://doi.org/10.5555/cats.1",
        "_metadata_complete": False,
        "_sources": ["regex"],
    }


@pytest.mark.parametrize("content", [b"not a pdf at all", b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n", b""])
def test_unreadable_file_gives_an_empty_entry_and_one_log_line(tmp_path, db, caplog, content):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="klea.ingestion.biblio"):
        out = extract_bibliography(bad, network=False)
    assert out == {"_metadata_complete": False, "_sources": []}
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["bad.pdf: not read for bibliographic metadata"]


def test_missing_file_is_logged_not_raised(tmp_path, db, caplog):
    with caplog.at_level(logging.WARNING, logger="klea.ingestion.biblio"):
        out = extract_bibliography(tmp_path / "gone.pdf", first_pages_text="", network=False)
    assert out == {"_metadata_complete": False, "_sources": []}
    assert len(caplog.records) == 1


def test_textless_pdf_with_junk_info(tmp_path, db):
    pdf = write_pdf(tmp_path / "scan.pdf", [[]], info={"Title": "Microsoft Word - 02. 206.doc", "Author": "Cambridge Journals"})
    assert extract_bibliography(pdf, network=False) == {"_metadata_complete": False, "_sources": []}


def test_a_hostile_page_one_is_read_without_stalling(tmp_path, db):
    """20,000 digits in the header and a DOI followed by 20,000 ``)``: before the
    patterns were made linear and lines capped, this took minutes (bench/abuse.py)."""
    hostile = write_pdf(tmp_path / "hostile.pdf", [article(
        title=two_line_title(), header="1" * 20_000, footer="doi:10.1234/abc" + ")" * 20_000)])
    out = extract_bibliography(hostile, network=False)
    assert out == {  # the regex tier reads the first 3,000 characters: all digits here
        "title": TITLE, "authors": AUTHORS, "doi": "10.1234/abc", "url_doi": "https://doi.org/10.1234/abc",
        "_metadata_complete": False, "_sources": ["layout-regex"]}
