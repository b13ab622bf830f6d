"""A follow-up question made searchable on its own, without a model.

"Can you give an example of it?" or "How long does it last?" name nothing a source could
match: what "it" is was said in the question before. A backend that writes search
queries rewrites such a question itself (the conversation is in its prompt); routing by
evidence, the question's embedding and the fallback query (the question itself) do not,
so for them a follow-up is searched together with the question(s) before it.

A question is a follow-up when it refers back and names at most MAX_OWN_TERMS content
words of its own ("Is it true that xarray reads netCDF?" names its subject and is
searched as asked). It refers back when it opens with "and", "also", "what about", "how
about", or when its first reference (a pronoun such as "it", "its", "they", "that";
"one" after a determiner, as in "which one" or "the other ones") has no antecedent in
the question itself. An antecedent is

- an earlier clause or sentence naming something: a content word other than a greeting
  or thanks ("What does KLEA_MAX_TURNS_PER_USER do and what is its default?", "What is xarray and
  why should I use it?", "My phone is slow, how do I fix it?"; not "Thanks! What is its
  default?");
- for a possessive ("its", "their", ...), a name before it in its own clause ("How does
  Raft elect its leader?"). Any other reference cannot stand for a name of its own
  clause ("Which Python version does it require?", "What does open_dataset do with
  it?": "it" is what was asked about before).

A name is a code name (``open_dataset``, ``xr.Dataset``, ``netCDF``, ``KLEA_X``), a
capitalised word not opening a sentence (not "I"), or a quoted name.

Some pronouns refer to nothing and are passed over: "there" in "is there" / "there are";
"this" in "this weekend"; "it" standing for what comes after it ("Is it possible to upload a PDF?", "Is it true
that ...", "Is it worth learning Latin?", "How long does it take to build the index?")
or for the weather ("Is it going to rain tomorrow?"). "Is it easy to use?" leaves its
verb without an object: there "it" is that object, something asked about before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chat.rag.strategies import keywords, split_clauses

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
_POSSESSIVE = re.compile(r"(its|their|theirs|his|her|hers)", re.IGNORECASE)
_BE = r"(?:is|are|was|were|isn't|aren't|wasn't|weren't|be|'s|'re|seems?|exists?)"
# "it" before what it stands for: a that-/whether-clause, or an infinitive after an
# evaluation ("Is it possible to ...?"). After an evaluation that lets "it" be the object
# of its infinitive ("Is it easy to use?", "Is it worth learning?") or after "take" or
# "cost", the infinitive (or gerund) needs an object of its own: a word that is not a
# preposition ("Is it hard to install on Windows?" refers back).
_PREPOSITION = r"(?:on|in|into|with|for|at|from|by|under|over|without|via|through|using|inside|behind|after|before)"
_WITH_OBJECT = rf"(?:to\s+\w+|\w+ing)\s+(?!{_PREPOSITION}\b)[\w`'\"]"
_BE_BEFORE = (r"^(?:'s|\s+(?:is|was|would|will|could|might|may|seems?|seemed))?(?:\s+not)?(?:\s+be)?"
              r"(?:\s+(?:a|an|the|very|really|too|so|more|less|any|even|ever|still|actually|generally))*\s+")
_EXTRAPOSED = re.compile(
    rf"{_BE_BEFORE}(?:possible|true|false|rude|polite|necessary|ok|okay|normal|common|usual|customary|wise|"
    r"important|advisable|recommended|legal|illegal|appropriate|acceptable|likely|unlikely|bad|idea|time)"
    r"\s+(?:to\s+\w|that\b|whether\b|if\b)"
    rf"|{_BE_BEFORE}(?:easy|easier|hard|difficult|impossible|safe|unsafe|dangerous|expensive|cheap|cheaper|good|"
    rf"better|best|fine|healthy|unhealthy|worth|worthwhile)\s+(?:that\b|whether\b|{_WITH_OBJECT})"
    # ("does it take a long time to ..."; bounded: every "it" of a clause may be tried)
    rf"|^\s+(?:takes?|took|costs?|hurts?|matters?|pays?)\b.{{0,60}}?\b{_WITH_OBJECT}", re.IGNORECASE)
_WEATHER = re.compile(
    r"^(?:'s|\s+(?:is|was|will|going\s+to|be))*\s+(?:rain|snow|hail|sunny|cloudy|windy|foggy|cold|hot|warm|"
    r"freezing|storm)", re.IGNORECASE)
# "this weekend", "these days": the speaker's time, not something said before.
_NOW = re.compile(r"^\s+(?:morning|afternoon|evening|night|week|weekend|month|year|season|summer|winter|spring|"
                  r"autumn|days|moment)\b", re.IGNORECASE)
_WORD = re.compile(r"[\w][\w.+#/-]*[\w+#]|\w")
_QUOTED = re.compile(r"`[^`]+`|\"[^\"]+\"|“[^”]+”|(?<!\w)'[^'\s][^']*'(?!\w)")
_CODE = re.compile(r"_|[A-Za-z][./][A-Za-z]|[a-z][A-Z]|^[A-Z0-9]*[A-Z][A-Z0-9]*[A-Z0-9]$")
# A clause of only these words acknowledges an answer or opens the next question ("OK,
# thanks. Another question: what is its default?"): it names nothing.
_DISCOURSE = frozenset(
    "ok okay thanks thank great cool nice good right sure yes no yeah well hmm hi hello hey alright perfect "
    "awesome now next so oh ah sorry actually wait another question understood interesting see"
    .split())
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# How many earlier questions a chain of follow-ups ("What is a term?", "How long does it
# last?", "And in Paxos?") may reach back.
MAX_CHAIN = 3


def is_follow_up(question: str) -> bool:
    """True when ``question`` refers back to the conversation and names (almost) nothing
    of its own (see the module docstring)."""
    if not (_ELLIPSIS.search(question) or _first_reference_without_antecedent(question)):
        return False
    # "the other ones" names nothing of the question's own, nor does "Thanks!".
    own = [w for clause in _clauses(_ONE.sub(" ", question)) for w in _content_words(clause)]
    return len(own) <= MAX_OWN_TERMS


def _first_reference_without_antecedent(question: str) -> bool:
    """True when the question's first reference has no antecedent in the question."""
    named_before = False  # an earlier clause names something
    for clause in _clauses(question):
        pronoun = next((m for m in _REFERS_BACK.finditer(clause) if not _refers_to_nothing(clause, m)), None)
        first = min(filter(None, [pronoun, _ONE.search(clause)]), key=lambda m: m.start(), default=None)
        if first is None:
            named_before = named_before or bool(_content_words(clause))
            continue
        return not (named_before or (_POSSESSIVE.fullmatch(first.group(0)) and _names(clause[:first.start()])))
    return False


