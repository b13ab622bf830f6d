"""Which passage the extractive backend quotes (issue 13): a glossary entry or the
sentence that defines the subject for "what is X", the table rows that hold the fact
rather than the whole table, an instruction for "how do I", never a paper's front
matter (journal header, affiliation) unless the question asks "who" or "which journal"."""

from __future__ import annotations

import pytest

from chat.backends.extractive.fits import INLINE_FOR_HOWTO, IMPERATIVE_FOR_HOWTO, bonus, defines
from chat.backends.extractive.shapes import shapes
from chat.backends.extractive.text import body_text, is_definition_list, list_items, looks_like_front_matter, segment
from ingestion.chunk.chunker import chunk_blocks
from ingestion.convert.markdown import convert_markdown

from .extractive_helpers import answer, source

GLOSSARY_LINES = (
    "Epoch: one pass of the learner over the whole training set.\n"
    "Learner: the algorithm that fits a model to the training data.\n"
    "Loss: the quantity the learner minimises.\n"
    "Model: what the learner produces; it maps inputs to predictions."
)
DEFINITION_LIST = (
    "# Glossary\n\nLearner\n: A person who takes a course.\n\n"
    "Tutor\n: The person who guides a learner through a course.\n\n"
    "Course\n: A sequence of lessons with a final assessment.\n"
)
FRONT_MATTER = (
    "Journal of Computational Neuroscience 17, 149–171 (2004)\n"
    "Department of Physiology, University College London, Gower Street, London WC1E 6BT, UK\n"
    "Received 12 March 2003; accepted 2 October 2003\n\n"
    "Cerebellar granule cells fire at rates up to 1 kHz when driven by mossy fibre input. "
    "The model reproduces this firing with four voltage-gated conductances."
)
SETTINGS = (
    "| variable | default | meaning |\n| --- | --- | --- |\n"
    "| `KLEA_RAG_CHAT_MODEL` | `qwen3:0.6b` | the chat model |\n"
    "| `KLEA_RAG_GUARD_MODEL` | empty | the safety model |\n"
    "| `KLEA_LLM_TIMEOUT` | `120` | seconds before a timeout error |\n"
    "| `KLEA_MCP_MAX_CALLS` | `4` | MCP tool calls per question |\n"
    "| `KLEA_HEALTH_TIMEOUT` | `2` | seconds /health waits |"
)


def _chunk_text(markdown: str) -> str:
    (chunk,) = chunk_blocks(convert_markdown(markdown).blocks, lambda text: len(text.split()))
    return chunk.text


def test_a_glossary_line_answers_what_is_alone():
    # Each "Term: ..." line is an entry of its own: the short one is not run on into the next.
    assert answer("What is a learner?", source(1, GLOSSARY_LINES, ["Glossary"])) == (
        "Learner: the algorithm that fits a model to the training data. [1]"
    )
    assert answer("What is an epoch?", source(1, GLOSSARY_LINES, ["Glossary"])) == (
        "Epoch: one pass of the learner over the whole training set. [1]"
    )


def test_a_definition_list_entry_keeps_its_term_with_its_definition():
    text = _chunk_text(DEFINITION_LIST)
    assert text == ("Learner\n  A person who takes a course.\nTutor\n  The person who guides a learner through a "
                    "course.\nCourse\n  A sequence of lessons with a final assessment.")
    assert [block.kind for block in segment(text)] == ["list"]
    assert list_items(text) == ["Learner\n  A person who takes a course.",
                                "Tutor\n  The person who guides a learner through a course.",
                                "Course\n  A sequence of lessons with a final assessment."]
    assert answer("What is a learner?", source(1, text, ["Glossary"])) == "Learner\n  A person who takes a course. [1]"
    assert answer("What is a tutor?", source(1, text, ["Glossary"])) == (
        "Tutor\n  The person who guides a learner through a course. [1]"
    )


@pytest.mark.parametrize("lines, expected", [
    (["Learner", "  A person who takes a course."], True),
    (["Learner", "  A person.", "Tutor", "  Guides a learner.", "  Two lines of it."], True),
    (["Learner", "Tutor"], False),  # no definitions
    (["  indented first", "Term"], False),
    (["A sentence that ends.", "  and an indented line"], False),  # a term ends no sentence
    (["- a list item", "  continued"], False),
])
def test_definition_lists(lines, expected):
    assert is_definition_list(lines) is expected


