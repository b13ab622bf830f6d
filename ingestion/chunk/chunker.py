"""Heading-aware chunking: blocks -> chunks of at most ``max_tokens`` tokens.

A chunk never spans two heading chains. Within one chain, consecutive blocks are packed
greedily; a block larger than the budget is split at sentence (prose) or line (code,
lists, tables) boundaries, and a single overlong sentence or line at word boundaries.
Token counts are those of the embedding model's tokenizer, for the text as it is
embedded: the heading chain line plus the chunk text.

Chunk text is Markdown (:data:`ingestion.options.CHUNK_FORMAT`, docs/ingestion.md
"Chunk text"): blocks are separated by a blank line, code is fenced with three
backticks, a table is a pipe table whose first row is its header (repeated on every part
of a split table), lists keep their ``- `` / ``1.`` items. So an answer can quote a whole
list, table or code block, and the chat UI renders it as such. A table header too big to
repeat (over a third of the budget) is not repeated: it stays the first row, and the parts
are plain pipe rows, so the number of chunks stays about source tokens / budget.

A heading chain over a third of the budget is cut for the chunks under it (outer headings
dropped, then the innermost cut: :func:`_fit_chain`), for the same reason.

A run of more than :data:`MAX_RUN_CHARS` word characters is one ``[UNK]`` token to the
model, so token counts do not bound its size: it is cut into runs of that length first.
Characters the tokenizer drops (zero-width and format characters, combining marks,
controls) and white space cost no token either: a text costs at least one token per
:data:`CHARS_PER_TOKEN` characters, and a run of more than :data:`MAX_WORD_CHARS`
characters without white space is cut like a word run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from itertools import groupby

from domains.text import heading_chain
from ingestion.convert.base import Block, ConvertedDocument, LineBox

DEFAULT_MAX_TOKENS = 450
FENCE = "```"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
# The tokenizer's max_input_chars_per_word: a longer word is a single [UNK] token.
MAX_RUN_CHARS = 100
_LONG_RUN = re.compile(rf"\w{{{MAX_RUN_CHARS + 1},}}")
# The least a text costs: one token per CHARS_PER_TOKEN characters. Prose and code average
# 4-6 characters a token (the bench stores' densest chunk 5.7), but 300,000 zero-width
# spaces, which cost none, made one chunk of 300,053 characters and 16 tokens, and 150,000
# blank lines of a code block one of 150,026 (every reader of chunk text reads them all).
CHARS_PER_TOKEN = 32
# A run without white space longer than this is cut (a lone word is never split further).
MAX_WORD_CHARS = 1000
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD_CHARS + 1},}}")
_CELL_BAR = re.compile(r"(?<!\\)\|")  # a bar between cells, not one escaped inside a cell


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk before it is stored: heading chain, reader-facing text, token count and
    where the text came from (``provenance``, shape in :func:`provenance`)."""

    headings: tuple[str, ...]
    text: str
    token_count: int
    provenance: dict = field(default_factory=dict, compare=False)


@dataclass
class _Origin:
    """What one part of a block brings to its chunk's provenance."""

    boxes: list[LineBox]
    lines: tuple[int, int] | None
    offset: int | None
    anchor: str


def _visible(text: str) -> int:
    return sum(1 for ch in text if not ch.isspace())


def _origins(block: Block, parts: list[tuple[str, int]]) -> list[_Origin]:
    """Per part of ``block``, the PDF lines under its characters (parts split the block
    only at white space, so counting the other characters finds them; boxes come with
    PDF text blocks only, which get no Markdown frame) and the block's source lines."""
    origins, start = [], 0
    for text, _ in parts:
        end = start + _visible(text)
        boxes = [box for box in block.boxes if box.start < end and box.end > start]
        origins.append(_Origin(boxes, block.lines, block.offset, block.anchor))
        start = end
    return origins


def provenance(origins: list[_Origin]) -> dict:
    """A chunk's provenance from its parts (docs/ingestion.md, "Provenance").

    :returns: for PDF text ``{"pages": [first, last], "boxes": [[page, left, top, right,
        bottom], ...]}`` (pages 1-based, boxes as fractions of the page, origin top-left);
        for Markdown, reST and HTML ``{"lines": [first, last], "offset": int, "anchor":
        str}`` (1-based source lines, character offset of the first); ``{}`` when the
        converter recorded nothing.
    """
    out: dict = {}
    boxes = [box for origin in origins for box in origin.boxes]
    if boxes:
        pages = [box.page for box in boxes]
        out["pages"] = [min(pages), max(pages)]
        out["boxes"] = [[box.page, *box.box] for box in dict.fromkeys(boxes)]
    spans = [origin for origin in origins if origin.lines is not None]
    if spans:
        first = min(spans, key=lambda o: o.lines[0])
        out["lines"] = [first.lines[0], max(o.lines[1] for o in spans)]
        if first.offset is not None:
            out["offset"] = first.offset
    anchor = next((o.anchor for o in origins if o.anchor), "")
    if anchor:
        out["anchor"] = anchor
    return out


