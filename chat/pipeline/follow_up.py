"""A follow-up question made searchable on its own, without a model.

"Can you give an example of it?" or "How long does it last?" name nothing a source could
match: what "it" is was said in the question before. A backend that writes search
queries rewrites such a question itself (the conversation is in its prompt); routing by
evidence, the question's embedding and the fallback query (the question itself) do not,
so for them a follow-up is searched together with the question(s) before it.

A question is a follow-up when it refers back (a pronoun such as "it", "they", "that";
"one" after a determiner, as in "which one" or "the other ones"; or it opens with "and",
"also", "what about", "how about") and names at most
MAX_OWN_TERMS content words of its own: "Is it true that xarray reads netCDF?" names
its subject and is searched as asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chat.rag.strategies import keywords

# "Can you give an example of it?" has 2 content words ("give", "example"), "Which Python
# version does it require?" 3; a question naming 4 or more usually names its subject.
MAX_OWN_TERMS = 3
_REFERS_BACK = re.compile(
    r"\b(it|its|it's|they|them|their|theirs|this|that|these|those|he|him|his|she|her|hers|there|"
    r"former|latter|same|above)\b", re.IGNORECASE)
# "one" refers back only after a determiner: "which one handles it?", not "one way to".
_ONE = re.compile(
    r"\b(?:which|what|the|that|this|these|those|each|either|neither|other|another|first|second|"
    r"last|same|latter|former)\s+ones?\b", re.IGNORECASE)
_ELLIPSIS = re.compile(r"^\s*(and|also|then|what about|how about)\b", re.IGNORECASE)
# How many earlier questions a chain of follow-ups ("What is a term?", "How long does it
# last?", "And in Paxos?") may reach back.
MAX_CHAIN = 3


def is_follow_up(question: str) -> bool:
    """True when ``question`` refers back to the conversation and names (almost) nothing
    of its own (see the module docstring)."""
    if not (_REFERS_BACK.search(question) or _ELLIPSIS.search(question) or _ONE.search(question)):
        return False
    # "the other ones" names nothing of the question's own.
    own = [w for w in keywords(_ONE.sub(" ", question)) if not _REFERS_BACK.fullmatch(w)]
    return len(own) <= MAX_OWN_TERMS


def search_question(question: str, history: Sequence[dict]) -> str:
    """The text to route and search ``question`` by: the question itself, or for a
    follow-up, the previous user question followed by it.

    :param history: earlier messages, oldest first, as ``[{"role", "content"}]``.
    :returns: ``question`` unchanged when it is not a follow-up or no user message
        precedes it; else the earlier user questions back to the last one that is not a
        follow-up (at most MAX_CHAIN), oldest first, then ``question``, joined by spaces.
    """
    if not is_follow_up(question):
        return question
    asked = " ".join(question.split())
    earlier: list[str] = []
    for message in reversed(history):
        text = " ".join(str(message.get("content") or "").split())
        if message.get("role") != "user" or not text or text == asked:
            continue
        earlier.insert(0, text)
        if len(earlier) == MAX_CHAIN or not is_follow_up(text):
            break
    return " ".join([*earlier, question]) if earlier else question
