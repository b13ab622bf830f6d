"""Structured model calls: JSON-schema constrained chat, parsed and validated, retried
once on invalid output, then the caller's typed default."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # base calls ask_json: no import cycle at run time
    from .base import LLMBackend, Message

logger = logging.getLogger("klea.pipeline")

T = TypeVar("T")
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
RETRY_NOTE = "Your previous reply was not valid JSON for the schema. Reply with the JSON object only."


def strip_think(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (an unclosed one runs to the end)."""
    return _THINK.sub("", text).strip()


def parse_json(text: str) -> object:
    """JSON from a model reply (``<think>`` blocks and code fences removed).

    :raises ValueError: not JSON.
    """
    cleaned = _FENCE.sub("", strip_think(text)).strip()
    return json.loads(cleaned)


async def ask_json(
    backend: LLMBackend,
    messages: Sequence[Message],
    schema: dict,
    validate: Callable[[object], T],
    *,
    model: str | None = None,
) -> tuple[T | None, int]:
    """Ask for JSON following ``schema``; ``validate`` turns the parsed value into the
    node's type or raises ValueError/TypeError/KeyError.

    :returns: (value or None after two invalid replies, number of invalid replies).
    :raises BackendError: the server failed (not retried here: not a model slip).
    """
    attempt_messages = list(messages)
    invalid = 0
    for _ in range(2):
        reply = await backend.chat(attempt_messages, schema=schema, model=model)
        try:
            return validate(parse_json(reply)), invalid
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            invalid += 1
            logger.info("invalid structured reply (%s): %.200s", exc, reply)
            attempt_messages = list(messages) + [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": RETRY_NOTE},
            ]
    return None, invalid
