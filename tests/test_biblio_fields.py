"""Field rules of the text tiers: person names, bylines, years, keywords, journal, junk
titles, arXiv identifiers, URLs, text repairs, and the pdf-info / docling tiers."""

import pytest
from docling_core.types.doc import DocItemLabel, DoclingDocument
from docling_core.types.doc.base import BoundingBox
from docling_core.types.doc.document import ProvenanceItem

from ingestion.convert.textclean import clean_text, page_text
from ingestion.metadata.biblio.fields import (
    arxiv_id, is_junk_title, is_title_text, journal_from_line, keywords_from_lines, pick_year, urls_in,
    year_candidates,
)
from ingestion.metadata.biblio.info import docling_fields, info_fields
from ingestion.metadata.biblio.names import clean_person_name, collaboration_byline, parse_byline, split_author_field
from ingestion.metadata.biblio.text_tier import text_fields


@pytest.mark.parametrize(
    ("byline", "names"),
    [
        ("Frank Arute1, Kunal Arya1, Joseph C. Bardin1,2, Salvatore Mandr\u00e03,10 & John M. Martinis1,5*",
         ["Frank Arute", "Kunal Arya", "Joseph C. Bardin", "Salvatore Mandr\u00e0", "John M. Martinis"]),
        ("Ross G. DOUGLAS\u22171, Rajni K. SHARMA\u20201, Geoffrey MASUYER\u2021, Ismael ZAMORA\u00a7,",
         ["Ross G. Douglas", "Rajni K. Sharma", "Geoffrey Masuyer", "Ismael Zamora"]),
        ("Anna Sundstr\u00f6m,1 Michael R\u00f6nnlund,2 Rolf Adolfsson3 and Lars-G\u00f6ran Nilsson4",
         ["Anna Sundstr\u00f6m", "Michael R\u00f6nnlund", "Rolf Adolfsson", "Lars-G\u00f6ran Nilsson"]),
        ("Michael A. Bendera;\u2217;1 , Mart()n Farach-Coltonb;2", ["Michael A. Bender", "Mart()n Farach-Colton"]),
        ("Manzoor Ikram1,* and Farhan Saif 2,\u2020", ["Manzoor Ikram", "Farhan Saif"]),
        ("Andrew E. Webb1, Thomas A. Walsh1 and Mary J. O\u2019Connell1,2",
         ["Andrew E. Webb", "Thomas A. Walsh", "Mary J. O'Connell"]),
        ("MICHAEL J. FISCHER", ["Michael J. Fischer"]),
        ("J. Zeng, J. W. Van Orden and W. Roberts", ["J. Zeng", "J. W. Van Orden", "W. Roberts"]),
        ("Md. Khalid Hossain2 , Md. Aslam Hossain2 and Mohammad A. Rashid2,3",
         ["Md. Khalid Hossain", "Md. Aslam Hossain", "Mohammad A. Rashid"]),
        ("Josephine Nana Afrakoma AGYEMAN-DUAH1*, Jean-Pierre de la Fontaine",
         ["Josephine Nana Afrakoma Agyeman-Duah", "Jean-Pierre de la Fontaine"]),
        ("Alice Smith, Member, IEEE, and Bob Jones, Fellow, IEEE", ["Alice Smith", "Bob Jones"]),
        ("John Smith, MD, PhD, Jane Roe, MPH", ["John Smith", "Jane Roe"]),
        ("John Smith, Jr., and Jane Doe", ["John Smith Jr.", "Jane Doe"]),
        ("Alice Smith1\u262f, Bob Jones2\u00a4*", ["Alice Smith", "Bob Jones"]),
        # OCR: the period between initials lost, particles read hyphenated, quote specks
        ("KL. Ostrowska, P. van-der Meulen, \u201cA.B. Nakamura\u201d and C. de-la Cruz",
         ["K.L. Ostrowska", "P. van-der Meulen", "A.B. Nakamura", "C. de-la Cruz"]),
        # OCR: affiliation marks read as '?', quotes, '\u00ae', '+' glued to the names
        ("Ana Ruiz\"\u2019, Tom Berg??, Li Wei? , Ida KRAUSE\u2018?+ and Ola Nordmann\u00ae, Kai Moe'",
         ["Ana Ruiz", "Tom Berg", "Li Wei", "Ida Krause", "Ola Nordmann", "Kai Moe"]),
        ("Eva Lund!*, Per Holm,' Jan Berg,? Ulf Ek!? and Siv Ahl\u201d", ["Eva Lund", "Per Holm", "Jan Berg", "Ulf Ek", "Siv Ahl"]),
        ("Rui G. S. L. Costa\"\u2122, Ana Lima$, Olga Sousa%|", ["Rui G. S. L. Costa", "Ana Lima", "Olga Sousa"]),
        ("B. P. Abbott et al.*", ["B. P. Abbott et al."]),
        ("The ATLAS Collaboration", ["The ATLAS Collaboration"]),
    ],
)
def test_bylines(byline, names):
    assert parse_byline(byline) == names


