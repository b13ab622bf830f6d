"""Chunk counts and sizes of hostile Markdown: the token budget holds whatever the input.

Usage: ``python bench/chunk_extremes.py [max_tokens]`` (about a minute; no database,
no embeddings: the model's tokenizer only).

Inputs are generated: a 300-column x 20-row table (its header alone is over the budget),
a 5,000-row and a 20,000-row table (each part of a split table narrows its source
lines within the table's: that search was quadratic, 20,000 rows took minutes), one
sentence followed by 2 MB of "x" without a space, a 2,000-word heading over 5,000 words
of text, a 2 MB line of words without a sentence end, and as plain text (``.txt``) 8 MB of hard-wrapped lines without a blank line and 8 MB of short
paragraphs (plain-text conversion was quadratic in both: 2 MB took 31 s). For
each: chunks, the largest chunk as embedded (heading chain line + text, tokens), the
total characters of chunk text and headings against the source's, and the seconds spent
converting, chunking and narrowing the chunks' source lines (as ingestion does).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def inputs() -> dict[str, str]:
    wide_header = "|" + "|".join(f"h{j}" for j in range(300)) + "|"
    wide_rows = ["|" + "|".join(f"r{i}c{j}" for j in range(300)) + "|" for i in range(20)]
    long_rows = [f"| {i} | item {i} | {i * 7 % 1000} | note {i % 13} |" for i in range(5000)]
    words = "the neuron membrane potential rises when sodium channels open and calcium flows".split()
    return {
        "table 300 x 20": "# Wide\n\n" + "\n".join([wide_header, "|" + "---|" * 300, *wide_rows]) + "\n",
        "table 4 x 5,000": "# Long\n\n| n | name | value | note |\n|---|---|---|---|\n" + "\n".join(long_rows) + "\n",
        "table 4 x 20,000": "# Longer\n\n| n | name | value | note |\n|---|---|---|---|\n"
        + "\n".join(f"| {i} | item {i} | {i * 7 % 1000} | note {i % 13} |" for i in range(20_000)) + "\n",
        "2 MB word": "Intro text about the gigantic token.\n\n" + "x" * 2_000_000 + "\n",
        "2,000-word heading": "# " + " ".join(f"word{i}" for i in range(2000)) + "\n\n"
        + " ".join(f"body{i}" for i in range(5000)) + "\n",
        "2 MB line": " ".join(words[(i * 7) % len(words)] for i in range(300_000)) + "\n",
        "8 MB .txt, no blank line": "\n".join(" ".join(words[:9]) + "." for _ in range(130_000)) + "\n",
        "8 MB .txt, paragraphs": "\n\n".join(" ".join(words[:9]) + "." for _ in range(130_000)) + "\n",
    }


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")
    import django

    django.setup()
    from bench.common import command_line
    from domains.embeddings import count_tokens
    from domains.text import heading_chain, indexed_text
    from ingestion.chunk.chunker import chunk_document
    from ingestion.chunk.lines import narrow_lines
    from ingestion.convert.markdown import convert_markdown
    from ingestion.convert.plain import convert_plain

    max_tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 450
    print(f"`{command_line()}` (max_tokens {max_tokens})\n")
    print("| input | source chars | chunks | largest chunk (tokens) | chunk chars | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, text in inputs().items():
        started = time.perf_counter()
        convert = convert_plain if ".txt" in name else convert_markdown
        chunks = narrow_lines(chunk_document(convert(text), count_tokens, max_tokens), text)
        seconds = time.perf_counter() - started
        largest = max(count_tokens(indexed_text(c.headings, c.text)) for c in chunks)
        chars = sum(len(heading_chain(c.headings)) + len(c.text) for c in chunks)
        print(f"| {name} | {len(text):,} | {len(chunks):,} | {largest} | {chars:,} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