def _cells(line: str) -> int:
    """How many cells a row of a table block has (cells joined by " | ", a "|" inside a
    cell escaped ``\\|``: :func:`ingestion.convert.base.table_text`)."""
    return len(_CELL_BAR.findall(line)) + 1


def _width(text: str) -> int:
    """The cells of a table block's widest row."""
    return max((_cells(line) for line in text.split("\n") if line.strip()), default=1)


def _table_row(line: str, width: int) -> str:
    """A row as a pipe-table row of ``width`` cells: a narrower row gets empty cells (a
    Markdown table drops the cells of a row wider than its header, so every row is as
    wide as the widest)."""
    return f"| {line.strip()} |" + " |" * (width - _cells(line))


def _table_header(text: str) -> list[str]:
    """The first row of a table block and the separator row, as wide as its widest row
    (counted, not read off the header's text: a block's text is stripped, so a header
    whose first cell is empty, a row and column matrix, lost its leading separator)."""
    width = _width(text)
    return [_table_row(text.split("\n", 1)[0], width), "|" + " --- |" * width]


def _pieces(block: Block, header: bool = True) -> list[str]:
    """The units a block may be split into: sentences, lines, or (tables) body rows, the
    header row first when it is not repeated (``header`` False)."""
    if block.kind == "text":
        return [s for s in _SENTENCE_END.split(block.text) if s.strip()]
    if block.kind == "table":
        rows, width = block.text.split("\n")[1 if header else 0 :], _width(block.text)
        return [_table_row(line, width) for line in rows if line.strip()]
    return [line for line in block.text.split("\n")]


def _frame(block: Block, parts: list[str], header: bool = True) -> str:
    """Markdown of a block (or of one part of a split block) from its units; a table's
    header row and separator are left out when ``header`` is False."""
    if block.kind == "text":
        return " ".join(parts)
    if block.kind == "code":
        return "\n".join([FENCE, *parts, FENCE])
    if block.kind == "table" and header:
        return "\n".join([*_table_header(block.text), *parts])
    return "\n".join(parts)


def _cut_runs(text: str) -> str:
    """``text`` with every word-character run longer than :data:`MAX_RUN_CHARS`, and every
    run without white space longer than :data:`MAX_WORD_CHARS`, cut by spaces into runs of
    that length."""

    def cut(match: re.Match) -> str:
        run = match.group()
        return " ".join(run[i : i + MAX_RUN_CHARS] for i in range(0, len(run), MAX_RUN_CHARS))

    def cut_word(match: re.Match) -> str:
        run = match.group()
        return " ".join(run[i : i + MAX_WORD_CHARS] for i in range(0, len(run), MAX_WORD_CHARS))

    return _LONG_WORD.sub(cut_word, _LONG_RUN.sub(cut, text))


def markdown(block: Block) -> str:
    """The block as chunk text (see the module docstring)."""
    return _frame(block, [block.text] if block.kind in ("text", "list", "code") else _pieces(block))


def _word_windows(text: str, budget: int, count: Callable[[str], int]) -> Iterable[str]:
    """Greedy windows of whole words within ``budget`` (a lone overlong word alone).

    Each window's length is searched from the previous one's (gallop, then bisect), so
    a tokenization never spans much more than two windows: linear in the text, where
    growing a window word by word re-tokenized it once per word (quadratic).
    """
    words = text.split()
    start, guess = 0, 64
    while start < len(words):
        rest = len(words) - start

        def fits(n: int) -> bool:
            return count(" ".join(words[start : start + n])) <= budget

        low, high, step = 0, min(guess, rest), 1  # low fits (or is 0), high is the probe
        if fits(high):
            low, high = high, None
            while low < rest:
                probe = min(rest, low + step)
                if not fits(probe):
                    high = probe
                    break
                low, step = probe, step * 2
        else:
            while high - step >= 1:
                if fits(high - step):
                    low = high - step
                    break
                high, step = high - step, step * 2
        while high is not None and high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if fits(middle) else (low, middle)
        size = max(1, low)
        yield " ".join(words[start : start + size])
        start += size
        guess = size