def test_the_sentence_that_defines_the_subject_answers_what_is():
    # MiniLM prefers the short sentences that merely name libNeuroML.
    text = ("libNeuroML is developed on GitHub under the BSD 3 clause license. Please cite Vella et al. if you use "
            "libNeuroML.\n\nlibNeuroML is a Python package for working with models specified in NeuroML version 2. "
            "It provides a Python object model of the NeuroML schema.")
    assert answer("What is libNeuroML?", source(1, text, ["libNeuroML"])) == (
        "libNeuroML is a Python package for working with models specified in NeuroML version 2. "
        "It provides a Python object model of the NeuroML schema. [1]"
    )


@pytest.mark.parametrize("question, text, expected", [
    ("What is libNeuroML?", "libNeuroML is a Python package.", True),
    ("What is libNeuroML?", "libNeuroML is developed on GitHub.", False),  # says something of it, defines nothing
    ("What is a learner?", "- **Learner** — a person who takes a course.", True),
    ("What is a learner?", "Learner: a person who takes a course.", True),
    ("What are datasets?", "Dataset: a dict-like collection of arrays.", True),
    ("What is a domain in Klea?", "A domain (a knowledge area) is a set of stores.", True),
    ("What is a domain in Klea?", "Every domain has stores.", False),
    ("How do I add a domain?", "A domain is a set of stores.", False),  # not a definition question
])
def test_what_defines_the_subject(question, text, expected):
    assert defines(shapes(question), text) is expected


def test_the_rows_that_hold_the_fact_answer_not_the_whole_table():
    prose = source(1, "Klea works without a model server. Answers then quote the sources.", ["Configuration"])
    assert answer("Which chat model is used by default?", prose, source(2, SETTINGS, ["Configuration"])) == (
        "| variable | default | meaning |\n| --- | --- | --- |\n"
        "| `KLEA_RAG_CHAT_MODEL` | `qwen3:0.6b` | the chat model |\n\n[2]"
    )


CONVERTERS = (
    "| files | converter |\n| --- | --- |\n"
    "| `.md`, `.markdown` | markdown-it-py; front matter that cannot be read is left out and the page converted |\n"
    "| `.rst` | docutils with generic Sphinx role handlers |\n"
    "| `.html` | BeautifulSoup; scripts and styles dropped |\n"
    "| `.txt` | one block per paragraph |\n"
    "| `.docx` | docling's simple pipeline: headings, paragraphs, lists, tables |"
)


def test_a_term_in_a_rows_first_cell_picks_the_row_over_one_naming_it_in_passing():
    # "converted" in the Markdown row's text weighs less than ".docx" naming the row
    assert answer("How are .docx files converted?", source(1, CONVERTERS, ["Conversion"])) == (
        "| files | converter |\n| --- | --- |\n"
        "| `.docx` | docling's simple pipeline: headings, paragraphs, lists, tables |\n\n[1]"
    )


def test_how_do_i_takes_the_instruction():
    text = ("By default a monthly resampler drops any month with fewer than 28 days of data. "
            "It then warns once per dataset.\n\nPass `drop_partial=False` to keep partial months.")
    assert answer("How do I keep partial months when resampling?", source(1, text, ["Resampling"])) == (
        "Pass `drop_partial=False` to keep partial months. [1]"
    )


@pytest.mark.parametrize("kind, text, expected", [
    ("prose", "Pass `drop_partial=False` to keep them.", INLINE_FOR_HOWTO + IMPERATIVE_FOR_HOWTO),
    ("prose", "The `drop_partial` flag keeps them.", INLINE_FOR_HOWTO),
    ("item", "3. Preheat the oven to 220 C.", IMPERATIVE_FOR_HOWTO),
    ("prose", "Preheating takes ten minutes.", 0.0),
])
def test_an_instruction_fits_how_do_i(kind, text, expected):
    assert bonus(shapes("How do I keep partial months?"), kind, text, opening=False) == pytest.approx(expected)


def test_front_matter_is_never_the_answer_unless_asked_for():
    paper = source(1, FRONT_MATTER, ["A model of cerebellar granule cells"], file_name="granule.pdf")
    assert answer("What is this paper about?", paper) == (
        "Cerebellar granule cells fire at rates up to 1 kHz when driven by mossy fibre input. "
        "The model reproduces this firing with four voltage-gated conductances. [1]"
    )
    assert answer("Which journal published the granule cell model?", paper).startswith(
        "Journal of Computational Neuroscience 17, 149–171 (2004)"
    )


