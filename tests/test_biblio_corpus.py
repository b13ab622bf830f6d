"""The offline tiers on the shared PDF corpus against its hand-checked ground truth
(the figures of bench/biblio.py, pinned file by file)."""

import json
import unicodedata

import pytest

from ingestion.metadata.biblio import extract_bibliography
from tests.conftest import corpora_path

pytestmark = [pytest.mark.corpora, pytest.mark.django_db]

# What each file's text layer really says where it differs from the printed page.
TEXT_LAYER_FAULTS = {
    "bender2004_tcs.pdf": {"authors": ["Michael A. Bender", "Mart()n Farach-Colton"]},  # lost accent glyph
    "dijkstra1965_cacm.pdf": {"authors": ["E. W. Dijxstra"]},  # OCR misread
}


def _norm(title):
    return " ".join(unicodedata.normalize("NFKC", title or "").replace("\u2019", "'").casefold().split())


def _documents():
    truth = json.loads(corpora_path("pdfs", "ground_truth.json").read_text(encoding="utf-8"))["documents"]
    return sorted(truth, key=lambda d: d["file"])


@pytest.fixture(scope="module")
def extracted(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        return {d["file"]: extract_bibliography(corpora_path("pdfs", d["file"]), network=False) for d in _documents()}


def test_every_file_with_a_text_layer(extracted):
    checked = 0
    for doc in _documents():
        if not doc["has_text_layer"]:
            continue
        out = extracted[doc["file"]]
        expected_authors = TEXT_LAYER_FAULTS.get(doc["file"], {}).get("authors", doc["authors"])
        assert (doc["file"], _norm(out.get("title")), out.get("authors"), out.get("year"), out.get("doi")) == (
            doc["file"], _norm(doc["title"]), expected_authors, doc["year"], doc["expected_doi_from_first_page"]
        )
        assert out.get("url_doi") == (f"https://doi.org/{out['doi']}" if "doi" in out else None)
        checked += 1
    assert checked == 19


def test_scans_without_text_layer_give_only_the_bookkeeping_keys(extracted):
    scans = [d["file"] for d in _documents() if not d["has_text_layer"]]
    assert scans == ["flajolet1985_jcss_scan.pdf", "lynch1989_mit_tm394_scan.pdf", "severens_asih_scan.pdf"]
    assert [extracted[f] for f in scans] == [{"_metadata_complete": False, "_sources": []}] * 3


def test_sources_completeness_and_extras(extracted):
    assert {f: out["_sources"] for f, out in extracted.items() if "pdf-info" in out["_sources"]} == {
        "arute2019_nature.pdf": ["pdf-info", "layout-regex"],
        "bender2004_tcs.pdf": ["pdf-info", "layout-regex", "regex"],
        "law1996_prl.pdf": ["pdf-info", "layout-regex"],
        "ongaro2013_raft_draft.pdf": ["pdf-info", "layout-regex"],
        "shor1996_arxiv_quantph9508027.pdf": ["pdf-info", "layout-regex", "regex"],
        "wickham2014_jss_tidydata.pdf": ["pdf-info", "layout-regex"],
    }
    assert [f for f, out in extracted.items() if out["_metadata_complete"]] == ["wickham2014_jss_tidydata.pdf"]
    assert extracted["wickham2014_jss_tidydata.pdf"]["keywords"] == [
        "data cleaning", "data tidying", "relational databases", "R"]
    assert extracted["bender2004_tcs.pdf"]["keywords"] == ["Data structures", "Rooted trees", "Level Ancestor Problem"]
    assert extracted["shor1996_arxiv_quantph9508027.pdf"]["url_arxiv"] == "https://arxiv.org/abs/quant-ph/9508027"
    assert extracted["zeng1994_hepph9412269.pdf"]["url_arxiv"] == "https://arxiv.org/abs/hep-ph/9412269"
    assert extracted["agyemanduah2014_bmchsr.pdf"]["url_1"] == "http://www.biomedcentral.com/1472-6963/14/1"
    assert {f: out["journal"] for f, out in extracted.items() if "journal" in out} == {
        "agyemanduah2014_bmchsr.pdf": "BMC Health Services Research",
        "alam2009_dujps.pdf": "Dhaka Univ. J. Pharm. Sci.",
        "arute2019_nature.pdf": "Nature",
        "bender2004_tcs.pdf": "Theoretical Computer Science",
        "chaumet2007_jap.pdf": "Journal of Applied Physics",
        "douglas2014_clinsci.pdf": "Clinical Science",
        "fischer1985_jacm_flp.pdf": "Journal of the Assccktion for Computing Machinery",
        "ikram2002_pra.pdf": "Physical Review A",
        "jordan1986_jcp.pdf": "Journal of Computational Physics",
        "kneer1998_pra.pdf": "Physical Review A",
        "sundstrom2014_intpsychogeriatr.pdf": "International Psychogeriatrics",
    }
