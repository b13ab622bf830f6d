"""Acronyms a question asks to spell out, and the chunks that spell them out.

"What does the acronym LEMS stand for?" is answered by the text that gives the words the
acronym is made of: ``LEMS (Low Entropy Model Specification)``, ``"COmputational Modeling
in BIology NEtwork" (COMBINE)``, a heading ``LEMS: Low Entropy Model Specification``.
Neither ranked list finds that text: the question's other words ("acronym", "stand for")
are not in it, the acronym itself is in hundreds of chunks, and the uncased embedding
model reads COMBINE as the verb. Its form finds it: the acronym next to words whose
capitals or initials spell it (:func:`expansion`), looked for only in the chunks that hold
the acronym's lexeme (:func:`acronym_definitions`, through
:func:`domains.retrieval.definitions.scan_chunks`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from .bm25 import query_lexemes
from .definitions import scan_chunks
from .filters import CompiledFilter

# The question asks what a word stands for: "What does X stand for?", "What is X short
# for?", "the acronym / abbreviation X".
_ASKS = re.compile(r"\b(stands?\s+for|short\s+for|acronym|abbreviation|initialism|abbreviated?)\b", re.I)
# An acronym: 2-12 capitals or digits, a capital first ("LEMS", "COMBINE", "HDF5").
_ACRONYM = re.compile(r"(?<![\w.-])[A-Z][A-Z0-9]{1,11}(?![\w-])")
# Words an expansion's initials skip ("Modeling *in* Biology").
_SMALL = frozenset("a an and at by for from in of on or the to with".split())
_WORD = re.compile(r"[^\W\d_][\w'-]*")
# Characters that frame an expansion without being part of it (Markdown, quotes).
_FRAME = "*_`\"'\u201c\u201d\u2018\u2019 "
def asked_acronym(question: str) -> str:
    """The acronym ``question`` asks to spell out, "" when none.

    A question asks it when it says "stand(s) for", "short for", "acronym", "abbreviation"
    or "initialism" and holds exactly one all-capitals word of 2-12 capitals or digits, a
    capital first ("What does the acronym LEMS stand for?" -> "LEMS"; "what does CF stand
    for in CF conventions" -> "CF"; two different ones -> "").
    """
    if not _ASKS.search(question):
        return ""
    found = set(_ACRONYM.findall(question))
    return found.pop() if len(found) == 1 else ""


def _spells(acronym: str, words: Sequence[str]) -> bool:
    """Whether the capitals of ``words``, or the initials of its words (small words such as
    "of" and "in" skipped or not), are the letters of ``acronym``, in any case."""
    letters = "".join(c for c in acronym if c.isalpha()).lower()
    if len(words) < 2 or not letters:
        return False
    capitals = "".join(c for word in words for c in word if c.isupper()).lower()
    initials = "".join(word[0] for word in words).lower()
    content = "".join(word[0] for word in words if word.lower() not in _SMALL).lower()
    return letters in (capitals, initials, content)


def _leading(acronym: str, text: str) -> str:
    """The shortest run of words opening ``text`` that spells ``acronym``, "" when none."""
    return _spelling_run(acronym, text, closing=False)


def _trailing(acronym: str, text: str) -> str:
    """The shortest run of words closing ``text`` that spells ``acronym``, "" when none."""
    return _spelling_run(acronym, text, closing=True)


def _spelling_run(acronym: str, text: str, closing: bool) -> str:
    words = list(_WORD.finditer(text))
    for n in range(2, min(len(words), len(acronym) + 4) + 1):
        run = words[-n:] if closing else words[:n]
        if _spells(acronym, [m.group(0) for m in run]):
            return text[run[0].start():] if closing else text[:run[-1].end()]
    return ""


def expansion(acronym: str, text: str) -> str:
    """The first place ``text`` spells out ``acronym``, as it is written there, "" when
    none: the acronym then its words in parentheses (``LEMS (Low Entropy Model
    Specification)``), the words then the acronym in parentheses (``"COmputational Modeling
    in BIology NEtwork" (COMBINE)``), or the acronym, a colon or dash, and its words
    (``LEMS: Low Entropy Model Specification``). The words spell it by their capitals or
    by their initials (small words such as "of" skipped or not); Markdown emphasis and
    quotes around them are allowed.
    """
    name = re.escape(acronym)
    found: list[tuple[int, str]] = []
    for pattern in (rf"(?<![\w-]){name}[{re.escape(_FRAME)}]*\(([^()\n]{{3,160}})\)",
                    rf"(?<![\w-]){name}[*_`]*\s*[:\u2014\u2013-]\s+([^\n]{{3,160}})"):
        match = next((m for m in re.finditer(pattern, text) if _leading(acronym, m.group(1).strip(_FRAME))), None)
        if match:
            found.append((match.start(), match.group(0).rstrip(_FRAME + "\n")))
    for words_at, opening, closing in _before_parenthesis(name, text):
        words = _trailing(acronym, text[words_at:opening].strip(_FRAME))
        if words:  # from the first spelling word to the closing parenthesis
            start = words_at + text[words_at:opening].rindex(words)
            found.append((start, text[start:closing]))
            break
    return min(found)[1] if found else ""


def _before_parenthesis(name: str, text: str) -> Iterator[tuple[int, int, int]]:
    """Where ``text`` writes the acronym in parentheses after its words: per ``(NAME)``
    in order, (start of the words, its opening parenthesis, the end of its closing one). The words are the
    3-200 characters before the parenthesis, back to the nearest parenthesis or line
    break. Found from each parenthesis back (a pattern opening with the words tried up
    to 200 characters from every character of the text: 25 us a character, 8 s for a
    chunk of 300,000 zero-width spaces, which cost no token)."""
    for match in re.finditer(rf"\(\s*[*_`]*{name}[*_`]*\s*\)", text):
        opening = match.start()
        start = max(0, opening - 200)
        start = max(start, *(text.rfind(c, start, opening) + 1 for c in "()\n"))
        if opening - start >= 3:
            yield start, opening, match.end()


def acronym_definitions(acronym: str, store_id: int, k: int, where: CompiledFilter | None = None) -> list[int]:
    """The chunks of a store that spell out ``acronym`` (:func:`expansion`), in the
    store's order (chunk id), at most ``k``: of those holding its lexeme, the ones whose
    text has it (case-sensitively) before a parenthesis, a colon or a dash, or inside
    parentheses (:func:`domains.retrieval.definitions.scan_chunks`, which bounds the work).

    :param acronym: from :func:`asked_acronym` (capitals and digits).
    :param where: filter over the chunk alias ``c``.
    :returns: [chunk id]; [] when the acronym has no lexeme or nothing spells it out.
    """
    if not _ACRONYM.fullmatch(acronym):
        return []
    pattern = rf"\m{acronym}\M[*_`\"'\s]*[(:\u2014\u2013-]|\(\s*[*_`]*{acronym}[*_`]*\s*\)"
    return scan_chunks(store_id, query_lexemes(acronym)[:1], pattern, lambda text: bool(expansion(acronym, text)), k,
                       where)
