"""What the extractive backend quotes from a paper (issue 13, docs/benchmarks.md "Passages
and retrieval for papers"): never its byline (unless asked "who") nor an entry of its
reference list, its own findings over the work it cites, a structured abstract's sentence
whose label the question names (domains/front_matter.py, chat/backends/extractive/findings.py)."""

from __future__ import annotations

import pytest

from chat.backends.extractive.findings import OTHERS_WORK, OWN_WORK, finding, label_asked
from chat.backends.extractive.fits import FIELD_FOR_SHAPE
from chat.backends.extractive.passages import Composer
from chat.backends.extractive.text import terms
from domains import embeddings
from domains.front_matter import body_share, looks_like_byline, looks_like_citation, looks_like_reference_entry

from .extractive_helpers import answer, source

ABSTRACT = (
    "Peter W. Shor\u2020\n\n"
    "A digital computer is generally believed to be an efficient universal computing device. "
    "This paper considers factoring integers and finding discrete logarithms on a quantum computer. "
    "These algorithms take a number of steps polynomial in the input size."
)
TWO_COLUMNS = (
    "[27] D.M. Greenberger, M.A. Horne, and A. Zeilinger, Am. J. Phys. 58, 1131 (1990).\n\n"
    "[28] M. Ikram and F. Saif (unpublished).\n\n"
    "Several schemes have been proposed for the generation of entangled states in two cavities [14\u201322]. "
    "This work enables us to generate a complete set of Bell basis states between two cavity modes."
)


@pytest.mark.parametrize("text, expected", [
    ("Peter W. Shor\u2020", True),
    ("Manzoor Ikram1,* and Farhan Saif 2,\u2020", True),
    ("B. P. Abbott et al.*", True),
    ("Diego Ongaro and John Ousterhout", True),
    ("MICHAEL S. PATERSON", True),
    ("Hadley Wickham", False),  # one name without an initial or a mark: a Title Case phrase as well
    ("Tidy Data", False),
    ("Upi Bhalla NCBS Bangalore, India Website", False),  # a board member's line in documentation
    ("The Level Ancestor Problem simplified", False),
    ("These algorithms take a number of steps polynomial in the input size.", False),
])
def test_what_reads_as_a_byline(text, expected):
    assert looks_like_byline(text) is expected


@pytest.mark.parametrize("text, expected", [
    ("[28] M. Ikram and F. Saif (unpublished).", True),
    ("[1] A. Einstein, Sitzungsber. Preuss. Akad. Wiss. Berlin, 688 (1916).", True),
    ("12 Mason, M. Sample size and saturation in PhD studies, 2010.", True),
    ("[2] the second footnote, with no year", False),
    ("2. Read the files into a list of tables.", False),
])
def test_what_opens_a_reference_entry(text, expected):
    assert looks_like_reference_entry(text) is expected


def _offered(question: str, *sources) -> dict[str, float]:
    """The candidate passages of ``sources`` for ``question``: text -> cheap score."""
    composer = Composer(embeddings.embed_query(question), list(sources), question)
    return {passage.text: passage.cheap for passage in composer.offered(composer._idf())}


def test_a_byline_or_a_reference_entry_is_no_candidate_unless_asked_who():
    paper = source(1, ABSTRACT, ["Polynomial-Time Algorithms for Prime Factorization"], file_name="shor.pdf")
    assert "Peter W. Shor\u2020" not in _offered("How many steps do Shor's quantum algorithms take?", paper)
    assert "Peter W. Shor\u2020" in _offered("Who wrote the paper on quantum factoring?", paper)
    entries = source(1, TWO_COLUMNS, ["Engineering entanglement between two cavity modes"], file_name="ikram.pdf")
    assert [text for text in _offered("Which states does the Ikram and Saif scheme generate?", entries)
            if "Saif" in text or "Zeilinger" in text] == []


