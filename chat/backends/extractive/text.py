"""Text units of the model-free answers: sentences, code lines, question terms."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

# A paper's front matter, bylines and reference entries: retrieval reads them too (domains/front_matter.py).
from domains.front_matter import (  # noqa: F401
    body_text,
    looks_like_citation,
    looks_like_front_matter,
    looks_like_front_matter_or_byline,
    looks_like_reference_entry,
)

MIN_SENTENCE_CHARS = 25
# Lines of code lose their fences in conversion; in a prose answer they read as noise.
_CODE_START = re.compile(
    r"^(\$ |# |>>> |\.\.\. |\.venv/|import |from \S+ import |export |pip |python |[\w.]+ = "
    r"|(return|def|class|async|await|raise|yield|assert|with|for|if|elif|try|except|print)\b)"
)
_CODE_CHARS = frozenset("=(){}[]<>;$#`\\|_/")
# Letters of any script: "crêpe" is one word, not "cr" and "pe".
_WORD = re.compile(r"\w+")
# "there", "any", "some", "other" and "than" name nothing a passage must hold: "Is there
# any ...?" asks whether, "a port other than 8000" is said "another port" (as counted terms
# they kept that sentence from holding every question term, Composer.holds_all, and the
# question was declined; replayed on the first, second and fourth sets: +1, none lost).
_STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or the this to what when where which "
    "who why with you your my me we our into use using there other than any some".split()
)
# A colon does not end a sentence ("(admin: Ingestion > Staged files)"), nor does an
# abbreviation ("e.g. `mean`", "(resp. `Dataset`)", "ca. 1740 BC", "Eq. 3"; a title before a
# name, "Dr. Smith", reads as a sentence end followed by a name, "... on Main St. The
# museum"). A closing quote or bracket after the mark belongs to the sentence it ends ('... asks "Why?" Then ...'); inside quotation
# marks a mark followed by a lower-case word ends nothing ('so "In what year was ...
# published?" reaches ...').
_NEXT_STARTS = r"(?=[A-Z0-9\"'(\[`“‘])"
_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bresp\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)(?<!\bal\.)"
    r"(?<!\bapprox\.)(?<!\bFig\.)(?<!\bNo\.)(?<!\bp\.)(?<!\bpp\.)"
    # before a number only: "ca. 1740 BC", "Eq. 3", "Vol. 2" (a sentence may end in "c." or
    # "vol.": "press a, b or c. Then ...")
    r"(?!(?<=\bca\.)\s+\d)(?!(?<=\bc\.)\s+\d)(?!(?<=\b[Vv]ol\.)\s+\d)(?!(?<=\bEq\.)\s+\d)(?!(?<=\bEqs\.)\s+\d)"
    r"(?!(?<=\bSec\.)\s+\d)(?!(?<=\bRef\.)\s+\d)(?!(?<=\bRefs\.)\s+\d)\s+" + _NEXT_STARTS
    + r"|(?<=[.!?][\"'”’)\]])\s+" + _NEXT_STARTS + r"|\n+"
)


# Nor does a name's initial after a given name or an initial, or before an initial ("Peter W. Shor",
# "(J. W. Van Orden": a byline was quoted as the sentence "Peter W."); read within the few
# characters around.
_INITIAL = re.compile(r"\b(?:[A-Z][a-z]+|[A-Z]\.)\s[A-Z]\.$")
_NEXT_INITIAL = re.compile(r"[A-Z]\.\s")
_INITIAL_SPAN = 40


def _initial(text: str, start: int, match: re.Match) -> bool:
    """Whether the sentence end ``match`` (from ``start``) follows a name's initial."""
    if "\n" in match.group() or not re.match(r"[A-Z]\.$", text[max(start, match.start() - 2):match.start()]):
        return False
    return bool(_NEXT_INITIAL.match(text, match.end())
                or _INITIAL.search(text, max(start, match.start() - _INITIAL_SPAN), match.start()))


def split_sentences(text: str, min_chars: int = MIN_SENTENCE_CHARS) -> list[str]:
    """The sentences of ``text`` (a line break ends one too) of at least ``min_chars``."""
    pieces, start = [], 0
    for match in _SENTENCE.finditer(text):
        if _initial(text, start, match):
            continue
        pieces.append(text[start:match.start()])
        start = match.end()
    pieces.append(text[start:])
    return [s.strip() for s in pieces if len(s.strip()) >= min_chars]


