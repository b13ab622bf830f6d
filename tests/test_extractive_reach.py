"""How far a chosen passage carries on (chat/backends/extractive/reach.py): into a
one-sentence paragraph leaning on the one before, a second passage as far as the first
would go, never into the first."""

from __future__ import annotations

from .extractive_helpers import answer, source


APPROACHES = (
    "A simulator may have an equivalent internal representation of the core concepts from NeuroML2/LEMS, and so "
    "be able to natively read/write these formats.\n\n"
    "This is the approach taken in jNeuroML and EDEN.\n\n"
    "Another approach is for simulators to natively support importing (a subset of) NeuroML models, whereby the "
    "NeuroML components are converted to the equivalent entities in the simulator's internal representation of "
    "the model.\n\n"
    "This is the approach taken in MOOSE, Arbor and NetPyNE."
)


def test_a_one_sentence_paragraph_leaning_on_the_one_before_is_quoted_with_it():
    # Markdown authors set "This is the approach taken in ..." apart; it names the
    # simulators the question asks for, and means nothing without the paragraph before.
    assert answer("Which simulators import NeuroML models by converting them into their own internal representation?",
                  source(1, APPROACHES, ["Approaches to supporting NeuroML"])) == (
        "Another approach is for simulators to natively support importing (a subset of) NeuroML models, whereby the "
        "NeuroML components are converted to the equivalent entities in the simulator's internal representation of "
        "the model. This is the approach taken in MOOSE, Arbor and NetPyNE. [1]"
    )


def test_a_short_second_passage_carries_on_as_the_first_does():
    # The note's first sentence follows the method; short, it is quoted with the sentences
    # carrying on after it, as the best passage would be: the preparation takes both.
    directions = ("1. Cut liver into cubes.\n"
                  "2. Put into a pot and cover with cold water, add 1tsp salt. Bring to a boil and boil for 10-15 "
                  "minutes.\n3. Grate carrots and dice onions. Stew in a frying pan with a little bit of water until "
                  "soft.\n4. In a food processor blend all ingredients together.")
    notes = ("With beef liver, remove its membrane, that is on top, with your fingers. Cut it in small pieces even "
             "cubes or slices and remove the vessels that are inside it. They are not very tasty and are impossible "
             "to chew.")
    result = answer("How do I prep beef liver before making the liver pâté?",
                    source(1, directions, ["Liver pâté", "Directions"]), source(2, notes, ["Liver pâté", "Notes"]))
    assert result == f"{directions} [1]\n\n{notes} [2]"  # "They are ..." carries on about the vessels


def test_a_second_passage_never_carries_on_into_the_first():
    # The best passage is the second sentence; the first, short, follows it: carried on, it
    # would quote the best one again.
    text = "Cream the butter and sugar until pale. Add the orange zest and the eggs one at a time."
    result = answer("How do I make orange butter cake?", source(1, text, ["Orange butter cake", "Directions"]))
    assert result.count("Add the orange zest") == 1
    assert result == f"{text} [1]"