@pytest.mark.parametrize(
    "text",
    [
        "Yale University, New Haven, Connecticut", "Department of Physics", "AND", "RStudio",
        "(LIGO Scientific Collaboration and Virgo Collaboration)", "Corporate Research Science Laboralories,",
        "Rulgers Unisersif): New Brunswick, NW Jersey 08903", "The Level Ancestor Problem simplified",
        "Heavy Mesons In A Relativistic Model", "(Draft of October 7, 2013)", "Theory Group Preprint Series",
        "m.oconnell@leeds.ac.uk", "An Efficient Numerical Evaluation", "",
    ],
)
def test_not_bylines(text):
    assert parse_byline(text) is None


def test_person_name_cleaning_and_collaborations():
    assert clean_person_name("E. W. DIJXSTRA") == "E. W. Dijxstra"
    assert clean_person_name("MARY O'CONNELL*") == "Mary O'Connell"
    assert clean_person_name("Xiao Mi1") == "Xiao Mi"
    assert clean_person_name("NG Wei") == "NG Wei"  # two capitals: initials or a short name, left alone
    assert clean_person_name("Cambridge Journals") is None
    assert clean_person_name("Alice") is None
    assert clean_person_name("Jiang LI.") == "Jiang LI"  # capitals with a period as the last word: a surname
    assert clean_person_name("Anna van-Physics") is None  # a hyphenated word is a particle only when all its parts are
    assert collaboration_byline("B. P. Abbott et al.* (LIGO)") == "B. P. Abbott et al."
    assert collaboration_byline("LIGO Scientific Collaboration and Virgo Collaboration") == (
        "LIGO Scientific Collaboration and Virgo Collaboration"
    )
    assert collaboration_byline("Ada Lovelace and Alan Turing") is None


def test_info_author_field():
    assert split_author_field("Diego Ongaro, John Ousterhout; Stanford University") == ["Diego Ongaro", "John Ousterhout"]
    assert split_author_field("Wickham, Hadley") == ["Hadley Wickham"]
    assert split_author_field("C. K. Law and J. H. Eberly") == ["C. K. Law", "J. H. Eberly"]
    assert split_author_field("Cambridge Journals") == []
    assert split_author_field("") == []