# The end of a sentence: its mark, then any closing quotes, brackets or emphasis.
_ENDS_SENTENCE = re.compile(r"[.!?:;][\"'”’)\]*_`]*\s*$")
# Words that never open a sentence in lower case, unlike a name ("xarray", "pandas"): a
# paragraph opening with one resumes a sentence ("or you can convert ...", "from the root
# of the repository." after a command).
_CONTINUING = frozenset(
    "a an and as at because but by for from if in into nor of on onto or since so than that the then "
    "to unless until via when where whereas which while who whose with without is are was were will would "
    "can could should may might must be been being has have had does do did not".split()
)
# A word written as a name: a capital, digit, dot, underscore or backtick in it ("pyNeuroML").
_NAME_WORD = re.compile(r"^\S*[A-Z0-9._`]")


def ends_mid_sentence(text: str) -> bool:
    """Whether ``text`` (a paragraph) stops inside a sentence: no closing mark (".", "!",
    "?", ":" or ";", closing quotes or brackets after it) ends it, as where a chunk was
    cut inside a long paragraph ("..., so \"In what year was")."""
    return bool(text.strip()) and not _ENDS_SENTENCE.search(text)


def continues_sentence(paragraph: str, paged: bool = False) -> bool:
    """Whether ``paragraph`` opens in the middle of a sentence: with a lower-case word that
    never opens one ("or", "from", "the" ...), or, in a text laid out in pages (``paged``:
    a PDF, where a figure, a column or a page interrupts sentences), with any lower-case
    word that is no name ("propagation time, the events have ..."). A name written in
    lower case ("xarray is ...", "pandas has ...") opens a sentence elsewhere."""
    first = paragraph.lstrip()
    if not first[:1].islower() or _NAME_WORD.match(first):
        return False
    word = first.split(maxsplit=1)[0].rstrip(",;:")
    return paged or word in _CONTINUING


_INLINE_CODE = re.compile(r"`[^`\n]+`")
# A parenthesis opened after a space (or at the start) is prose's aside, "Markdown (`.md`,
# `.markdown`)"; code's opens right after a name, "open_mfdataset()".
_ASIDE = re.compile(r"(?:^|(?<=\s))\(([^()\n]*)\)")
# A sentence cut off before what it introduces: it ends in a colon, or (with no closing
# punctuation) in a word no sentence ends with ("... module, which provides", "such as").
_LEADS_ON = re.compile(
    r":\s*$|\b(a|an|the|and|or|but|nor|of|to|in|on|at|by|for|from|with|into|onto|as|than|like|"
    r"via|which|that|whose|are|is|be|provides?|includes?|including|contains?|following|follows|below)\s*$",
    re.I,
)
# A sentence that points at what follows it ("with the settings below", "as follows"),
# not at a section elsewhere ("[OCR](#ocr) below") or a number ("below 0 °C").
# A table's caption ("Table 1: Who cleans", "Table 2. Results") points at its table too.
_POINTS_AHEAD = re.compile(
    r"\b(?:(?:the|these|this|those)\s+(?:[\w`-]+\s+){0,3}below|as\s+follows|"
    r"(?:shown|listed|set\s+out)\s+below)\b(?!\s*[-−+]?\d)"
    r"|\A\s*(?:table|tab\.)\s+(?:\d+|[ivxlc]+)[a-z]?\s*[.:]",
    re.I,
)


def leads_on(sentence: str) -> bool:
    """The sentence introduces what follows it (a colon, a dangling last word, or words
    pointing ahead, :func:`points_ahead`): it is never quoted without it."""
    return bool(_LEADS_ON.search(sentence)) or points_ahead(sentence)


def points_ahead(sentence: str) -> bool:
    """The sentence names what follows it as its content ("Only behind a reverse proxy ...
    with the settings below; ..."): quoted only with the block (list, table, code) after it."""
    return bool(_POINTS_AHEAD.search(sentence))


def looks_like_code(sentence: str) -> bool:
    """A shell or Python line, or text dense in code punctuation (over 8% of its
    characters, inline `code` spans of prose and the parentheses of its asides not
    counted: "Markdown (`.md`, `.markdown`), HTML (`.html`)" is prose)."""
    if _CODE_START.match(sentence):
        return True
    prose = _ASIDE.sub(r"\1", _INLINE_CODE.sub("", sentence))
    return sum(ch in _CODE_CHARS for ch in prose) > 0.08 * max(len(prose), 1)


