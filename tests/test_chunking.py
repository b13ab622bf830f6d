"""Heading-aware chunking with the embedding model's tokenizer."""

import pytest

from domains.embeddings import count_tokens
from domains.text import indexed_text
from ingestion.chunking import chunk_blocks
from ingestion.convert.base import Block


def test_chunks_never_span_two_heading_chains():
    blocks = [
        Block(("A",), "Alpha one."),
        Block(("A",), "Alpha two."),
        Block(("A", "B"), "Beta."),
        Block(("C",), "Gamma."),
    ]
    chunks = chunk_blocks(blocks, count_tokens, max_tokens=450)
    assert [(c.headings, c.text) for c in chunks] == [
        (("A",), "Alpha one.\n\nAlpha two."),
        (("A", "B"), "Beta."),
        (("C",), "Gamma."),
    ]


def test_token_budget_holds_for_long_prose_code_and_words():
    sentence = "The membrane potential of the neuron rises when sodium channels open. "
    long_word_run = "x" * 3000
    blocks = [
        Block(("Chapter 1", "2.1 Neurons"), sentence * 120),
        Block(("Chapter 1", "2.1 Neurons"), "\n".join(f"line_{i} = compute({i})" for i in range(400)), "code"),
        Block(("Chapter 1",), long_word_run),
    ]
    chunks = chunk_blocks(blocks, count_tokens, max_tokens=100)
    assert len(chunks) > 10
    for chunk in chunks:
        real = count_tokens(indexed_text(chunk.headings, chunk.text))
        assert real <= 100, (real, chunk.text[:80])
        assert chunk.token_count >= real
    # Nothing is lost: every sentence and code line is still there, in order.
    prose = " ".join(c.text for c in chunks if c.headings == ("Chapter 1", "2.1 Neurons") and "compute" not in c.text)
    assert prose.count("sodium channels open") == 120
    code = "\n".join(c.text for c in chunks if "compute" in c.text)
    assert [f"line_{i} = compute({i})" in code for i in (0, 199, 399)] == [True, True, True]


def test_max_tokens_below_32_is_refused():
    with pytest.raises(ValueError, match="max_tokens must be at least 32, got 10"):
        chunk_blocks([Block((), "text")], count_tokens, max_tokens=10)
