"""The routing probes of domains.retrieval.probe on a real store: how much of a question
one chunk holds (lexical_coverage), counted from the part of its text that counts and in
proportion to the chunk's nearness to the question."""

from __future__ import annotations

import math

import pytest

from domains import embeddings
from domains.retrieval import lexical_coverage, nearest_chunk_similarity, query_lexemes

from .pipeline_helpers import domain_of

QUESTION = "How do I clear the cache in Firefox?"  # lexemes clear, cach, firefox
# idf in a store of one chunk: held (df 1) log(1 + 0.5 / 1.5), never used (df 0) log(1 + 1.5 / 0.5)
HELD, ABSENT = math.log(4 / 3), math.log(4)


@pytest.fixture
def notes(db, tmp_path):
    return domain_of(tmp_path, "notes", "Notes", {"signin.md": (
        "# Clearing sign-ins\n\nFailed sign-ins are counted; a lockout ends when the cache entry expires.\n")})


def test_a_chunks_share_is_the_idf_weighted_share_of_the_question_it_holds(notes):
    lexemes = query_lexemes(QUESTION)
    assert lexical_coverage(lexemes, [notes])[notes.id] == pytest.approx(2 * HELD / (2 * HELD + ABSENT))
    assert lexical_coverage([], [notes]) == {}


def test_a_chunks_share_counts_in_proportion_to_its_cosine_up_to_near(notes):
    lexemes, vector = query_lexemes(QUESTION), embeddings.embed_query(QUESTION)
    whole = 2 * HELD / (2 * HELD + ABSENT)
    cosine = nearest_chunk_similarity(vector, [notes])[notes.id]  # the store's only chunk
    assert 0 < cosine < 0.5
    assert lexical_coverage(lexemes, [notes], query_vector=vector, near=1.0)[notes.id] == pytest.approx(whole * cosine)
    assert lexical_coverage(lexemes, [notes], query_vector=vector, near=cosine)[notes.id] == pytest.approx(whole)
    assert lexical_coverage(lexemes, [notes], query_vector=-vector, near=0.1)[notes.id] == 0.0  # a negative cosine
    assert lexical_coverage(lexemes, [notes], query_vector=vector)[notes.id] == pytest.approx(whole)  # near 0: whole


def test_a_chunk_holds_the_words_of_its_headings_and_of_the_body_its_text_is_cut_to(notes):
    lexemes = query_lexemes(QUESTION)
    assert lexical_coverage(lexemes, [notes], body=lambda text: text)[notes.id] == pytest.approx(
        2 * HELD / (2 * HELD + ABSENT))
    # "cache" is in the text alone, "clearing" in the heading
    assert lexical_coverage(lexemes, [notes], body=lambda text: "")[notes.id] == pytest.approx(
        HELD / (2 * HELD + ABSENT))
    firefox = lexical_coverage(lexemes, [notes], body=lambda text: text + " Firefox, too.")[notes.id]
    assert firefox == pytest.approx((2 * HELD + ABSENT) / (2 * HELD + ABSENT))
