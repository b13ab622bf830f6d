"""Fixed replies: decline (guard), refuse (no domain fits), clarify (evaluation gave up)."""

from __future__ import annotations

import re

from asgiref.sync import sync_to_async

from domains.retrieval import question_language

from ..graph import Step, declare
from ..state import TurnState
from .answer import no_source_text, other_language_text
from .streaming import WRITES as SAID
from .streaming import say

DECLINE_TEXT = "I'm sorry, but I can't help with that request."
GUARD_FAILED_TEXT = "I can't check this question for safety right now, so I won't answer it. Please try again later."


# A word, with the dots, hyphens and pluses inside a name ("based.cooking", "klea-docs").
_TOKEN = re.compile(r"\w+(?:[.+-]\w+)*")
# The subject of a description: what comes before its first colon or full stop.
_LEAD = re.compile(r"^(.*?)(?::\s|\.\s|$)", re.S)
# Words no name part stands for ("my-library" is not named by "my").
_COMMON = frozenset("the and for with our your my new all any one".split())


def subject_words(name: str, description: str) -> set[str]:
    """The lower-cased words that name a domain: its name and the name's parts of three
    letters or more ("klea-docs": klea-docs, klea, docs), and the names in its
    description's subject, the text before the first colon or full stop ("The
    documentation of this Klea RAG server: ..." gives klea, rag; "NeuroML: a standard
    ..." gives neuroml). A name there is a word with a capital letter other than the
    subject's first word (that one only with an inner capital, digit or dot: "NeuroML",
    not "The"), or a subject of one word ("xarray: ...")."""
    words = {name.lower()} | {part for part in re.split(r"[\W_]+", name.lower())
                              if len(part) >= 3 and part not in _COMMON}
    lead = _TOKEN.findall(_LEAD.match(description.strip()).group(1))
    if len(lead) == 1:
        return words | {lead[0].lower()}
    for position, word in enumerate(lead):
        inner = re.search(r"[A-Z0-9.]", word[1:])
        if (inner if position == 0 else re.search(r"[A-Z]", word)) and len(word) >= 2:
            words.add(word.lower())
    return words


def named_domains(question: str, domains: list) -> list[str]:
    """The names of the ``domains`` (rows with ``name`` and ``description``) whose
    subject words (:func:`subject_words`) the question uses, in the given order."""
    tokens = {token.lower() for token in _TOKEN.findall(question)}
    tokens |= {part for token in tokens for part in re.split(r"[.+-]", token)}
    return [d.name for d in domains if subject_words(d.name, d.description) & tokens]


def refusal_text(domains: list[str], hint: str) -> str:
    """The reply when no domain fits; ``hint`` says how to ask one anyway (a chosen
    domain is asked without classification; TurnRequest.pick_hint)."""
    if not domains:
        return "This question does not match any of the available domains (none available)."
    return f"This question does not match any of the available domains ({', '.join(domains)}). {hint}"


def clarify_text(domains: list[str]) -> str:
    return (
        f"I could not find an answer to this in {', '.join(domains)}. "
        "Could you rephrase the question or add details?"
    )


@declare(reads={"guard_failed"}, writes=SAID)
async def decline(state: TurnState) -> Step:
    await say(state, GUARD_FAILED_TEXT if state.guard_failed else DECLINE_TEXT)
    return Step("next", "guard failed" if state.guard_failed else "unsafe")


@declare(reads={"allowed", "search_text"}, writes=SAID)
async def refuse(state: TurnState) -> Step:
    """No domain fits. A question in another language than English is told so (the
    sources are matched in English: :func:`other_language_text`). A question that names
    domains (:func:`named_domains`), or any question when only one domain is available,
    is about them: no source there answers it. Otherwise the reply lists the domains and
    says how to ask one anyway."""
    names = [d.name for d in state.allowed]
    language = await sync_to_async(question_language)(state.question)
    if language != "english":
        await say(state, other_language_text(language))
        return Step("next", f"asked in {language}")
    about = names if len(names) == 1 else named_domains(state.search_question, state.allowed)
    if about:
        await say(state, no_source_text(about))
        return Step("next", "no source in " + ", ".join(about))
    await say(state, refusal_text(names, state.request.pick_hint))
    return Step("next", "lists " + (", ".join(names) or "no domain"))


@declare(reads={"routed"}, writes=SAID)
async def clarify(state: TurnState) -> Step:
    await say(state, clarify_text(state.domain_names))
    return Step("next", "asks for details")
