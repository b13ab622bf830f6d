"""How the extractive backend quotes across a chunk's edges: a lead-in ending its chunk
quoted with the block opening the document's next chunk (on a real store), a chunk or
paragraph that begins mid-sentence never quoted from there, a document's title line never
the answer, and a list of as many items as the question counts quoted with its lead-in."""

from __future__ import annotations

import pytest

from chat.backends.extractive.candidates import CUT_CHARS
from chat.backends.extractive.shapes import shapes
from domains.models import Chunk as StoredChunk, Document, Domain, Store

from .extractive_helpers import answer, answer_citing, source


LEVELS_LEAD = (
    "The Foo format has been stable since 2011.\n\n"
    "There are three levels of compliance to the Foo specification:"
)
LEVELS_LIST = "- Level 1: metadata only\n- Level 2: morphology\n- Level 3: whole networks"


def _document(*texts: str) -> list[int]:
    domain = Domain.objects.create(name="colon", description="colon")
    store = Store.objects.create(name="colon-store", domain=domain)
    document = Document.objects.create(store=store, file_name="foo.md")
    return [StoredChunk.objects.create(store=store, document=document, ordinal=n, text=text).id
            for n, text in enumerate(texts)]


def _answer_with_ids(question: str, chunk_id: int, text: str) -> tuple[str, list]:
    stored = source(1, text, ["Foo", "Compliance"], file_name="foo.md")
    stored.chunks[0].chunk_id = chunk_id
    stored.chunks[0].document_id = StoredChunk.objects.get(id=chunk_id).document_id  # a stored chunk names its document
    return answer_citing(question, stored)


# The list opening the document's next chunk is quoted with a lead-in ending its chunk in a
# colon, or in a dangling word ("which are") that introduces what follows as surely; both
# chunks are cited under one marker.
DANGLING_LEAD = ("The Foo format has been stable since 2011.\n\n"
                 "The Foo specification has three levels of compliance, which are")


@pytest.mark.django_db
@pytest.mark.parametrize("lead, quoted", [
    (LEVELS_LEAD, "There are three levels of compliance to the Foo specification:"),
    (DANGLING_LEAD, "The Foo specification has three levels of compliance, which are"),
])
def test_a_lead_in_ending_its_chunk_is_quoted_with_the_block_opening_the_next_chunk(lead, quoted):
    first, second = _document(lead, f"{LEVELS_LIST}\n\nAny level 1 file is also a level 2 file.")
    text, cited = _answer_with_ids("How many levels of compliance does Foo define?", first, lead)
    assert text == f"{quoted}\n\n- Level 1: metadata only\n- Level 2: morphology\n- Level 3: whole networks [1]"
    assert cited == [[first, second]]


@pytest.mark.django_db
def test_a_lead_in_ending_its_chunk_stays_out_when_the_next_chunk_opens_with_prose():
    # Nothing it introduces follows: the colon would hang, so the other sentence answers.
    first, _ = _document(LEVELS_LEAD, "Any level 1 file is also a level 2 file.")
    text, cited = _answer_with_ids("How many levels of compliance does Foo define?", first, LEVELS_LEAD)
    assert text == "The Foo format has been stable since 2011. [1]"
    assert cited == [[first]]


TIDY = (
    "Tidy data is a standard way of mapping the meaning of a dataset to its structure. A dataset is messy or tidy "
    "depending on how rows, columns and tables are matched up with observations, variables and types. In tidy data:\n\n"
    "1. Each variable forms a column.\n2. Each observation forms a row.\n3. Each type of observational unit forms a table.\n\n"
    "This is Codd's 3rd normal form (Codd 1990), but with the constraints framed in statistical language, and the focus "
    "put on a single dataset rather than the many connected datasets common in relational databases. Messy data is any "
    "other arrangement of the data."
)


def test_a_list_of_as_many_items_as_the_question_counts_is_quoted_with_its_lead_in():
    assert "count:3" in shapes("What are the three rules of tidy data?")
    assert not any(s.startswith("count:") for s in shapes("What are three-dimensional arrays?"))
    # The list is "the three rules", in none of the question's words; a sentence with the
    # word "rule" is not (a PDF's "rule of thumb" scored above it).
    rule = ("A general rule of thumb is that it is easier to describe functional relationships between variables "
            "than between rows.")
    assert answer("What are the three rules of tidy data?", source(1, rule, ["2. Tidy data", "2.2. Data semantics"]),
                  source(2, TIDY, ["2. Tidy data", "2.3. Tidy data"])) == (
        "In tidy data:\n\n1. Each variable forms a column.\n2. Each observation forms a row.\n"
        "3. Each type of observational unit forms a table. [2]"
    )