def terms(text: str, parts: bool = False) -> set[str]:
    """Lower-cased words (of any script) without stop words, crudely stemmed (plural and
    verb endings, a final "e": "file" and "files" are one term); with ``parts``, the
    parts of an identifier too ("klea_llm_backend", "klea", "llm", "backend")."""
    found = set()
    words = _WORD.findall(text.lower())
    if parts:
        words += [part for word in words if "_" in word for part in word.split("_")]
    for word in words:
        if word in _STOP_WORDS or len(word) < 2:
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"  # cities -> city
        else:
            for suffix in ("ing", "ed", "es", "s"):
                if len(word) > len(suffix) + 3 and word.endswith(suffix):
                    word = word[: -len(suffix)]
                    break
        if len(word) > 4 and word.endswith("e"):
            word = word[:-1]  # store, stores, stored, storing -> stor
        found.add(word)
    return found


# A term of at most SHORT_TERM letters is found at the start of a longer word only when a
# digit follows it ("pdf" in "pdf2"): "add" is not in "address", nor "own" in "owner".
SHORT_TERM = 3


def matches(wanted: set[str], text: str) -> set[str]:
    """The question terms found in ``text``: as a word, or as the start of one
    ("izhikevich" in "izhikevich2007_network", "install" in "installation"; a short
    term only before a digit, :data:`SHORT_TERM`). Each term is looked up, not compared
    with every word: a question of 4,000 characters holds some 500 terms (comparing took
    18 s over the passages of eight chunks)."""
    words = terms(text, parts=True)  # `KLEA_LLM_BACKEND` states what "the LLM backend" asks for
    ordered = sorted(words)  # the words starting with a term follow it at once
    before_digit = {word[:n] for word in words for n in range(1, SHORT_TERM + 1) if word[n:n + 1].isdigit()}
    found = set()
    for term in wanted:
        if term in words or (term in before_digit if len(term) <= SHORT_TERM else _starts_one(ordered, term)):
            found.add(term)
    return found


def _starts_one(ordered: list[str], term: str) -> bool:
    """Whether a word of ``ordered`` (sorted) starts with ``term``."""
    i = bisect_left(ordered, term)
    return i < len(ordered) and ordered[i].startswith(term)


FENCE = "```"
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+\S")


@dataclass(frozen=True)
class Block:
    """One block of chunk text: ``kind`` "text" (a paragraph), "list", "table" or "code"
    (fenced; a legacy unfenced one gets its fences here), ``text`` as it reads."""

    kind: str
    text: str


def _kind(lines: list[str]) -> str:
    if all(line.lstrip().startswith("|") for line in lines):
        return "table"
    if _LIST_ITEM.match(lines[0]) or is_definition_list(lines):
        return "list"
    # Chunk text of format 1 (before Markdown chunk text): "a | b" rows, unfenced code.
    if len(lines) > 1 and all(" | " in line for line in lines):
        return "legacy-table"
    if all(looks_like_code(line.strip()) for line in lines if line.strip()):
        return "legacy-code"
    return "text"


def _legacy(kind: str, lines: list[str]) -> Block:
    if kind == "legacy-code":
        return Block("code", "\n".join([FENCE, *lines, FENCE]))
    rows = [f"| {line.strip()} |" for line in lines]
    separator = "|" + " --- |" * (lines[0].count(" | ") + 1)
    return Block("table", "\n".join([rows[0], separator, *rows[1:]]))


def segment(text: str) -> list[Block]:
    """Chunk text (Markdown, docs/ingestion.md "Chunk text") -> its blocks in order:
    fenced code whole (blank lines inside kept), the rest split at blank lines."""
    blocks: list[Block] = []
    lines = text.split("\n")
    current: list[str] = []

    def flush() -> None:
        if current:
            kind = _kind(current)
            blocks.append(_legacy(kind, current) if kind.startswith("legacy") else Block(kind, "\n".join(current)))
            current.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(FENCE):
            flush()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(FENCE)), len(lines) - 1)
            fenced = lines[i : end + 1]
            if not fenced[-1].strip().startswith(FENCE) or len(fenced) == 1:
                fenced.append(FENCE)  # a code block cut at the chunk's end
            blocks.append(Block("code", "\n".join(fenced)))
            i = end + 1
            continue
        if line.strip():
            if current and _starts_block(current, line):
                flush()
            current.append(line)
        else:
            flush()
        i += 1
    flush()
    return blocks


