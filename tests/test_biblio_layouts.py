"""Page-one layouts of common publishers, written at test time: the layout-regex tier
must read title, authors, year and the article's own DOI from each."""

from pathlib import Path

import pytest

from ingestion.convert.pdf_lines import Line as OcrLine
from ingestion.metadata.biblio import extract_bibliography
from ingestion.metadata.biblio.layout import lines_layout
from ingestion.metadata.biblio.layout_tier import layout_fields
from tests.biblio_pdfs import BODY, Line, Run, article, line, write_pdf


def _body(x, top, width_chars=85, size=9.5, repeat=3):
    return [line(x, top + 12 * i, text[:width_chars], size, "F2") for i, text in enumerate(BODY * repeat)]


def ieee(path: Path) -> Path:
    """Authors side by side in columns, affiliations and e-mails under each, DOI and
    copyright in the footer."""
    lines = [
        line(120, 80, "Learning to Rank Documents with", 22, "F2"), line(150, 106, "Sparse Neural Networks", 22, "F2"),
        line(90, 150, "Alice Smith", 11, "F2"), line(300, 150, "Bob O'Neil", 11, "F2"), line(460, 150, "Chen Wei", 11, "F2"),
        line(70, 164, "Dept. of Computer Science", 9, "F2"), line(290, 164, "Google Research", 9, "F2"),
        line(450, 164, "Tsinghua University", 9, "F2"), line(80, 176, "alice@cs.example.edu", 9, "F2"),
        line(300, 176, "bob@google.com", 9, "F2"), line(450, 176, "chen@tsinghua.edu.cn", 9, "F2"),
        line(50, 220, "Abstract\u2014We present a method for ranking documents with sparse networks and show", 9, "F3"),
        *_body(50, 232),
        line(50, 740, "978-1-4503-0000-0/21/07 $15.00 \u00a9 2021 IEEE. DOI 10.1109/ICDE.2021.00042", 7, "F2"),
    ]
    return write_pdf(path, [lines])


def elsevier(path: Path) -> Path:
    """Letter superscripts on names, "article info" column with one keyword a line,
    "Available online" date, DOI in the footer."""
    lines = [
        line(150, 60, "Pattern Recognition 45 (2012) 100-110", 8), line(150, 70, "Contents lists available at SciVerse ScienceDirect", 8),
        line(100, 120, "Robust estimation of", 16, "F2"), line(100, 140, "fundamental matrices", 16, "F2"),
        Line(100, 170, [Run("John A. Doe", 10, font="F2"), Run("a,", 6, 3, "F2"), Run("*", 6, 3, "F2"),
                        Run(", Marie-Claire van der Berg", 10, font="F2"), Run("b", 6, 3, "F2")]),
        line(100, 185, "a Institute of Vision, Some City, Country", 7), line(100, 194, "b School of Maths, Other City", 7),
        line(100, 215, "a r t i c l e   i n f o", 8), line(100, 230, "Article history:", 7),
        line(100, 240, "Received 3 March 2011", 7), line(100, 250, "Available online 2 May 2011", 7),
        line(100, 270, "Keywords:", 7), line(100, 280, "Fundamental matrix", 7), line(100, 290, "Robust estimation", 7),
        *_body(250, 230, 60, 8.5),
        line(100, 730, "0031-3203/$ - see front matter \u00a9 2011 Elsevier Ltd. All rights reserved.", 7),
        line(100, 740, "doi:10.1016/j.patcog.2011.05.001", 7),
    ]
    return write_pdf(path, [lines])


def plos(path: Path) -> Path:
    """Side column with the citation (own DOI cut over two lines), dates and copyright;
    raised dagger and asterisk marks."""
    side = ["OPEN ACCESS", "Citation: Smith A, Jones B (2020) Gut microbes", "shape the immune response of zebrafish larvae.",
            "PLoS ONE 15(3): e0229999. https://doi.org/", "10.1371/journal.pone.0229999",
            "Editor: Carl Berg, University of X, GERMANY", "Received: October 1, 2019", "Accepted: February 20, 2020",
            "Published: March 5, 2020", "Copyright: \u00a9 2020 Smith, Jones."]
    lines = [
        line(200, 50, "RESEARCH ARTICLE", 9, "F3"), line(200, 80, "Gut microbes shape the immune response", 18, "F3"),
        line(200, 102, "of zebrafish larvae", 18, "F3"),
        Line(200, 130, [Run("Alice Smith", 10), Run("1\u2020", 6, 3), Run(", Bob Jones", 10), Run("2*", 6, 3)]),
        line(200, 145, "1 Department of Biology, University of Somewhere, City, Country", 7),
        line(200, 175, "Abstract", 12, "F3"), *_body(200, 190, 70, 9.5, 4),
        *[line(30, 300 + 10 * i, text, 7) for i, text in enumerate(side)],
    ]
    return write_pdf(path, [lines])


