"""Context assembly: field lookup on mixed results, deduplication, the token budget.

Results may be dicts, :class:`~chat.rag.results.SearchResultItem` objects or any
object with the same attributes, mixed in one list. Lookup order (REFERENCE.md B):

- text = ``item.text`` > ``item.memory`` > "" (items without text are skipped);
- source = ``metadata["source"]`` > ``item.source`` > "";
- filename = ``metadata["filename"]`` > ``item.filename`` > "";
- score = ``item.score`` > 0.0; metadata = ``item.metadata`` > {} (None counts as {}).

Tokens are estimated as ceil(characters / 4) — about 4 characters per English token
for the MiniLM WordPiece tokenizer and for GPT-style BPE; no tokenizer is loaded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

CHARS_PER_TOKEN = 4
DEFAULT_SEPARATOR = "\n\n---\n\n"
# A chunk that does not fit whole is cut to the remaining budget only when at least
# this many tokens remain: a shorter fragment carries too little to cite.
MIN_PARTIAL_TOKENS = 100
TRUNCATION_MARK = "..."


def estimate_tokens(text: str) -> int:
    """ceil(len(text) / 4): the token estimate used for every budget here."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _field(item, name: str):
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


def item_metadata(item) -> dict:
    value = _field(item, "metadata")
    return value if isinstance(value, dict) else {}


def item_text(item) -> str:
    return str(_field(item, "text") or _field(item, "memory") or "")


def item_source(item) -> str:
    return str(item_metadata(item).get("source") or _field(item, "source") or "")


def item_filename(item) -> str:
    return str(item_metadata(item).get("filename") or _field(item, "filename") or "")


def item_score(item) -> float:
    value = _field(item, "score")
    try:
        return float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def item_label(item, position: int) -> str:
    """What a reader is shown for the item: filename > source > "Source <position>"."""
    return item_filename(item) or item_source(item) or f"Source {position}"


def deduplicate_chunks(results: Iterable) -> list:
    """Drop repeated chunks, keeping the first (best-ranked) occurrence.

    The key is (source, text): equal text from two files is kept twice. None items
    and items without text are dropped.

    :param results: dicts and/or result objects (see the module docstring).
    :returns: the kept items, themselves (not copies), in their order.
    """
    seen: set[tuple[str, str]] = set()
    kept = []
    for item in results:
        if item is None:
            continue
        text = item_text(item)
        if not text:
            continue
        key = (item_source(item), text)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _truncate(text: str, max_tokens: int) -> str:
    """``text`` cut to ``max_tokens`` (mark included), at a word boundary when one is
    in the last fifth."""
    chars = max(0, (max_tokens - estimate_tokens(TRUNCATION_MARK)) * CHARS_PER_TOKEN)
    cut = text[:chars]
    space = cut.rfind(" ")
    if space > chars * 0.8:
        cut = cut[:space]
    return cut + TRUNCATION_MARK


def build_context(
    results: Sequence,
    max_tokens: int = 4000,
    deduplicate: bool = True,
    separator: str = DEFAULT_SEPARATOR,
    include_source: bool = True,
) -> tuple[str, list]:
    """Join result texts into one context string within a token budget.

    Each used item reads ``[n] <label>`` then its text (``include_source``; n counts
    the used items from 1, so it matches the default citation ids) or the bare text.
    Items are taken in order while they fit: estimate(item) + estimate(separator) per
    item. The first one that does not fit is cut to the rest of the budget when at
    least MIN_PARTIAL_TOKENS (100) remain, and ends the context either way.

    :param results: dicts and/or result objects, best first.
    :param max_tokens: the budget (estimated tokens, :func:`estimate_tokens`).
    :param deduplicate: drop repeated (source, text) items first.
    :returns: (context, used_results): the string, and the items it contains (the
        objects given, in order; a cut item counts as used).
    :raises ValueError: ``max_tokens`` below 1.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
    items = deduplicate_chunks(results) if deduplicate else [r for r in results if r is not None]
    parts: list[str] = []
    used: list = []
    spent = 0
    separator_tokens = estimate_tokens(separator)
    for item in items:
        text = item_text(item)
        if not text:
            continue
        part = f"[{len(used) + 1}] {item_label(item, len(used) + 1)}\n{text}" if include_source else text
        cost = estimate_tokens(part) + separator_tokens
        if spent + cost > max_tokens:
            remaining = max_tokens - spent - separator_tokens
            if remaining >= MIN_PARTIAL_TOKENS:
                parts.append(_truncate(part, remaining))
                used.append(item)
            break
        parts.append(part)
        used.append(item)
        spent += cost
    return separator.join(parts), used


class DefaultContextBuilder:
    """:func:`build_context` as a component (the context builder :class:`~chat.rag.RAG`
    uses unless given another).

    Usage::

        builder = DefaultContextBuilder(include_source=False)
        context, used = builder.build(results, max_tokens=500)

    A context builder's ``build(results, max_tokens=..., deduplicate=...)`` returns
    either the context string or ``(context, used_results)``; with a bare string every
    result given counts as used (and is cited).
    """

    def __init__(self, separator: str = DEFAULT_SEPARATOR, include_source: bool = True):
        self.separator = separator
        self.include_source = include_source

    def build(self, results: Sequence, max_tokens: int = 4000, deduplicate: bool = True) -> tuple[str, list]:
        """:returns: (context, used_results), see :func:`build_context`."""
        return build_context(
            results, max_tokens=max_tokens, deduplicate=deduplicate,
            separator=self.separator, include_source=self.include_source,
        )
