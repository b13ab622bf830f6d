"""Text units of the model-free answers: sentences, code lines, question terms."""

from __future__ import annotations

import re

MIN_SENTENCE_CHARS = 25
# Lines of code lose their fences in conversion; in a prose answer they read as noise.
_CODE_START = re.compile(
    r"^(\$ |# |>>> |\.\.\. |\.venv/|import |from \S+ import |export |pip |python |[\w.]+ = "
    r"|(return|def|class|async|await|raise|yield|assert|with|for|if|elif|try|except|print)\b)"
)
_CODE_CHARS = frozenset("=(){}[]<>;$#`\\|_/")
_WORD = re.compile(r"[a-z0-9_]+")
_STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or the this to what when where which "
    "who why with you your my me we our into use using".split()
)
# A colon does not end a sentence ("(admin: Ingestion > Staged files)").
_SENTENCE = re.compile(r"((?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])|\n+)")
# Abbreviations whose full stop ends no sentence ("Cormack et al. 2009", "e.g. BM25", "p. 4").
_ABBREVIATION = re.compile(r"(?:\bet al|\be\.g|\bi\.e|\bcf|\bvs|\bFigs?|\bEqs?|\bpp?|\bca|\bapprox)\.$")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (at least MIN_SENTENCE_CHARS characters); a line break always
    ends one, a full stop after an abbreviation never does."""
    pieces = _SENTENCE.split(text)
    sentences = [pieces[0]]
    for separator, piece in zip(pieces[1::2], pieces[2::2]):
        if "\n" not in separator and _ABBREVIATION.search(sentences[-1]):
            sentences[-1] += separator + piece
        else:
            sentences.append(piece)
    return [s.strip() for s in sentences if len(s.strip()) >= MIN_SENTENCE_CHARS]


def looks_like_code(sentence: str) -> bool:
    """A shell or Python line, or text dense in code punctuation (over 8% of its characters)."""
    if _CODE_START.match(sentence):
        return True
    return sum(ch in _CODE_CHARS for ch in sentence) > 0.08 * len(sentence)


def terms(text: str) -> set[str]:
    """Lower-cased words without stop words, crudely stemmed (plural/verb endings)."""
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP_WORDS or len(word) < 2:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        found.add(word)
    return found


def matches(wanted: set[str], text: str) -> set[str]:
    """The question terms found in ``text``: as a word, or as the start of one
    ("izhikevich" in "izhikevich2007_network")."""
    words = terms(text)
    return {t for t in wanted if t in words or any(w.startswith(t) for w in words)}
