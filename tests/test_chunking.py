"""Heading-aware chunking with the embedding model's tokenizer."""

import pytest

from domains.embeddings import count_tokens
from domains.text import indexed_text
from ingestion.chunk.chunker import chunk_blocks
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


def test_two_megabyte_line_without_sentence_ends_chunks_in_the_normal_path(db, tmp_path):
    from ingestion.runs.steps import run_chunk
    from ingestion.models import StagedFile

    vocab = "the neuron membrane potential rises when sodium channels open and calcium flows into a dendrite".split()
    words = [vocab[(i * 7) % len(vocab)] for i in range(300_000)]
    text = " ".join(words)
    assert 1_900_000 < len(text) < 2_100_000 and "\n" not in text
    (tmp_path / "one-line.txt").write_text(text, encoding="utf-8")
    report = run_chunk(tmp_path, ocr="off")
    assert [(o.file_name, o.status) for o in report.outcomes] == [("one-line.txt", "chunked")]
    chunks = StagedFile.objects.get(file_name="one-line.txt").chunks
    assert len(chunks) == report.chunks == 800
    assert max(count_tokens(c["text"]) for c in chunks) == 450
    assert " ".join(c["text"] for c in chunks) == text  # split at word boundaries only


def test_a_table_whose_header_is_too_big_to_repeat_is_chunked_by_rows_within_budget():
    # 300 columns x 20 rows: the header alone is over the budget, so it is not repeated.
    header = "|" + "|".join(f"column{j}" for j in range(300)) + "|"
    rows = ["|" + "|".join(f"r{i}v{j}" for j in range(300)) + "|" for i in range(20)]
    from ingestion.convert.markdown import convert_markdown

    document = convert_markdown("# Wide\n\n" + "\n".join([header, "|" + "---|" * 300, *rows]) + "\n")
    chunks = chunk_blocks(document.blocks, count_tokens, max_tokens=450)
    sizes = [count_tokens(indexed_text(c.headings, c.text)) for c in chunks]
    # 35,667 tokens of table over a 450-token budget: 83 chunks (it was 6,000, one per cell).
    assert count_tokens(document.blocks[0].text) == 35_667
    assert (len(chunks), max(sizes)) == (83, 449)
    assert count_tokens(header) > 450 and chunks[0].text.startswith("| column0 | column1 |")
    assert sum(c.text.count("column") for c in chunks) == 300  # the header once, not per chunk
    assert sum(c.text.count("v299 |") for c in chunks) == 20


def test_a_table_is_as_wide_as_its_widest_row_and_an_empty_first_header_cell_keeps_its_column():
    # A block's text is stripped: "| Mon | Tue" had 2 cells counted for its separator
    # row but 3 in the header, and the table showed as raw pipes.
    (chunk,) = chunk_blocks([Block(("Rota",), "| Mon | Tue\nAnn | sink | floor | extra\nBo \\| Cy", "table")],
                            count_tokens)
    assert chunk.text == ("| | Mon | Tue | |\n| --- | --- | --- | --- |\n| Ann | sink | floor | extra |\n"
                          "| Bo \\| Cy | | | |")


def test_a_word_character_run_longer_than_the_tokenizer_word_is_cut_within_budget():
    # 20,000 "x" are one [UNK] token to the model: cut into 100-character runs first.
    text = "Intro text about the gigantic token. " + "x" * 20_000
    chunks = chunk_blocks([Block(("Long",), text)], count_tokens, max_tokens=450)
    # Each 100-character run is 50 tokens: 8 per chunk (807 characters, 408 tokens).
    assert [len(c.text) for c in chunks] == [844] + [807] * 24
    assert max(count_tokens(indexed_text(c.headings, c.text)) for c in chunks) == 408
    assert "".join(c.text for c in chunks).replace(" ", "").count("x" * 100) == 200


def test_a_heading_chain_over_a_third_of_the_budget_is_cut_for_its_chunks():
    # A 2,000-word heading repeated on every chunk made 60 KB of Markdown 18.6 MB of chunks.
    heading = " ".join(f"word{i}" for i in range(2000))
    body = " ".join(f"body{i}" for i in range(5000))
    assert count_tokens(body) == 16_530
    blocks = [Block(("Outer", heading, "Inner"), body), Block(("Outer", heading), body)]
    chunks = chunk_blocks(blocks, count_tokens, max_tokens=450)
    assert len(chunks) == 94
    assert max(c.token_count for c in chunks) == 450
    assert max(count_tokens(indexed_text(c.headings, c.text)) for c in chunks) == 449
    # outer headings dropped while the chain is too long, then the innermost cut to 150 tokens
    assert sorted({(c.headings[0][:12], c.headings[-1][-12:], len(c.headings)) for c in chunks}) == [
        ("Inner", "Inner", 1), ("word0 word1 ", " word70 word", 1)]
    assert max(count_tokens(c.headings[0]) for c in chunks) == 149
    assert sum(c.text.count("body") for c in chunks) == 10_000  # no body word lost


def test_characters_that_cost_no_token_still_bound_a_chunk():
    # Zero-width spaces and blank lines cost no token: a paragraph with 300,000 zero-width
    # spaces was one chunk of 300,053 characters (16 tokens), a code block of 150,000
    # blank lines one of 150,026; every reader of chunk text read them all.
    zero_width = "\u200b" * 300_000
    blocks = [
        Block(("A",), f"A domain is a knowledge area.{zero_width} It holds stores."),
        Block(("B",), "import klea\n" + "\n" * 150_000 + "klea.run()", "code"),
    ]
    chunks = chunk_blocks(blocks, count_tokens, max_tokens=450)
    # at least a token per 32 characters: 450 tokens, at most 14,400 characters
    assert max(len(c.text) for c in chunks) == 14_037
    assert [len([c for c in chunks if c.headings == (h,)]) for h in "AB"] == [22, 341]
    # nothing is lost: the zero-width run is cut by spaces every 1,000 characters, the
    # code block by its lines (each chunk fenced)
    a = "".join(c.text for c in chunks if c.headings == ("A",)).replace(" ", "")
    assert a == f"Adomainisaknowledgearea.{zero_width}Itholdsstores."
    b = [c.text.split("\n") for c in chunks if c.headings == ("B",)]
    assert all(lines[0] == lines[-1] == "```" for lines in b)
    assert [line for lines in b for line in lines[1:-1]] == ["import klea", *[""] * 150_000, "klea.run()"]