@pytest.mark.parametrize(
    ("lines", "year"),
    [
        (["(Received 21 January 2016; published 11 February 2016)", "On September 14, 2015 at 09:50:45 UTC"], 2016),
        (["International Psychogeriatrics (2014), 26:1, 147-154 C International Psychogeriatric Association 2013.",
          "to hit 115 million by 2050."], 2014),
        (["Theoretical Computer Science 321 (2004) 5 - 12", "Received 15 August 2002; revised 2 May 2003",
          "c 2003 Elsevier B.V. All rights reserved."], 2004),
        (["JOURNAL OF COMPUTATIONAL PHYSICS 63, 222-235 (1986)", "Received July 19, 1984; revised March 4, 1985"], 1986),
        (["PHYSICAL REVIEW A 66, 014304 ~2002!", "~Received 23 December 2001!"], 2002),
        (["August 2014, Volume 59, Issue 10. http://www.jstatsoft.org/"], 2014),
        (["Agyeman-Duah et al. BMC Health Services Research 2014, 14:1"], 2014),
        (["Dhaka Univ. J. Pharm. Sci. 8(1): 7-10, 2009 (June)"], 2009),
        (["JOURNAL OF APPLIED PHYSICS 101, 023106 2007", "Downloaded 19 Jan 2031 to 193.51.109.84."], 2007),
        (["Vohm, e 8 / Number 9 / September, 1965", "since at least 1962, irrespective of the solvability."], 1965),
        (["(Draft of October 7, 2013)"], 2013),
        (["arXiv:quant-ph/9508027v2 25 Jan 1996", "on Foundations of Computer Science, Santa Fe, NM, Nov. 20-22, 1994, IEEE"], 1996),
        (["hep-ph/9412269 09 Dec 94"], 1994),
        (["arXiv:2101.00001 and nothing else dated"], 2021),
        (["Copyright \u00a9 1999 by the authors", "Received 3 March 1998"], 1999),
        (["Received 1 August 1997", "Accepted 2 October 1997"], 1997),
        (["In 1916, the year after the final formulation of the field equations"], None),
        ([], None),
    ],
)
def test_publication_year(lines, year):
    assert pick_year((line, "body") for line in lines) == year


def test_dated_lines_count_in_page_margins_even_when_long():
    long_line = "P H Y S I C A L   R E V I E W   L E T T E R S   (a running head)   12 FEBRUARY 1996"
    assert pick_year([(long_line, "body")]) is None
    assert pick_year([(long_line, "header")]) == 1996


@pytest.mark.parametrize(
    ("line", "journal"),
    [
        ("JOURNAL OF COMPUTATIONAL PHYSICS 63, 222-235 (1986)", "Journal of Computational Physics"),
        ("Nature | Vol 574 | 24 OCTOBER 2019 | 505", "Nature"),
        ("Clinical Science (2014) 126, 305\u2013313 (Printed in Great Britain) doi: 10.1042/CS20130403", "Clinical Science"),
        ("PHYSICAL REVIEW A 66, 014304 ~2002!", "Physical Review A"),
        ("Agyeman-Duah et al. BMC Health Services Research 2014, 14:1", "BMC Health Services Research"),
        ("Dhaka Univ. J. Pharm. Sci. 8(1): 7-10, 2009 (June)", "Dhaka Univ. J. Pharm. Sci."),
        ("August 2014, Volume 59, Issue 10.", None),
        ("Vohm, e 8 / Number 9 / September, 1965", None),
    ],
)
def test_journal_from_citation_line(line, journal):
    assert journal_from_line(line) == journal


def test_keywords():
    assert keywords_from_lines(["Keywords: Data structures; Rooted trees; Level Ancestor Problem", "1. Introduction"]) == [
        "Data structures", "Rooted trees", "Level Ancestor Problem"]
    assert keywords_from_lines(["Keywords: Healthcare quality improvement, Patient care, Healthcare in",
                                "resource-limited settings", "Background"]) == [
        "Healthcare quality improvement", "Patient care", "Healthcare in resource-limited settings"]
    assert keywords_from_lines(["Key words: dementia, risk factor, longitudinal", "Introduction",
                                "feared by the elderly, with an estimated 36 million"]) == [
        "dementia", "risk factor", "longitudinal"]
    assert keywords_from_lines(["Key words: dementia, stress", "with an estimated 36 million people"]) == [
        "dementia", "stress"]
    assert keywords_from_lines(["Additional Key Words and Phrases: Agreement problem, asynchronous system,",
                                "commit problem", "I. Introduction"]) == [
        "Agreement problem", "asynchronous system", "commit problem"]
    assert keywords_from_lines(["Keywords:", "Fundamental matrix", "Robust estimation", "",
                                "a long line of the abstract that goes on and on"]) == [
        "Fundamental matrix", "Robust estimation"]
    assert keywords_from_lines(["Index Terms\u2014Ranking, retrieval."]) == ["Ranking", "retrieval"]
    assert keywords_from_lines(["no keywords here"]) == []


