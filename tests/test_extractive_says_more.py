"""Passages that say nothing but the question's own words (a caption, "A C++ API for NeuroML.")
are scored down and never follow another (chat/backends/extractive/followers.py
``says_more``), save to a yes/no question; which words of a passage count as the question's.
How far a chosen passage carries on: test_extractive_reach.py."""

from __future__ import annotations

import pytest

from chat.backends.extractive.followers import _asked_word

from .extractive_helpers import answer, source


def test_a_caption_saying_only_the_questions_words_answers_nothing():
    # "A C++ API for NeuroML." holds every word of the question and nothing else: the
    # sentence saying how it is produced answers (SAYS_NOTHING_NEW).
    produced = ("The C++ API is generated from the NeuroML specification using the CodeSynthesis XSD XML Schema "
                "to C++ data binding compiler.")
    assert answer("Is there a C++ API for NeuroML, and how is it produced?",
                  source(1, "A C++ API for NeuroML.", ["NeuroML C++ API"], score=0.9),
                  source(2, produced, ["NeuroML C++ API", "Generating the API"], score=0.6)) == f"{produced} [2]"


def test_one_new_name_is_enough_to_answer():
    # "ModelDB" starts with the question's "model" but is a name of its own: the sentence
    # says where the code was published.
    text = ("This page documents the conversion of the Ray et al. 2020 model to NeuroML.\n\n"
            "The original code is published on ModelDB.")
    assert answer("Where was the original code of the model published?", source(1, text, ["Ray et al. 2020"])) == (
        "The original code is published on ModelDB. [1]"
    )


def test_to_a_yes_no_question_the_sentence_in_its_words_is_the_answer():
    # "Xarray can read netCDF files." holds nothing but the question's words, and says yes.
    assert answer("Can xarray read netCDF files?", source(1, "Xarray can read netCDF files.", ["I/O"])) == (
        "Xarray can read netCDF files. [1]")


@pytest.mark.parametrize("word, expected", [
    ("notebook", True), ("widget", True),
    ("not", False),  # no part of "notebook": a sentence saying no says something new
    ("installation", True),  # started by "install"
    ("instal", True),  # starts "installation"
    ("ins", False),  # under four letters: only as itself
])
def test_a_word_of_a_passage_is_a_question_term_as_itself_or_by_a_start_of_four_letters(word, expected):
    asked = {"notebook", "widget", "install", "installation"}
    assert _asked_word(word, asked, sorted(asked), max(map(len, asked))) is expected
