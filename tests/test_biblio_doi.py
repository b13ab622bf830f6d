"""DOI normalisation, identity and detection in text: every case of issue #5."""

import pytest

from ingestion.metadata.biblio.doi import FoundDoi, doi_key, doi_url, find_dois, normalize_doi, quote_doi

SICI = "10.1002/(sici)1096-9861(19971020)387:2<167::aid-cne1>3.0.co;2-z"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # prefixes: doi:, DOI, info:doi/, urn:doi:, doi.org URLs (http, https, dx., www.)
        ("doi:10.1038/s41586-019-1666-5", "10.1038/s41586-019-1666-5"),
        ("DOI: 10.1103/PhysRevLett.116.061102", "10.1103/PhysRevLett.116.061102"),
        ("DOI 10.7717/peerj-cs.118", "10.7717/peerj-cs.118"),
        ("info:doi/10.1000/182", "10.1000/182"),
        ("urn:doi:10.1000/182", "10.1000/182"),
        ("https://doi.org/10.1042/CS20130403", "10.1042/CS20130403"),
        ("http://dx.doi.org/10.1042/CS20130403", "10.1042/CS20130403"),
        ("https://www.doi.org/10.1042/CS20130403", "10.1042/CS20130403"),
        ("doi.org/10.1042/CS20130403", "10.1042/CS20130403"),
        # a URL form is percent-decoded exactly once
        ("https://doi.org/10.1016/0022-0000%2885%2990041-8", "10.1016/0022-0000(85)90041-8"),
        ("https://doi.org/10.1000/a%2525b", "10.1000/a%25b"),
        ("10.1000/a%25b", "10.1000/a%25b"),
        # trailing punctuation removed
        ("10.1063/1.2409490.", "10.1063/1.2409490"),
        ("10.1063/1.2409490,", "10.1063/1.2409490"),
        ("10.1063/1.2409490;", "10.1063/1.2409490"),
        ("10.1063/1.2409490:", "10.1063/1.2409490"),
        ("10.1063/1.2409490.\u201d", "10.1063/1.2409490"),
        # ")" removed only when unbalanced inside the DOI
        ("10.1063/1.2409490)", "10.1063/1.2409490"),
        ("10.1016/0022-0000(85)90041-8", "10.1016/0022-0000(85)90041-8"),
        ("10.1016/0022-0000(85)90041-8).", "10.1016/0022-0000(85)90041-8"),
        ("(10.1016/S0099-1333(02)00284-7)", "10.1016/S0099-1333(02)00284-7"),
        ("(doi:10.1016/S0099-1333(02)00284-7).", "10.1016/S0099-1333(02)00284-7"),
        ("<https://doi.org/10.1000/xyz>", "10.1000/xyz"),
        ("[10.1000/xyz]", "10.1000/xyz"),
        # SICI DOIs keep <, > and ; whole
        (SICI, SICI),
        (SICI + ";", SICI),
        (f"doi:{SICI}.", SICI),
        ("https://doi.org/10.1002/%28sici%291096-9861%2819971020%29387%3A2%3C167%3A%3Aaid-cne1%3E3.0.co%3B2-z", SICI),
        ("10.1002/(SICI)1096-9861(19971020)387:2&lt;167::AID-CNE1&gt;3.0.CO;2-Z",
         "10.1002/(SICI)1096-9861(19971020)387:2<167::AID-CNE1>3.0.CO;2-Z"),
        # broken over a line after a hyphen: re-joined, hyphen kept
        ("10.1038/s41586-\n019-1666-5", "10.1038/s41586-019-1666-5"),
        ("10.1038/s41586-\r\n  019-1666-5", "10.1038/s41586-019-1666-5"),
        ("10.1038/s41586\ufffe\n019-1666-5", "10.1038/s41586-019-1666-5"),
        # typographic hyphens, control characters after the DOI
        ("10.7717/peerj\u2010cs.118", "10.7717/peerj-cs.118"),
        ("10.1063/1.2409490\x04", "10.1063/1.2409490"),
        # case kept
        ("10.1017/S1041610213001804", "10.1017/S1041610213001804"),
    ],
)
def test_normalize_doi(raw, expected):
    assert normalize_doi(raw) == expected


@pytest.mark.parametrize(
    "raw", [None, "", "doi:", "10.1/x", "10.12345", "10.1234/", "see 10 1234/abc", "PII: 0021-9991(86)90093-8", "hello"]
)
def test_normalize_doi_rejects_non_dois(raw):
    assert normalize_doi(raw) is None


def test_identity_is_case_insensitive_and_url_keeps_the_case():
    assert doi_key("10.1103/PhysRevA.66.014304") == doi_key("10.1103/PHYSREVA.66.014304") == "10.1103/physreva.66.014304"
    assert doi_key(" 10.1000/ABC ") == "10.1000/abc"
    assert doi_url("10.1103/PhysRevA.66.014304") == "https://doi.org/10.1103/PhysRevA.66.014304"


def test_quote_doi_encodes_once_and_keeps_slashes():
    assert quote_doi(SICI) == "10.1002/%28sici%291096-9861%2819971020%29387%3A2%3C167%3A%3Aaid-cne1%3E3.0.co%3B2-z"
    assert quote_doi("10.1000/a%25b") == "10.1000/a%2525b"
    assert quote_doi("10.1000/a b#c?d") == "10.1000/a%20b%23c%3Fd"


def test_find_dois_in_text_labels_order_and_duplicates():
    text = (
        "Clinical Science (2014) 126, 305-313 doi: 10.1042/CS20130403\n"
        "as shown before (10.1016/0022-0000(85)90041-8), see https://doi.org/10.1038/s41586-\n"
        "019-1666-5. Again DOI:10.1042/cs20130403 and bare 10.5555/plain.1;"
    )
    assert find_dois(text) == [
        FoundDoi("10.1042/CS20130403", True, 37),
        FoundDoi("10.1016/0022-0000(85)90041-8", False, 78),
        FoundDoi("10.1038/s41586-019-1666-5", True, 113),
        FoundDoi("10.5555/plain.1", False, 195),
    ]


def test_find_dois_in_empty_text():
    assert find_dois("") == []
    assert find_dois("no identifiers here, only 10.5 percent") == []


def test_a_labelled_doi_opens_a_statement_also_in_brackets():
    text = ("The torque is studied. \u00a9 2007 American Institute of Physics. [DOI: 10.1063/1.2409490]\n"
            "as reported in [doi:10.9999/cited.1] and (DOI: 10.9999/cited.2).")
    assert [(d.doi, d.opens_statement(text)) for d in find_dois(text)] == [
        ("10.1063/1.2409490", True), ("10.9999/cited.1", False), ("10.9999/cited.2", False),
    ]