@pytest.mark.parametrize(
    "title",
    [
        "Microsoft Word - 02. 206.doc", "paper.dvi", "ipg1300180a", "6489122611071476 1..10", "untitled",
        "doi:10.1016/j.tcs.2003.05.002", "10.1016/j.tcs.2003.05.002", "arXiv:quant-ph/9508027v2  25 Jan 1996",
        "PII: 0021-9991(86)90093-8", "S0021-9991(86)90093-8", "Document1", "1234 5678", "", "abc",
    ],
)
def test_junk_titles(title):
    assert is_junk_title(title)


def test_real_titles_and_file_stems():
    assert not is_junk_title("Tidy Data", file_stem="wickham2014")
    assert not is_junk_title("Quantum supremacy using a programmable superconducting processor")
    assert is_junk_title("tidy_data", file_stem="tidy-data")
    assert not is_title_text("R E S EAR CH A R TIC L E Open Access")
    assert not is_title_text("Open Access")
    assert not is_title_text("JSS Journal of Statistical Software")
    assert not is_title_text("The Continuous Electron Beam Accelerator Facility")
    assert not is_title_text("VOLUME 57, NUMBER 3")
    assert is_title_text("Understanding the barriers at the Medical Department of Kamuzu Central Hospital")


def test_arxiv_ids_and_urls():
    assert arxiv_id("arXiv:2101.00001v2 [cs.CL] 3 Feb 2021") == "2101.00001"
    assert arxiv_id("hep-ph/9412269 09 Dec 94") == "hep-ph/9412269"
    assert arxiv_id("arXiv:quant-ph/9508027v2") == "quant-ph/9508027"
    assert arxiv_id("see www.x.org/abs/1234567 and 1472-6963/14/1") is None
    assert urls_in("http://www.biomedcentral.com/1472-6963/14/1 (http://creativecommons.org/licenses/by/2.0), "
                   "www.elsevier.com/locate/tcs. mailto:a@b.c https://doi.org/10.1/x") == [
        "http://www.biomedcentral.com/1472-6963/14/1", "http://www.elsevier.com/locate/tcs"]


def test_text_repairs():
    assert clean_text("The Level Ancestor Problem simpli#ed; how to #nd C# code") == (
        "The Level Ancestor Problem simplified; how to find C# code")
    assert clean_text("the heavy quark e\x0bective theory, con\x0cning, \x0dow, e\x0ecient, ba\x0fe") == (
        "the heavy quark effective theory, confining, flow, efficient, baffle")
    assert clean_text("\ufb01nite \ufb02ow\x01 \x03Young") == "finite flow Young"
    assert page_text("appli\ufffe\r\ncations of the\r\nmethod") == "applications of the\nmethod"


def test_text_repairs_read_long_whitespace_runs_once():
    # Both patterns backtracked through a whole run from each of its characters: 10,000
    # newlines after a soft hyphen took 2.7 s, 10,000 spaces before a word 1.6 s (quadratic).
    from ingestion.convert.html import convert_html

    assert page_text("appli\u00ad \n\n  cations") == "applications"
    assert page_text("end\u00ad" + "\n" * 200_000 + " ") == "end" + "\n" * 200_000  # no word after: kept
    assert [b.text for b in convert_html("<p>a , b  ) c" + " " * 200_000 + "d</p>").blocks] == ["a, b) c d"]


PAGE = "Tidy Data\nHadley Wickham\nRStudio\nAbstract\nA huge amount of effort is spent cleaning data. " * 5