@pytest.mark.parametrize("text, expected", [
    ("Journal of Computational Neuroscience 17, 149–171 (2004)", True),
    ("Department of Physiology, University College London, Gower Street, London WC1E 6BT, UK", True),
    ("Received 12 March 2003; accepted 2 October 2003", True),
    ("Correspondence: A. Author, a.author@ucl.ac.uk", True),
    ("© 2004 Kluwer Academic Publishers. All rights reserved.", True),
    ("National Institutes of Health", False),  # a funder named in a list
    ("Padraig Gleeson University College London UK Website", False),  # a board member's line
    ("The model was developed at the University of Edinburgh in 2001.", False),
    # from each start in "a.a.a..." the address ran to the run's end (quadratic: minutes)
    ("a." * 100_000, False),
    ("a-" * 100_000 + " x", False),
    ("a." * 100_000 + "@example.org", True),
])
def test_what_reads_as_front_matter(text, expected):
    assert looks_like_front_matter(text) is expected


def test_a_papers_body_text_leaves_out_its_front_matter_and_reference_entries():
    text = ("Both detectors recorded the signal in 2015.\n"
            "1 Australian National University, Canberra, Australian Capital Territory 0200, Australia\n"
            "[1] A. Einstein, Sitzungsber. Preuss. Akad. Wiss. Berlin, 688 (1916).\n"
            "3. Shojania KG, Grimshaw JM: Evidence-based quality improvement. Health Aff 2005, 24(1):138-150.\n"
            "12 Mason, M. Sample size and saturation in PhD studies, 2010.\n"
            "2. Read the files into a list of tables, one per year since 2010.\n"
            "[2] the second footnote, with no year")
    assert body_text(text) == ("Both detectors recorded the signal in 2015.\n"
                               "2. Read the files into a list of tables, one per year since 2010.\n"
                               "[2] the second footnote, with no year")


def test_a_list_written_as_prose_fits_a_listing_question():
    from chat.backends.extractive.fits import LIST_FOR_LISTING, bonus

    listing = frozenset({"listing"})
    assert bonus(listing, "prose", "Xarray needs numpy, pandas and packaging at run time.", False) == LIST_FOR_LISTING
    assert bonus(listing, "prose", "The seasons DJF, MAM, JJA, and SON are sorted.", False) == LIST_FOR_LISTING
    assert bonus(listing, "prose", "In the morning, after breakfast, the dough rises.", False) == 0.0
    assert bonus(frozenset(), "prose", "Xarray needs numpy, pandas and packaging at run time.", False) == 0.0


HOW_DO_I = (
    "| How do I... | Solution |\n| --- | --- |\n"
    "| add a new coordinate variable | `DataArray.assign_coords` |\n"
    "| rename a variable, dimension or coordinate | `Dataset.rename`, `Dataset.rename_dims` |\n"
    "| remove a variable from my object | `Dataset.drop_vars` |\n"
    "| sort values | `Dataset.sortby` |\n"
    "| convert to a pandas DataFrame | `Dataset.to_dataframe` |"
)
SWAP = ("The related `Dataset.swap_dims` method swaps a dimension for a non-dimension variable:\n\n"
        "```\nds.swap_dims({\"time\": \"day\"})\n```")


def test_a_row_keyed_by_what_is_asked_answers_it():
    # The row's first cell says what the question asks ("rename ... dimension"): the row
    # answers, under its header, over a better-ranked passage about a neighbouring method.
    assert answer("How can I rename a dimension?", source(1, SWAP, ["Renaming variables"], score=0.95),
                  source(2, HOW_DO_I, ["How do I ..."], score=0.65)) == (
        "| How do I... | Solution |\n| --- | --- |\n"
        "| rename a variable, dimension or coordinate | `Dataset.rename`, `Dataset.rename_dims` |\n\n[2]"
    )


@pytest.mark.parametrize("table, expected", [
    (HOW_DO_I, 1.0),  # "renam" and "dimension" in one first cell
    ("| name | what it does |\n| --- | --- |\n| `swap_dims` | rename a dimension |", 0.0),  # not in a first cell
    ("| a | b |\n| --- | --- |\n| rename the file | keep its dimension |", 0.6),  # "renam" alone: 1.5 of 2.5
    ("rename a dimension", 0.0),  # no table
    # a first cell of nine words describes a case: no key
    ("| input | outcome |\n| --- | --- |\n| a page too large to rename in one dimension only | refused |", 0.0),
])
def test_the_share_of_the_question_a_rows_first_cell_holds(table, expected):
    from chat.backends.extractive.candidates import key_share

    assert key_share(table, {"renam", "dimension"}, {"renam": 1.5, "dimension": 1.0}) == pytest.approx(expected)