def _fit(block: Block, budget: int, count: Callable[[str], int]) -> list[tuple[str, int]]:
    """The block as (Markdown text, tokens) parts, each within ``budget`` tokens; the
    frame of a split block (fences, a table's header) is repeated on every part."""
    whole = markdown(block)
    tokens = count(whole)
    if tokens <= budget:
        return [(whole, tokens)]
    frame = count(_frame(block, [])) + 1 if block.kind in ("code", "table") else 0
    header = not (block.kind == "table" and frame > budget // 3)
    if not header:
        frame = 0
    room = max(8, budget - frame)
    parts: list[tuple[str, int]] = []
    current: list[str] = []
    current_tokens = 0

    def close() -> None:
        nonlocal current, current_tokens
        if current:
            parts.append((_frame(block, current, header), current_tokens + frame))
            current, current_tokens = [], 0

    for piece in _pieces(block, header):
        piece_tokens = count(piece) + 1
        if piece_tokens > room:
            close()
            windows = _word_windows(piece, room, count)
            parts.extend((_frame(block, [w], header), count(w) + frame) for w in windows)
            continue
        if current and current_tokens + piece_tokens > room:
            close()
        current.append(piece)
        current_tokens += piece_tokens
    close()
    return parts


def _fit_chain(headings: tuple[str, ...], limit: int, count: Callable[[str], int]) -> tuple[str, ...]:
    """``headings`` as stored with their chunks: the whole chain when its line is within
    ``limit`` tokens, else the innermost headings that fit, else the innermost one cut
    (by characters, at most :data:`MAX_RUN_CHARS` per word run) to fit."""
    chain = tuple(_cut_runs(h) for h in headings)
    while chain and count(heading_chain(chain)) + 1 > limit:
        if len(chain) > 1:
            chain = chain[1:]
            continue
        low, high = 0, len(chain[0])  # low fits (a chain of nothing does), high does not
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if count(chain[0][:middle]) + 1 <= limit else (low, middle)
        return (chain[0][:low].rstrip(),) if low else ()
    return chain


def chunk_blocks(
    blocks: Iterable[Block], count_tokens: Callable[[str], int], max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[ChunkDraft]:
    """Pack blocks into chunks.

    :param count_tokens: tokenizer length function (no special tokens); a text costs at
        least ``len(text) // CHARS_PER_TOKEN``.
    :param max_tokens: budget per chunk, heading chain included; must be >= 32.
    :returns: chunks in document order; ``token_count`` includes the heading chain line.
    :raises ValueError: when ``max_tokens`` is below 32.
    """
    if max_tokens < 32:
        raise ValueError(f"max_tokens must be at least 32, got {max_tokens}")

    def count(text: str) -> int:
        return max(count_tokens(text), len(text) // CHARS_PER_TOKEN)

    chunks: list[ChunkDraft] = []
    for source_headings, group in groupby(blocks, key=lambda b: b.headings):
        headings = _fit_chain(source_headings, max_tokens // 3, count)
        chain_tokens = count(heading_chain(headings)) + 1 if headings else 0
        budget = max(16, max_tokens - chain_tokens)
        texts: list[str] = []
        origins: list[_Origin] = []
        used = 0
        for block in group:
            if _LONG_RUN.search(block.text) or _LONG_WORD.search(block.text):
                block = replace(block, text=_cut_runs(block.text))
            parts = _fit(block, budget, count)
            for (text, tokens), origin in zip(parts, _origins(block, parts)):
                if texts and used + tokens + 2 > budget:  # 2: the blank line between packed blocks
                    chunks.append(ChunkDraft(headings, "\n\n".join(texts), used + chain_tokens, provenance(origins)))
                    texts, origins, used = [], [], 0
                cost = tokens + (2 if texts else 0)
                texts.append(text)
                origins.append(origin)
                used += cost
        if texts:
            chunks.append(ChunkDraft(headings, "\n\n".join(texts), used + chain_tokens, provenance(origins)))
    return chunks


def chunk_document(
    document: ConvertedDocument, count_tokens: Callable[[str], int], max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[ChunkDraft]:
    """:func:`chunk_blocks` over a converted document's blocks."""
    return chunk_blocks(document.blocks, count_tokens, max_tokens)