def test_info_values_checked_against_page_one():
    info = {"Title": "Tidy Data", "Author": "Hadley Wickham", "Keywords": "data cleaning, data tidying, R",
            "Subject": "Journal of Statistical Software"}
    assert info_fields(info, PAGE, "wickham2014") == (
        {"title": "Tidy Data", "authors": ["Hadley Wickham"], "keywords": ["data cleaning", "data tidying", "R"]}, True)
    assert info_fields({"Title": "Untidy Spreadsheets", "Author": "Md. Shah Alam"}, PAGE, "x") == ({}, False)
    assert info_fields({"Title": "Untidy Spreadsheets", "Author": "Md. Shah Alam"}, "", "x") == (
        {"title": "Untidy Spreadsheets", "authors": ["Md. Shah Alam"]}, False)
    assert info_fields({"Title": "doi:10.1016/j.tcs.2003.05.002"}, PAGE, "x") == ({"doi": "10.1016/j.tcs.2003.05.002"}, False)
    assert info_fields({"Title": "arXiv:quant-ph/9508027v2  25 Jan 1996", "Subject": "Nature, doi:10.1038/s41586-019-1666-5"},
                       PAGE, "x") == ({"doi": "10.1038/s41586-019-1666-5",
                                       "url_arxiv": "https://arxiv.org/abs/quant-ph/9508027"}, False)
    assert info_fields({}, PAGE, "x") == ({}, False)


def _on_page(doc_item, page):
    doc_item.prov.append(ProvenanceItem(page_no=page, bbox=BoundingBox(l=0, t=10, r=10, b=0), charspan=(0, 1)))


def test_docling_tier_reads_page_one_only_and_skips_references():
    doc = DoclingDocument(name="x")
    later = doc.add_title("A later title")
    _on_page(later, 3)
    title = doc.add_title("The Article Title")
    _on_page(title, 1)
    doc.add_text(DocItemLabel.REFERENCE, "[3] Cited", hyperlink="https://doi.org/10.9999/cited")
    doc.add_text(DocItemLabel.TEXT, "our data", hyperlink="https://data.example.org/set")
    doc.add_text(DocItemLabel.TEXT, "article", hyperlink="https://doi.org/10.1000/Own.1")
    assert docling_fields(doc) == {"title": "The Article Title", "doi": "10.1000/Own.1",
                                   "urls": ["https://data.example.org/set"]}
    assert docling_fields(DoclingDocument(name="empty")) == {}


def test_regex_tier_on_plain_text():
    text = (
        "Submitted 25 March 2016\nCorresponding author\nMary J. O'Connell,\nOPEN ACCESS\n"
        "VESPA: Very large-scale Evolutionary and\nSelective Pressure Analyses\n"
        "Andrew E. Webb1\n, Thomas A. Walsh1\nand Mary J. O'Connell1,2\n1 Bioinformatics Group, Dublin City University\n"
        "ABSTRACT\nLarge-scale analyses of protein coding sequences require a number of steps in the analysis of the\n"
        "selective pressure of genes. Published 5 June 2017\n"
        "References\n[1] A. Smith. doi:10.9999/cited.1\n"
    )
    assert text_fields(text) == {
        "title": "VESPA: Very large-scale Evolutionary and Selective Pressure Analyses",
        "authors": ["Andrew E. Webb", "Thomas A. Walsh", "Mary J. O'Connell"],
        "year": 2017,
    }
    assert text_fields("") == {}


def test_hostile_runs_give_the_same_answers_in_linear_time():
    """Long runs of ``)``, digits and spaces (quadratic before; bench/abuse.py times them)."""
    from ingestion.metadata.biblio.doi import MAX_DOI_CHARS, normalize_doi

    assert normalize_doi("10.1234/abc" + ")" * 200_000) == "10.1234/abc"
    assert normalize_doi("doi:10.1016/0022-0000(85)90041-8)))") == "10.1016/0022-0000(85)90041-8"
    assert normalize_doi("10.1234/" + "a" * MAX_DOI_CHARS) is None
    assert year_candidates("1" * 200_000) == []
    assert year_candidates("1" * 200_000 + " J. Test. 8(1): 7-10, 2009") == [(1, 2009)]
    assert parse_byline("Ada Lovelace" + " " * 200_000 + "and Grace Hopper") == ["Ada Lovelace", "Grace Hopper"]
