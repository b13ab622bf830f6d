"""The shared PDF corpus: the OCR pre-check agrees with ground_truth.json on every file,
and the text-layer PDFs chunk under their real section headings (model-free path)."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from domains.text import heading_chain
from ingestion.chunk.step import chunk_directory
from ingestion.convert.pdf import convert_pdf
from ingestion.convert.precheck import precheck_directory
from ingestion.models import StagedFile

from .conftest import corpora_path

pytestmark = pytest.mark.corpora

EXPECTED_CHAINS = {
    "abbott2016_prl_gw150914.pdf": ["I. INTRODUCTION", "V. SEARCHES > A. Generic transient search", "VIII. CONCLUSION"],
    "agyemanduah2014_bmchsr.pdf": ["Abstract", "Methods", "Discussion", "Conclusions"],
    "arute2019_nature.pdf": ["Building a high-fidelity processor", "The classical computational cost"],
    "bender2004_tcs.pdf": ["1. Introduction", "References"],
    "chaumet2007_jap.pdf": ["II. COMPUTATION OF THE OPTICAL TORQUE > A. Theory",
                            "III. RESULTS > B. Micropropeller > 1. Influence of the geometry"],
    "douglas2014_clinsci.pdf": ["INTRODUCTION", "MATERIALS AND METHODS > Inhibition characterization", "DISCUSSION"],
    "jordan1986_jcp.pdf": ["1. INTRODUCTION", "4. NUMERICAL RESULTS", "5. SUMMARY AND CONCLUSIONS"],
    "kneer1998_pra.pdf": ["II. MODEL AND SCHEME", "III. EXAMPLES > B. Separation of odd and even number states"],
    "ongaro2013_raft_draft.pdf": ["1 Introduction", "5 The Raft consensus algorithm > 5.4 Safety > 5.4.1 Election restriction",
                                  "11 Conclusion"],
    "shor1996_arxiv_quantph9508027.pdf": ["2 Quantum computation", "4 Quantum Fourier transforms", "6 Discrete logarithms"],
    "sundstrom2014_intpsychogeriatr.pdf": ["Introduction", "Method > Study population", "Discussion"],
    "webb2017_peerjcs.pdf": ["METHODS", "ADDITIONAL INFORMATION AND DECLARATIONS > Funding"],
    "wickham2014_jss_tidydata.pdf": ["1. Introduction",
                                     "3. Tidying messy datasets > 3.1. Column headers are values, not variable names",
                                     "6. Discussion"],
    "zeng1994_hepph9412269.pdf": ["I. INTRODUCTION", "II. THE MODEL"],
}
EXPECTED_TITLES = {
    "sundstrom2014_intpsychogeriatr.pdf": "Stressful life events are not associated with the development of dementia",
    "ongaro2013_raft_draft.pdf": "In Search of an Understandable Consensus Algorithm",
    "wickham2014_jss_tidydata.pdf": "Tidy Data",
    "abbott2016_prl_gw150914.pdf": "Observation of Gravitational Waves from a Binary Black Hole Merger",
}


def _ground_truth() -> dict[str, dict]:
    data = json.loads(corpora_path("pdfs", "ground_truth.json").read_text(encoding="utf-8"))
    return {d["file"]: d for d in data["documents"]}


def test_pre_check_agrees_with_ground_truth_on_every_file():
    truth = _ground_truth()
    rows = {r.file_name: r for r in precheck_directory(corpora_path("pdfs"))}
    assert set(rows) == set(truth)
    assert {name: (r.needs_ocr, r.pages) for name, r in rows.items()} == {
        name: (d["needs_ocr"], d["pages"]) for name, d in truth.items()
    }


def test_pre_check_command_prints_one_line_per_file():
    out = StringIO()
    call_command("stores", "pre-check", str(corpora_path("pdfs")), stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "verdict pages image    chars  file"
    assert "OCR        28    28        0  flajolet1985_jcss_scan.pdf" in lines
    assert "no-OCR      8     0    31517  sundstrom2014_intpsychogeriatr.pdf" in lines
    assert lines[-1] == "22 PDFs: 3 need OCR, 19 do not"


@pytest.mark.django_db
def test_text_layer_pdfs_chunk_under_their_section_headings():
    truth = _ground_truth()
    report = chunk_directory(corpora_path("pdfs"), ocr="off")
    statuses = {o.file_name: o.status for o in report.outcomes}
    assert statuses == {
        **{name: ("needs_ocr" if d["needs_ocr"] else "chunked") for name, d in truth.items()},
        "ground_truth.json": "unsupported",
    }
    staged = {s.file_name: s for s in StagedFile.objects.filter(directory=str(corpora_path("pdfs")))}
    for name, chains in EXPECTED_CHAINS.items():
        found = {heading_chain(c["headings"]) for c in staged[name].chunks}
        missing = [chain for chain in chains if chain not in found]
        assert not missing, (name, missing, sorted(found))
    for name, title in EXPECTED_TITLES.items():
        assert staged[name].metadata_map["DEFAULT"]["title"] == title
    for name in ("flajolet1985_jcss_scan.pdf", "lynch1989_mit_tm394_scan.pdf", "severens_asih_scan.pdf"):
        assert (staged[name].status, staged[name].chunks) == ("needs_ocr", [])
    assert all("<!-- image -->" not in c["text"] for s in staged.values() for c in s.chunks)
    # Symbol-font codes never reach chunk text (C0 and C1 controls, private use).
    junk = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ue000-\uf8ff]")
    assert [(s.file_name, c["text"]) for s in staged.values() for c in s.chunks if junk.search(c["text"])] == []
    # Lists printed as bulleted or numbered lines are Markdown lists after their lead-in.
    tidy = "\n\n".join(c["text"] for c in staged["wickham2014_jss_tidydata.pdf"].chunks)
    assert ("In tidy data:\n\n1. Each variable forms a column.\n2. Each observation forms a row.\n"
            "3. Each type of observational unit forms a table.\n\n") in tidy
    assert ("along with their remedies:\n\n- Column headers are values, not variable names.\n"
            "- Multiple variables are stored in one column.\n- Variables are stored in both rows and columns.\n"
            "- Multiple types of observational units are stored in the same table.\n"
            "- A single observational unit is stored in multiple tables.\n\n") in tidy


def _native_text(name: str) -> tuple[str, list]:
    document = convert_pdf(corpora_path("pdfs", name), ocr="off", pipeline="native")
    return "\n\n".join(block.text for block in document.blocks), document.blocks


def test_symbol_font_codes_read_as_the_characters_they_set():
    """Fonts without a ToUnicode map whose codes name other characters (pdf_chars.FONT_CODES):
    Advent's maths font (APS), the Math Pi fonts (AIP/APS 1990s), Elsevier's Macmillan text face."""
    abbott, _ = _native_text("abbott2016_prl_gw150914.pdf")
    assert ("a luminosity distance of 410+160 −180 Mpc corresponding to a redshift z = 0.09+0.03" in abbott
            and "the initial black hole masses are 36+5 −4M⊙ and 29+4 −4M⊙" in abbott
            and "difference is ΔL(t)= δLx − δLy = h(t)L," in abbott)
    assert not set("þ¼ðÞ") & set(abbott)
    kneer, _ = _native_text("kneer1998_pra.pdf")
    assert ("The quantum entanglement is between the external (center-of-mass motion in one dimension) and "
            "the internal (electronic) state of the trapped ion." in kneer)
    assert "quantum entanglement [1,2]. Recently" in kneer
    bender, _ = _native_text("bender2004_tcs.pdf")
    assert "we provide definitions and initial lemmas" in bender and "#" not in bender


def test_word_spaces_the_text_layer_left_out_and_exponents():
    bender, _ = _native_text("bender2004_tcs.pdf")
    assert ("for the Level Ancestor Problem. A Level Ancestor Query LA(v; d) requests the depth d ancestor of node v."
            in bender)
    assert "A fundamental algorithmic problem on trees" in bender and "A substantially" in bender
    arute, _ = _native_text("arute2019_nature.pdf")
    assert "a computational state-space of dimension 2^53 (about 10^16)." in arute
    abbott, _ = _native_text("abbott2016_prl_gw150914.pdf")
    assert "with a peak gravitational-wave strain of 1.0 × 10^−21." in abbott
    assert "the initial black hole masses are 36+5 −4M⊙" in abbott  # an error bar is no exponent


def test_symbols_the_text_layer_misreads():
    """A "+" with a bar set under it is "±"; TeX's math italic "/" reads "=" in a text layer
    without a ToUnicode map (a glyph taller than wide), OT1's "fl" a carriage return."""
    douglas, _ = _native_text("douglas2014_clinsci.pdf")
    assert "(Ki = 11.21 ± 0.74 nM)" in douglas and "+−" not in douglas
    zeng, _ = _native_text("zeng1994_hepph9412269.pdf")
    assert "energies to order 1/mQ in the heavy-light systems" in zeng and "in all flavor sectors" in zeng
    abbott, _ = _native_text("abbott2016_prl_gw150914.pdf")
    assert "bound on the graviton mass mg < 1.2 × 10^−22 eV/c2." in abbott


def test_front_matter_sits_under_the_title():
    """An abstract printed without its own heading is found under the paper's title."""
    _, blocks = _native_text("abbott2016_prl_gw150914.pdf")
    title = ("Observation of Gravitational Waves from a Binary Black Hole Merger",)
    assert [b.headings for b in blocks[:5]] == [title] * 5
    assert any(b.headings == title and b.text.startswith("On September 14, 2015 at 09:50:45 UTC") for b in blocks)
    assert blocks[next(i for i, b in enumerate(blocks) if b.headings != title)].headings == ("I. INTRODUCTION",)


def test_accents_set_as_glyphs_of_their_own_join_their_letters():
    """TeX sets "¨" before the letter it stands over, AIP fonts a combining mark after it;
    either joins that letter (the space the text layer put before the accent goes)."""
    kneer, _ = _native_text("kneer1998_pra.pdf")
    assert "Abteilung für Quantenphysik, Universität Ulm" in kneer and "Schrödinger cat states" in kneer
    shor, _ = _native_text("shor1996_arxiv_quantph9508027.pdf")
    assert "the Schönhage–Strassen fast multiplication algorithm" in shor and "Sch ̈onhage" not in shor