@pytest.mark.parametrize("text, expected", [
    ("This work enables us to generate a complete set of Bell basis states.", OWN_WORK),
    ("We designed a quantum processor named Sycamore.", OWN_WORK),
    ("Several schemes have been proposed for the generation of entangled states [14\u201322].", OTHERS_WORK),
    ("Earlier findings suggested an association (Persson and Skoog, 1996; Charles et al., 2006).", OTHERS_WORK),
    ("Our scheme is based on the interaction of a three-level atom with the cavity field [27].", 0.0),
    ("The signal was observed with a signal-to-noise ratio of 24.", 0.0),
])
def test_a_papers_own_findings_over_the_work_it_cites(text, expected):
    assert finding(text) == expected


def test_own_findings_count_in_papers_only():
    # Documentation says "we" of its project: the same sentences in a Markdown page are scored as they were.
    text = TWO_COLUMNS.split("\n\n", 2)[2].replace("]. ", "].\n\n")
    question = "Which entangled states can be generated in two cavities?"
    background = "Several schemes have been proposed for the generation of entangled states in two cavities [14\u201322]."
    own = "This work enables us to generate a complete set of Bell basis states between two cavity modes."
    paper = _offered(question, source(1, text, ["Entanglement"], file_name="entanglement.pdf"))
    page = _offered(question, source(1, text, ["Entanglement"], file_name="entanglement.md"))
    assert paper[background] == pytest.approx(page[background] + OTHERS_WORK)
    assert paper[own] == pytest.approx(page[own] + OWN_WORK)


@pytest.mark.parametrize("text, expected", [
    ("We present a result. It holds.", 1.0),
    # An abstract printed as one paragraph with its copyright line: body but for that sentence.
    ("We present a result. It holds. \u00a9 2007 American Institute of Physics.", 25 / 57),
    ("Peter W. Shor\u2020", 0.0),
    ("[1] A. Einstein, Sitzungsber. Preuss. Akad. Wiss. Berlin, 688 (1916).\nRaft elects a leader.", 18 / 78),
    ("", 1.0),
])
def test_the_body_share_of_a_chunk(text, expected):
    assert body_share(text) == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("Rarity, P.R. Tapster, and G.M. Palma, ibid. 69, 1293 (1992); F.", True),
    ("Phys. Rev. Lett. 79, 325 (1997); 79, 4709 (1997).", True),
    ("Nature 574, 505\u2013510 (2019).", True),
    ("The study involved 2,462 participants aged 55 years and older (2010).", False),
    ("Ki = 11.21 \u00b1 0.74 nM, 927-fold more selective.", False),
])
def test_what_reads_as_a_citation(text, expected):
    assert looks_like_citation(text) is expected


def test_a_paragraph_holding_a_citation_is_no_candidate():
    text = ("Rarity, P.R. Tapster, and G.M. Palma, ibid. 69, 1293 (1992); F. Saif, International Conference of "
            "Physics in Industry, Karachi, Pakistan, 2001 (unpublished).\n\n"
            "Our scheme is based on the interaction of a three-level atom with the cavity field.")
    offered = _offered("How are two cavity modes entangled in the Ikram and Saif scheme?",
                       source(1, text, ["Engineering entanglement"], file_name="ikram.pdf"))
    assert list(offered) == ["Our scheme is based on the interaction of a three-level atom with the cavity field."]


@pytest.mark.parametrize("text, expected", [
    ("Methods: A mix of quantitative and qualitative methods was applied.", FIELD_FOR_SHAPE),
    ("Results. The analysis found three barriers.", 0.0),  # the question names no results
    ("The methods were applied in 2012.", 0.0),  # no label
])
def test_a_structured_abstracts_label_the_question_names(text, expected):
    wanted = terms("Which methods did the situational analysis at Kamuzu Central Hospital use?")
    assert label_asked(text, wanted) == expected


def test_the_body_share_cache_holds_digests_not_texts():
    """A cache of the last 2,048 texts held them all: a chunk of characters that cost no
    token is unbounded (2,000,000 zero-width spaces, 4 MB each)."""
    from domains import front_matter

    text = "Both detectors recorded the signal." + "\u200b" * 2_000_000
    assert body_share(text) == 1.0
    assert body_share(text) == 1.0  # from the cache
    assert all(isinstance(key, bytes) and len(key) == 16 for key in front_matter._SHARES)
    for n in range(front_matter._SHARES_SIZE + 5):
        body_share(f"Sentence {n} of the body.")
    assert len(front_matter._SHARES) == front_matter._SHARES_SIZE
