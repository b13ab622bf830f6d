"""The running summary without a model."""

from __future__ import annotations

from collections.abc import Sequence

from .text import split_sentences

# The running summary keeps this many characters.
SUMMARY_CHARS = 2_000


def fold_summary(summary: str, messages: Sequence[dict]) -> str:
    """One line per message (its first sentence, at most 200 characters), appended to
    ``summary``, the whole cut to the last SUMMARY_CHARS."""
    lines = [summary] if summary else []
    for message in messages:
        first = split_sentences(message["content"])[:1] or [message["content"].strip()]
        lines.append(f"{message['role']}: {first[0][:200]}")
    text = "\n".join(line for line in lines if line)
    return text[-SUMMARY_CHARS:]