def _clauses(question: str) -> list[str]:
    return [c for sentence in _SENTENCE_END.split(question) for c in split_clauses(sentence)]


def _refers_to_nothing(clause: str, match: re.Match) -> bool:
    """"there" in "is there a limit?" or "there are two ways" names no place; "it" in
    "Is it possible to upload a PDF?" or "Is it going to rain?" names no thing, nor does
    "this" in "this weekend"."""
    word, after = match.group(0).lower(), clause[match.end():]
    if word == "there":
        # the words right before it: searching the whole clause before every "there" is quadratic
        return bool(re.search(rf"\b{_BE}\s+$", clause[max(0, match.start() - 20):match.start()], re.IGNORECASE)
                    or re.match(rf"\s*{_BE}\b", after, re.IGNORECASE))
    if word in ("this", "these"):
        return bool(_NOW.match(after))
    return word == "it" and bool(_EXTRAPOSED.search(after) or _WEATHER.search(after))


def _names(text: str) -> list[str]:
    """The names in ``text``: quoted names, code names, capitalised words not opening a
    sentence (nor "I", "I'm", ...)."""
    found = [m.group(0) for m in _QUOTED.finditer(text)]
    for m in _WORD.finditer(_QUOTED.sub(lambda q: " " * len(q.group(0)), text)):
        word = m.group(0)
        if word.lower() in _DISCOURSE or _REFERS_BACK.fullmatch(word):
            continue
        # the character before it, spaces aside (stripping all the text before each word was quadratic)
        before = m.start()
        while before and text[before - 1].isspace():
            before -= 1
        opens_sentence = not before or text[before - 1] in ".!?:;\"'(“"
        if _CODE.search(word) or (word[0].isupper() and not opens_sentence and word.split("'")[0] != "I"):
            found.append(word)
    return found


def _content_words(clause: str) -> list[str]:
    """The content words of ``clause``, none when they only acknowledge ("Great, thanks")."""
    words = [w for w in keywords(clause) if not _REFERS_BACK.fullmatch(w)]
    return [] if all(w.lower() in _DISCOURSE for w in words) else words


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