def test_the_documents_title_line_is_never_the_answer():
    """A scanned paper's title (not recognised as one: OCR has no font sizes to tell) holds
    every word of a question about its subject; the answer is in its body."""
    title = "Hydrogen incorporation in a-Si:H - growth studies on an Expanding Thermal Plasma"
    text = (
        f"{title}\n\nR.J. Severens, F. van de Pas, J. Bastiaanssen, W.M.M. Kessels\n\n"
        "In order to understand the possible contribution of the flux of atomic hydrogen towards the substrate, "
        "a number of isotope studies have been carried out. From this we can conclude that by far the dominant "
        "part of the hydrogen remaining in the film originates from the silane radical but that there still is a "
        "contribution from the atomic hydrogen in the plasma."
    )
    paper = source(1, text, file_name="severens_asih_scan.pdf")
    question = "How is hydrogen incorporated in a-Si:H films grown by expanding thermal plasma?"
    assert answer(question, paper) == f"{title} [1]"  # no title known: the line that matches most
    paper.metadata = {"title": "Hydrogen incorporation in a-Si:H: growth studies on an expanding thermal plasma."}
    assert answer(question, paper) == (
        "From this we can conclude that by far the dominant part of the hydrogen remaining in the film originates from "
        "the silane radical but that there still is a contribution from the atomic hydrogen in the plasma. [1]"
    )


@pytest.mark.django_db
def test_a_chunk_cut_inside_a_sentence_is_never_quoted_from_the_cut():
    """A long paragraph split between two chunks: the second chunk's first sentence is the
    end of one begun in the first; quoted alone it started mid-quotation (new-user trial)."""
    cut = ("A question that names a paper reaches its domain through the document whose metadata best holds "
           'the question\'s naming words (the field words "author", "published", "year", "paper" ... left out; '
           "the stores' documents whose line holds a question word, found through an index of their lexemes): "
           "that share raises the lexical evidence, and the cosine of the question to the document's reference "
           'line the dense evidence, so "In what year was')
    assert len(cut) >= CUT_CHARS
    rest = ('Dijkstra\'s Solution of a Problem in Concurrent Programming Control published?" reaches the papers '
            "domain though its chunks print neither the year nor the full title. The author of a paper is read "
            "from its metadata, never from its chunks.")
    first, second = _document(cut, rest)
    text, cited = _answer_with_ids("Who wrote Solution of a Problem in Concurrent Programming Control?", second, rest)
    assert (text, cited) == ("", [])  # nothing else answers: no source does
    # The same chunk after a paragraph that ends its sentence, or after a short line without
    # a full stop (no cut: "More details to follow"), opens with a sentence of its own.
    for before in (f"{cut} Dijkstra.", "More details to follow"):
        StoredChunk.objects.filter(id=first).update(text=before)
        text, _ = _answer_with_ids("Who wrote Solution of a Problem in Concurrent Programming Control?", second, rest)
        assert text == f"{rest.split(' The author')[0]} [1]"


def test_a_paragraph_resumed_in_lower_case_is_never_quoted_from_its_start():
    # A PDF sentence resumed after a figure's caption: "propagation time, the events ..."
    # began before the figure, elsewhere. What is left (the caption, the last sentence)
    # does not state the ratio: nothing is said (it quoted the caption before the answer
    # had to state what was asked, chat/backends/extractive/stated.py).
    text = ("FIG. 1. The gravitational-wave event GW150914 observed by the LIGO Hanford and Livingston detectors.\n\n"
            "propagation time, the events have a combined signal-to-noise ratio (SNR) of 24 [45].\n\n"
            "Only the LIGO detectors were observing at the time of GW150914.")
    result = answer("What is the signal-to-noise ratio of GW150914?", source(1, text, [], file_name="ligo.pdf"))
    assert result == ""


def test_a_chunk_is_read_up_to_its_first_characters():
    # Zero-width spaces cost no token, so a hostile chunk may hold millions of them; the
    # answer read each of its characters several times (ten chunks of 230,000: 10 s).
    filler = "\u200b" * 2_000_000
    text = f"Klea stores its documents in PostgreSQL.\n\n{filler}\n\nThe index is rebuilt nightly."
    assert answer("Where does Klea store its documents?", source(1, text)) == (
        "Klea stores its documents in PostgreSQL. [1]")