def acm(path: Path) -> Path:
    """Authors in columns, "ACM Reference Format" block ending with the own DOI,
    conference line and ISBN/DOI in the footer."""
    lines = [
        line(150, 70, "Sparse Retrieval at Scale", 16, "F3"),
        line(100, 100, "Alice Smith", 11), line(350, 100, "Bob Jones", 11),
        line(100, 113, "Example University", 9), line(350, 113, "Example Labs", 9),
        line(100, 124, "City, Country", 9), line(350, 124, "City, Country", 9),
        line(100, 135, "alice@example.edu", 9), line(350, 135, "bob@example.com", 9),
        line(54, 170, "ABSTRACT", 10, "F3"), *_body(54, 185, 55, 9),
        line(54, 300, "ACM Reference Format:", 8, "F3"),
        line(54, 310, "Alice Smith and Bob Jones. 2021. Sparse Retrieval at Scale. In Proceedings of", 8),
        line(54, 320, "the Web Conference 2021 (WWW '21), April 19-23, 2021, Ljubljana, Slovenia. ACM, New", 8),
        line(54, 330, "York, NY, USA, 12 pages. https://doi.org/10.1145/3442381.3449805", 8),
        line(54, 720, "WWW '21, April 19-23, 2021, Ljubljana, Slovenia", 7),
        line(54, 730, "\u00a9 2021 IW3C2 (International World Wide Web Conference Committee)", 7),
        line(54, 740, "ACM ISBN 978-1-4503-8312-7/21/04. https://doi.org/10.1145/3442381.3449805", 7),
    ]
    return write_pdf(path, [lines])


def banner(path: Path) -> Path:
    """A journal name set bigger than the title, above it."""
    return write_pdf(path, [[line(72, 50, "Nature Communications", 28, "F3")] + article()])


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        (ieee, ("Learning to Rank Documents with Sparse Neural Networks", ["Alice Smith", "Bob O'Neil", "Chen Wei"],
                2021, "10.1109/ICDE.2021.00042")),
        (elsevier, ("Robust estimation of fundamental matrices", ["John A. Doe", "Marie-Claire van der Berg"],
                    2011, "10.1016/j.patcog.2011.05.001")),
        (plos, ("Gut microbes shape the immune response of zebrafish larvae", ["Alice Smith", "Bob Jones"],
                2020, "10.1371/journal.pone.0229999")),
        (acm, ("Sparse Retrieval at Scale", ["Alice Smith", "Bob Jones"], 2021, "10.1145/3442381.3449805")),
        (banner, ("A Study of Synthetic Test Documents", ["Ada Lovelace", "Alan Turing", "Grace Hopper"], None, None)),
    ],
)
def test_publisher_layouts(tmp_path, db, layout, expected):
    out = extract_bibliography(layout(tmp_path / "page.pdf"), network=False)
    assert (out.get("title"), out.get("authors"), out.get("year"), out.get("doi")) == expected


def test_elsevier_keywords_one_a_line_and_journal(tmp_path, db):
    out = extract_bibliography(elsevier(tmp_path / "els.pdf"), network=False)
    assert (out["keywords"], out["journal"], out["_sources"]) == (
        ["Fundamental matrix", "Robust estimation"], "Pattern Recognition", ["layout-regex", "regex"]
    )


def _ocr_line(top: float, text: str, size: float = 9.0, x0: float = 60.0) -> OcrLine:
    """A line as OCR reads it off a 600 pt high page image: no font, size estimated."""
    return OcrLine(0, x0, 600 - top - size, x0 + 5.2 * len(text), 600 - top, size, False, text, estimated=True, ocr=True)


def test_an_ocr_byline_over_several_lines_keeps_every_name():
    """A name runs on to the next line (initials at the end of one line and the surname
    on the next; a surname cut at a hyphen), OCR glues initials ("KL.") and reads the space
    between particles as a hyphen ("van-der"), and quotes specks: all names are read."""
    lines = [
        _ocr_line(60, "Spectral Methods for Sparse", 14), _ocr_line(78, "Interaction Graphs", 14),
        _ocr_line(110, "KL. Ostrowska, P. van-der Meulen, A.B."),
        _ocr_line(122, "Nakamura, \u201cC.D. Abernathy-Wil-"), _ocr_line(134, "liams and E. Okafor"),
        _ocr_line(150, "Department of Mathematics, Some University, Some City"),
        _ocr_line(175, "Abstract. We study the spectra of sparse graphs and show that the method is fast."),
    ]
    layout = lines_layout(lines, 600.0)
    assert layout_fields(layout)["authors"] == [
        "K.L. Ostrowska", "P. van-der Meulen", "A.B. Nakamura", "C.D. Abernathy-Williams", "E. Okafor"
    ]


def test_a_byline_hyphen_before_a_capital_is_the_name_s_own():
    lines = [
        _ocr_line(60, "Spectral Methods for Sparse Graphs", 14),
        _ocr_line(110, "Ama Agyeman-"), _ocr_line(122, "Duah and Kofi Mensah"),
        _ocr_line(175, "Abstract. We study the spectra of sparse graphs and show that the method is fast."),
    ]
    assert layout_fields(lines_layout(lines, 600.0))["authors"] == ["Ama Agyeman-Duah", "Kofi Mensah"]