def list_items(text: str) -> list[str]:
    """The top-level items of a list block, each with its continuation lines and nested
    items (lines indented deeper than the outermost item markers); the entries of a
    definition list (:func:`is_definition_list`), each a term with its definition."""
    lines = text.split("\n")
    if is_definition_list(lines):
        starts = [not line[:1].isspace() for line in lines]
    else:
        indents = [len(line) - len(line.lstrip()) for line in lines if _LIST_ITEM.match(line)]
        outer = min(indents, default=0)
        starts = [bool(_LIST_ITEM.match(line)) and len(line) - len(line.lstrip()) == outer for line in lines]
    items: list[list[str]] = []
    for line, start in zip(lines, starts):
        if start or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return ["\n".join(item) for item in items]


# A term of a definition list: a short unindented line that ends no sentence.
_TERM = re.compile(r"^\S[^\n]{0,79}(?<![.:;,])$")


def is_definition_list(lines: list[str]) -> bool:
    """Whether ``lines`` are a definition list as chunk text writes one (a term, then its
    definition indented on the next lines: ``"Learner\n  A person who ..."``): every
    unindented line is a term followed by an indented line, and the first line is one."""
    if len(lines) < 2 or lines[0][:1].isspace() or _LIST_ITEM.match(lines[0]):
        return False
    for i, line in enumerate(lines):
        if not line[:1].isspace():
            if not _TERM.match(line) or i + 1 >= len(lines) or not lines[i + 1][:1].isspace():
                return False
    return True


# A glossary line of prose: "Term: what it is" (a label of at most five words, then a colon).
# Its emphasis marks are bounded: unbounded, a line of 4,000 underscores (a form's blank)
# was tried 4,000 x 50 x 4,000 ways, seconds per chunk read.
_LABELLED = re.compile(r"^[*_`]{0,3}[\w(][^:\n]{0,50}?[*_`]{0,3}\s*:\s+\S")


def labelled_line(line: str) -> bool:
    """Whether ``line`` opens with a short label and a colon ("DataArray: A multi-...",
    "Date: September 7, 2021"): an entry of its own, not a sentence of the line before."""
    match = _LABELLED.match(line)
    return bool(match) and len(match.group(0).split(":")[0].split()) <= 5


def _starts_block(current: list[str], line: str) -> bool:
    """Whether ``line`` starts a new block though no blank line comes before it: a list
    item or table row after prose, or prose after a table, is never one paragraph with it
    (its "- " or "|" would read as text glued into the prose)."""
    table_line = line.lstrip().startswith("|")
    in_table = current[0].lstrip().startswith("|")
    if table_line != in_table:
        return True
    return bool(_LIST_ITEM.match(line)) and not _LIST_ITEM.match(current[0])


# A string literal of code: an example input (a question, a file name), not what the code does.
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"' + r"|'(?:[^'\\\n]|\\.)*'")
_FENCED = re.compile(r"^```[^\n]*\n.*?^```", re.M | re.S)


def without_literals(text: str) -> str:
    """``text`` with the string literals of its fenced code blocks emptied (``""``): the
    words a code example passes in (``"content": "How do I ...?"``) are not evidence that
    it answers a question using them."""
    return _FENCED.sub(lambda block: _STRING_LITERAL.sub('""', block.group(0)), text)


# A question in quotation marks ("How do I ...?", “Why ...?”): prose that quotes a question
# mentions it (a benchmark write-up, a changelog, an FAQ index); it does not answer it.
_QUOTED_QUESTION = re.compile(r'"[^"\n]{0,300}\?"|“[^”\n]{0,300}\?”')


def without_quoted_questions(text: str) -> str:
    """``text`` with every quoted question emptied (``""``): its words are not evidence
    that the text answers that question."""
    return _QUOTED_QUESTION.sub('""', text)


def code_body(block: Block) -> str:
    """The lines of a fenced code block without its fences."""
    lines = block.text.split("\n")
    return "\n".join(lines[1:-1])
