"""An answer is composed only when its passages state something about what was asked
(chat/backends/extractive/stated.py): the question's content words held by the quoted
passages (text, headings, source), or a strong cosine; a question naming something has
one of its names held."""

from __future__ import annotations

import pytest

from chat.backends.extractive.stated import STATED, STRONG, content, misspelt, names, states
from chat.backends.extractive.text import terms

from .extractive_helpers import answer, source


@pytest.mark.parametrize("question, expected", [
    ("What time zone is Sydney in?", {"sydney"}),
    ("How many qubits does IBM's Condor processor have?", {"ibm", "condor"}),
    ("Who wrote jLEMS?", {"jlem"}),  # a capital inside a word names something, first word or not
    ("CPython or PyPy?", {"cpython", "pypy"}),
    ("What is the capital of Australia?", {"australia"}),
    ("How do I install it?", set()),  # "I" names nothing
    ("How Do I Install It On Windows?", set()),  # title case: its capitals name nothing
    ("How Do I Install NeuroML On Windows?", {"neuroml"}),
])
def test_the_names_a_question_holds(question, expected):
    assert names(question) == expected


@pytest.mark.parametrize("question, listing, expected", [
    ("How many calories are in a medium banana?", False, {"calory", "medium", "banana"}),
    ("What is the best way to learn to play the guitar?", False, {"learn", "play", "guitar"}),
    ("What does the acronym LEMS stand for?", False, {"lems"}),
    ("What is MOOSE built on?", False, {"moos"}),
    ("How many are there?", False, {"many"}),  # only frame words: those
    ("What is 17 times 23?", False, set()),  # only numbers besides the frame: about no word
    ("Which stacking methods are available?", True, {"stack"}),
    ("Which stacking methods are available?", False, {"stack", "method", "availabl"}),
])
def test_the_content_words_leave_out_the_frame_and_numbers(question, listing, expected):
    assert content(terms(question), listing) == expected


def test_cosine_and_share_of_the_content_words_decide():
    wanted = terms("How do I undo my last git commit?")  # content: undo git commit
    idf = {t: 1.0 for t in wanted}
    question = "How do I undo my last git commit?"
    # two of three content words held: share 0.67
    assert states(question, wanted, idf, 0.18, {"git", "commit"}, 0.35) is False  # under the floor
    assert states(question, wanted, idf, 0.17, {"git", "commit", "undo"}, 0.35) is True  # all held: no floor
    assert (STATED, STRONG) == (0.85, 0.6)
    assert states(question, wanted, idf, 0.19, {"git", "commit"}, 0.15) is True  # 0.19 + 0.67 >= 0.85
    assert states(question, wanted, idf, 0.17, {"git", "commit"}, 0.15) is False  # 0.17 + 0.67 < 0.85
    assert states(question, wanted, idf, 0.45, {"git"}, 0.35) is False  # 0.45 + 0.33
    assert states(question, wanted, idf, STRONG, set(), 0.35) is True  # a strong cosine states it alone


def test_a_question_naming_something_needs_one_of_its_names_held():
    question = "What time zone is Sydney in?"
    wanted = terms(question)
    idf = {"time": 1.0, "zone": 1.0, "sydney": 2.0}
    assert states(question, wanted, idf, 0.55, {"time", "zone"}, 0.35) is False  # share 1/3 without Sydney
    assert states(question, wanted, idf, 0.55, {"zone", "sydney"}, 0.35) is True
    assert states(question, wanted, idf, 0.59, {"zone"}, 0.35) is False
    assert states(question, wanted, idf, 0.61, {"zone"}, 0.35) is True  # strong


def test_a_near_miss_sharing_a_word_with_the_sources_is_not_answered():
    # The recipe holds "banana" and numbers; the question asks for calories.
    recipe = source(1, "- 1 1/2 cups mashed bananas (this is around 4-5 bananas)\n- 2 eggs\n- 1 cup sugar",
                    ["Banana bread", "Ingredients"], file_name="banana-bread.md")
    assert answer("How many calories are in a medium banana?", recipe) == ""
    assert answer("How many mashed bananas go into banana bread?", recipe) == (  # the short list, whole
        "- 1 1/2 cups mashed bananas (this is around 4-5 bananas)\n- 2 eggs\n- 1 cup sugar [1]")


def test_a_name_held_by_the_source_or_its_domain_counts():
    # "Klea" is nowhere in the passage; the source is the klea-docs domain's.
    text = "A domain is a knowledge area: its stores, filter fields and the groups that may query it."
    chunk = source(1, text, ["Concepts"], file_name="concepts.md")
    assert answer("What is a domain in Klea?", chunk) == ""
    chunk.domain = "klea-docs"
    assert answer("What is a domain in Klea?", chunk) == f"{text} [1]"


def test_a_follow_up_is_judged_by_its_own_words():
    # Searched together with the question before it ("How do I point Klea at my own
    # PostgreSQL server?"), the follow-up asks about the terminal: the passage stating that
    # need not name the server too.
    from asgiref.sync import async_to_sync

    from chat.backends.extractive.passages import Composer
    from domains import embeddings

    question = "How do I ask it something from the terminal?"
    text = "From the terminal, ask with `manage.py ask \"question\"`; it prints the answer and its sources."
    composer = Composer(embeddings.embed_query(question), [source(1, text, ["Asking"], file_name="cli.md")],
                        question, "How do I point Klea at my own PostgreSQL server? " + question)

    async def collect():
        return "".join([piece async for piece in composer.pieces(lambda number, *rest: f"[{number}]")])

    assert async_to_sync(collect)() == f"{text} [1]"


def test_a_name_spelled_otherwise_is_held():
    # "tabouli" asked, "Tabouleh" the recipe's title: one name; short words, other starts
    # and overlong tokens are not
    names = "Tabouleh (tabouleh.md)\nDirections"
    assert misspelt({"tabouli", "bulgur", "soak", "tabular"}, names) == {"tabouli"}
    assert misspelt({"neuorml"}, "NeuroML documentation") == {"neuorml"}
    assert misspelt({"zarrs"}, "zarr") == set()  # under MISSPELT_LENGTH letters
    assert misspelt({"bitter"}, "Orange butter cake") == set()  # another second letter: two words
    assert misspelt({"gabouli"}, "tabouleh") == set()  # another first letter
    sequence = "acgt" * 12
    assert misspelt({sequence}, sequence[:-1] + "a") == set()  # over MISSPELT_LONGEST letters


def test_misspelt_names_are_looked_for_in_bounded_work():
    # 500 missing terms against 30,000 words of one start and length: only the eight
    # longest terms, in the first MISSPELT_CHARS of the text (37 s unbounded)
    terms_ = {f"ab{i:05d}zzzq" for i in range(500)}
    text = " ".join(f"ab{i:05d}yyyq" for i in range(30_000)) + " ab00001zzzq"
    assert misspelt(terms_, text) == set()  # the match lies past MISSPELT_CHARS
    assert misspelt({"ab00001zzzq"}, text[:200] + " ab00001zzzw") == {"ab00001zzzq"}
