"""How well a passage's form fits the shapes of a question (:mod:`.shapes`).

A generic question about "this" is answered by an opening passage; a how-to question by a
command or code block (or numbered steps) rather than
by prose about it; "which ... are" (or "what goes in ...") by a whole list or table;
"when" by a passage holding a year; "which version" by one holding version numbers
("3.11 or later", "v2.x"); "how do I know when it is done" by one giving the sign
("until ...", "when it reaches ..."); "what can I use instead of X" by one offering a
replacement ("can be substituted", "or use ..."); "what does X stand for" by one spelling X out;
"how many" ("how strong", "what ratio") by one
holding a number, in digits or words, better one of the measure asked for ("53 qubits" to
"how many qubits", a percentage to "how strong", a time to "how long"); "who" by one holding a name; "what is X" by the
sentence that says "X is ..."; "why" by one that gives a cause (never by code); "which option / extra / function" (a name written in
code) by a code block as "how do I" is; a field line ("Date: ...",
"Authors: ...") by its label. The bonus is added
to a passage's score (:mod:`.passages`), so it only breaks near-ties of evidence.
"""

from __future__ import annotations

import re

from domains.retrieval import expansion
from domains.retrieval.definitions import defines_subject

from .shapes import subjects
from .text import list_items, segment, terms

# A quantity: digits (a range "10-14", "1.0%-2.5%", "10+") or a number word, then a
# magnitude ("one million").
_QUANTITY = (
    # (a quantity starts where a word does, its digits taken whole: from inside "1111..." each
    # start ran to its end, quadratic)
    r"(?<![\w.,])(?:\d[\d.,]*+%?(?:\s*(?:-|–|to)\s*\d[\d.,]*+)?\+?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve|fifteen|twenty|thirty|forty|fifty|sixty|a\s+(?:few|couple\s+of|dozen)|several)"
    r"(?:\s+(?:hundred|thousand|million|billion))?"
)
_MEASURE_IN = {
    "percent": re.compile(r"\d\s*%|\bper\s?cent\b", re.I),
    "time": re.compile(
        _QUANTITY + r"\s*(?:seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|months?|years?|yrs?|"
        r"ms|milliseconds?|microseconds?|nanoseconds?)\b", re.I),
    "length": re.compile(
        _QUANTITY + r"\s*(?:characters?|chars?|words?|tokens?|lines?|pages?|letters?|digits?|mm|cm|m|km|"
        r"metres?|meters?|inch(?:es)?|feet|foot|miles?)\b", re.I),
    "size": re.compile(
        _QUANTITY + r"\s*(?:bytes?|[KMGT]i?B|kilobytes?|megabytes?|gigabytes?|terabytes?|tokens?|characters?|chars?|"
        r"elements?|pixels?|rows?|items?|entries|words?|lines?|pages?|mm|cm|m|inch(?:es)?|"
        r"litres?|liters?|ml|l|cups?|grams?|g|kg)\b", re.I),
    "temperature": re.compile(r"\d\s*°|\d\s*degrees?\b|\b\d+\s*[CF]\b"),
}
# The words between are no conjunction or preposition: "Level 1 or Level 2" counts no levels.
_COUNT_OF = re.compile(
    _QUANTITY + r"[\s-]+(?P<words>(?:(?!(?:or|and|of|in|on|to|at|by|for|with|from|the|a|an|is|are|was|were)\b)"
    r"[\w-]+[\s-]+){0,2}[\w-]+)",
    re.I,
)
_BECAUSE = re.compile(
    r"\b(because|since|so that|due to|as a result|in order to|otherwise|this (alters|avoids|prevents|keeps|makes))\b",
    re.I,
)
# A number in digits or in words ("three Levels", "a dozen eggs"); "one" only as a quantity
# ("up to one week", "at most one parent", "one hour"), else it is mostly a pronoun.
_NUMBER_IN = re.compile(
    r"\d|\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundreds?|"
    r"thousands?|millions?|billions?|dozens?|twice|thrice|half)\b"
    r"|\b(up\s+to|at\s+(most|least)|exactly|only|maximum\s+of|minimum\s+of|more\s+than|less\s+than|about)\s+one\b"
    r"|\bone\s+(second|minute|hour|day|night|week|month|year|cup|teaspoon|tablespoon|clove|litre|liter|gram|"
    r"kilogram|pound|ounce|inch|metre|meter|percent)s?\b",
    re.I,
)
# A numbered list's item markers ("3. Add the sugar") number the steps, not the quantity asked for.
_STEP_NUMBER = re.compile(r"^\s*\d{1,3}[.)]\s+", re.M)
# A year ("1998"), a date of an era ("ca. 1740 BC", "AD 79") or a century ("the 16th
# century", "eighteenth-century"): what "when" and "how old is it" ask for.
_YEAR_IN = re.compile(
    r"\b(1[5-9]\d\d|20\d\d)\b|\b\d{1,4}\s*(?:BCE?|CE|AD)\b|\bAD\s*\d{1,4}\b"
    r"|\b(?i:(?:\d{1,2}(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
    r"twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth)[\s-]+centur(?:y|ies))\b"
)
_PROPER_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z]\.)?\s+[A-Z][a-z]+\b")
_INLINE_CODE = re.compile(r"`[^`\n]+`")
# A list written as prose ("the seasons DJF, MAM, JJA and SON"): three or more short
# items (one or two words), the last after "and" / "or"; an item's aside in parentheses
# aside ("Markdown (`.md`, `.myst`), HTML (`.html`) and PDF").
_ENUMERATION = re.compile(
    # (an item starts where a word does: from inside "a.b.c..." each start ran to its end,
    # quadratic; and at most 30 items before the last: from each item of "Ab, Ab, ..." with
    # no "and" the items ran to the end, quadratic too. A longer list still matches, from a
    # later item.)
    r"(?<![\w.+-])(?=[.+-]*\w)(?:[\w.+-]+(?: [\w.+-]+)?, ){1,30}(?:[\w.+-]+ )?(?:and|or) [\w.+-]+"
    # "is one of `string`, `int`, `float`, `list`": the choices named, no conjunction needed
    r"|\bone of [\w.+`-]+(?: [\w.+`-]+)?(?:, [\w.+`-]+(?: [\w.+`-]+)?){2,}"
)
_ITEM_ASIDE = re.compile(r" \([^()\n]*\)")
# An instruction: a sentence (or a step, its marker aside) opening with a verb in the
# imperative ("Pass the ...", "Set `X` ...", "Preheat the oven ..."), the form a how-to answer takes.
_IMPERATIVE = re.compile(
    r"^(?:[-*+]\s+|\d{1,3}[.)]\s+)?(use|pass|set|run|add|call|install|create|open|specify|select|choose|enable|"
    r"disable|put|make|type|edit|write|export|define|provide|keep|give|change|replace|remove|start|stop|point|"
    r"load|upload|build|configure|apply|mix|stir|bake|heat|combine|place|cook|serve|cut|chop|let|pour|preheat|"
    r"wait|try|store|click|follow|register|drop|list|declare|import|fill|sign|enter|attach|save|check)\b",
    re.I,
)

# A field line ("Date: September 7, 2021", "Authors: ...") says by its label which kind
# of value it holds: the label answers "when" or "who", whatever MiniLM makes of the value
# (it scores "Authors: Xarray developers" above "Date: ..." for "when was the xarray
# roadmap written?": the value's words match the heading chain's).
_FIELD_LABELS = {
    "year": re.compile(r"(date|year|released?|release date|published|updated|last updated|created|written|since)", re.I),
    "name": re.compile(r"(authors?|written by|by|maintainers?|editors?|creators?|contributors?|contacts?|owners?)", re.I),
}
_FIELD = re.compile(r"^[*_]*(?P<label>[A-Za-z][\w ]{0,30}?)[*_]*\s*:\s+[^\n]+$")

OPENING_FOR_GENERIC = 0.15
# MiniLM scores a short sentence naming the subject above the sentence defining it, by up
# to 0.35 ("Please cite ... libNeuroML" 0.79, "libNeuroML is a Python package ..." 0.45):
# the defining form (:func:`defines`, strict) is what "what is X" asks for.
SUBJECT_FOR_DEFINITION = 0.35
CAUSE_FOR_WHY = 0.08
BLOCK_OTHERWISE = -0.06  # a list or table answers "which ... are" and "how do I"; else it is rarely the point
CODE_FOR_HOWTO = 0.12
STEPS_FOR_HOWTO = 0.06
INLINE_FOR_HOWTO = 0.04
IMPERATIVE_FOR_HOWTO = 0.06
CODE_OTHERWISE = -0.05  # code answers "how do I"; to other questions it is rarely the answer
CODE_FOR_WHY = -0.05  # and to "why" never: code does what it does, it states no cause
LIST_FOR_LISTING = 0.10
# A sentence pointing back at what it speaks of ("Once you have these programming languages
# installed", "the features above allow many array libraries ...") names the things a
# "which ... are" question asks for without listing them: the list it points at does.
POINTING_BACK = -0.05
_POINTS_BACK = re.compile(r"\b(these|those)\s+(?:[\w-]+\s+){0,2}?[\w-]+s\b|\b(the\s+)?(\w+\s+)?above\b", re.I)
LIST_OF_COUNT = 0.10  # "the three rules": a list of exactly three items
# "How do I know when it is done?": the passage giving the sign ("stir until it stops
# sticking", "remove when the turkey reaches 160°F", "you'll know it's done when ..."); the
# steps before it share the question's words as much, and "how do I" favours any instruction.
SIGN_FOR_DONE = 0.10
_SIGN_IN = re.compile(
    r"\buntil\b|\byou(?:'ll|\s+will)\s+know\b|\binternal\s+temperature\b"
    # "done when", "golden when done", "it is done", "they are ready"
    r"|\b(?:done|ready|cooked|finished|set)\s+when\b|\bwhen\s+(?:it\s+is\s+|it's\s+|they\s+are\s+)?(?:done|ready|cooked)\b"
    r"|\b(?:is|are|it's)\s+(?:done|ready|cooked\s+through)\b"
    # "remove when the turkey reaches 160°F", "take it out when it sounds hollow", "when
    # they are golden"; not any "when the ..." ("when the database does not answer")
    r"|\bwhen\s+(?:it|they|the\s+[\w-]+(?:\s+[\w-]+)?)\s+(?:(?:reach|turn|become|look|feel|sound|show|rise|float|"
    r"stop|start|begin|thicken|darken|bubble|boil|simmer|spring|come|pull)(?:s|es)?\b|(?:is|are|gets?)\s+(?:\w+\s+)?"
    r"(?:done|ready|cooked|golden|brown|browned|soft|tender|firm|set|thick|crisp|crispy|clear|smooth|fragrant|"
    r"translucent|melted|dissolved|hot|warm|cool|cold)\b)",
    re.I,
)
# "Which Java versions is it tested with?": the passage giving version numbers ("Java
# versions 8, 11, 17", "Python (3.11 or later)", "v1.8.1 and v2.x"). MiniLM scores prose
# about the software ("install Oracle's Java platform") far above a terse list of numbers;
# as for a definition, the form is what is asked for.
VERSION_FOR_VERSION = 0.35
_VERSION_IN = re.compile(
    # "v1.8.1", "v2.x", "v0.8n", "0.5.8+": a version by its form; a bare "0.95" or "1.5 GB" is none
    r"(?<![\w.])v\d+(?:\.(?:\d+|x))+[a-z]?\b|(?<![\w.])\d+\.\d+\.\d+"
    # "versions 8, 11", "3.11 or later", "numpy>=1.20": by the words or signs beside it
    r"|\bversions?\s+v?\d|(?<![\w.])\d++(?:\.\d++)*+\+?\s+or\s+(?:later|newer|above|higher)\b|(?:>=|≥|==)\s*\d",
    re.I,
)
# An address or a DOI ("https://doi.org/10.5334/jors.148") holds dotted numbers that are no version.
# (an address starts where its scheme does, a DOI where its "10." does: from inside a long
# run each start ran to its end, quadratic)
_ADDRESS = re.compile(r"(?<![\w+.-])[a-z][\w+.-]*+://\S*|(?<![\w.])10\.\d{4,}/\S*", re.I)
# "What can I use instead of X?", "Can I make it without X?": the passage offering the
# replacement ("plain yoghurt can be used as a replacement", "Mustard greens can be
# substituted", "or use ...", "if you can't find ..."). It shares the question's words no
# more than the ingredient line or step it sits in, and MiniLM scores the dish's
# description above it.
SUBSTITUTE_FOR_SUBSTITUTE = 0.15
_SUBSTITUTE_IN = re.compile(
    r"\binstead\b|\bin\s+place\s+of\b|\bsubstitut\w*|\breplac(?:e|es|ed|ing|ements?)\b|\balternativ\w*|\bswap\w*"
    r"|\bwithout\b|\b(?:can|could|may)\s+(?:also\s+)?(?:be\s+used|use)\b|\bor\s+use\b"
    r"|\bif\s+you\s+(?:can\s*not|can't|cannot|don't|do\s+not)\s+(?:find|have|get|own)\b",
    re.I,
)
YEAR_FOR_WHEN = 0.12
NO_YEAR_FOR_WHEN = -0.05
NUMBER_FOR_HOW_MANY = 0.08
MEASURE_FOR_HOW_MANY = 0.08  # and a number of the measure asked for ("53 qubits", "28-30%") as much again
NAME_FOR_WHO = 0.06
FIELD_FOR_SHAPE = 0.25  # a field line whose label holds what the question asks for
FIELD_OTHERWISE = -0.15  # a date or name field asked for the other
# "What does LEMS stand for?": the passage spelling it out ("LEMS (Low Entropy Model
# Specification)") shares no word with the question but the acronym, which a passage
# merely using it shares too; as for a definition, the form is what is asked for.
SPELLED_OUT_FOR_ACRONYM = 0.35
# "What is the first step ...?": the step at that place in its list. MiniLM scores the
# steps of one method alike (they share its words), so the step's place decides.
PLACE_FOR_POSITION = 0.12
# "Which SDK ...?": a passage naming one, a name in code or capitals right before the
# noun ("`mcp` Python SDK") or after it ("attribute: `_ARRAY_DIMENSIONS`").
NAMED_FOR_WHICH = 0.08
# "What is the recipe for X?": the list under its "Ingredients" heading (the method's steps
# share the question's words as much and come first in cosine).
INGREDIENTS_FOR_RECIPE = 0.15
_INGREDIENTS = re.compile(r"^\W*ingredients?\b", re.I)


def field(text: str) -> str:
    """The kind of value a field line holds ("year" for "Date: ...", "name" for
    "Authors: ..."; "" = none or not a field line)."""
    match = _FIELD.match(text.strip())
    if match is None:
        return ""
    label = match.group("label").strip()
    return next((kind for kind, pattern in _FIELD_LABELS.items() if pattern.fullmatch(label)), "")

def defines(question_shapes: frozenset[str], text: str) -> bool:
    """Whether ``text`` opens by defining a subject of a "what is X" question
    (:func:`defined`)."""
    return bool(defined(question_shapes, text))


def names_as(question_shapes: frozenset[str], text: str) -> bool:
    """Whether ``text`` introduces a subject of a "what is X" question by name ("a feature
    called consolidated metadata, storing ...", "known as X"): what follows says what it is."""
    return any(re.search(rf"\b(?:called|named|known\s+as)\s+[*_`\"'\u201c]*{re.escape(subject)}\b", text, re.I)
               for subject in subjects(question_shapes))


def defined(question_shapes: frozenset[str], text: str) -> str:
    """The subject of a "what is X" question that ``text`` opens by defining ("" = none):
    "X is a ...", "X (the ...) is the ...", "X are ...", "X refers to ...", a glossary
    entry "X: ..." or "**X** — ...", or a definition-list entry (the term, its definition
    indented on the next line); a list item's marker aside."""
    return next((subject for subject in subjects(question_shapes) if defines_subject(subject, text)), "")


def spells_out(question_shapes: frozenset[str], text: str) -> bool:
    """Whether ``text`` spells out the acronym a "what does X stand for" question asks
    about (:func:`domains.retrieval.expansion`)."""
    return any(expansion(shape.split(":", 1)[1], text) for shape in question_shapes if shape.startswith("acronym:"))


def of_measure(question_shapes: frozenset[str], text: str) -> bool:
    """Whether ``text`` holds a quantity of what the question measures or counts: a
    percentage, a time, a length, a size or a temperature ("measure:<kind>" shapes), or
    a number of the things "how many" counts ("many:<term>": "53 qubits" for "how many
    qubits"); a numbered step's marker is no quantity."""
    text = _STEP_NUMBER.sub("", text)
    for shape in question_shapes:
        kind, _, what = shape.partition(":")
        if kind == "measure" and _MEASURE_IN[what].search(text):
            return True
        if kind == "many" and any(what in terms(match.group("words")) for match in _COUNT_OF.finditer(text)):
            return True
    return False


def counts(question_shapes: frozenset[str], kind: str, text: str) -> bool:
    """Whether ``text`` is a list of as many items as the question counts ("the three
    rules": a list of three items, a lead-in aside)."""
    return kind == "list" and f"count:{len(list_items(segment(text)[-1].text))}" in question_shapes


def enumerates(text: str) -> bool:
    """Whether ``text`` holds a list written as prose (:data:`_ENUMERATION`), its items'
    asides in parentheses aside."""
    return bool(_ENUMERATION.search(_ITEM_ASIDE.sub("", text)))


def instructs(kind: str, text: str) -> bool:
    """Whether a passage of ``kind`` tells what to do: a code block, numbered steps, or a
    sentence (or step) in the imperative (:data:`_IMPERATIVE`)."""
    if kind == "code":
        return True
    if kind == "list":
        return text.lstrip()[:1].isdigit()
    return kind in ("prose", "item") and bool(_IMPERATIVE.match(text))


def bonus(question_shapes: frozenset[str], kind: str, text: str, opening: bool) -> float:
    """How well a passage of ``kind`` ("prose", "list", "item", "table", "code") fits the shapes;
    ``opening``: the passage starts its chunk."""
    # what a thing is, is said in prose: a contents list's items or a step only name parts of it
    value = OPENING_FOR_GENERIC if "generic" in question_shapes and opening and kind == "prose" else 0.0
    if kind == "code" and "howto" not in question_shapes:
        value += CODE_FOR_HOWTO if "code name" in question_shapes else CODE_OTHERWISE
    if kind in ("list", "table") and not question_shapes & {"listing", "howto"}:
        value += BLOCK_OTHERWISE
    if kind in ("prose", "item") and (defines(question_shapes, text) or names_as(question_shapes, text)):
        value += SUBJECT_FOR_DEFINITION
    if kind in ("prose", "item") and spells_out(question_shapes, text):
        value += SPELLED_OUT_FOR_ACRONYM
    if "reason" in question_shapes and _BECAUSE.search(text):
        value += CAUSE_FOR_WHY
    if "reason" in question_shapes and kind == "code":
        value += CODE_FOR_WHY
    if "howto" in question_shapes:
        if kind == "code":
            value += CODE_FOR_HOWTO
        elif kind == "list" and text.lstrip()[:1].isdigit():
            value += STEPS_FOR_HOWTO
        elif _INLINE_CODE.search(text):
            value += INLINE_FOR_HOWTO
        if kind in ("prose", "item") and _IMPERATIVE.match(text):
            value += IMPERATIVE_FOR_HOWTO
    if "listing" in question_shapes and (kind in ("list", "table") or enumerates(text)):
        value += LIST_FOR_LISTING
    if "listing" in question_shapes and kind == "prose" and _POINTS_BACK.search(text):
        value += POINTING_BACK
    if counts(question_shapes, kind, text):
        value += LIST_OF_COUNT
    if "sign" in question_shapes and kind in ("prose", "item") and _SIGN_IN.search(text):
        value += SIGN_FOR_DONE
    if "version" in question_shapes and _VERSION_IN.search(_ADDRESS.sub(" ", text)):
        value += VERSION_FOR_VERSION
    if "substitute" in question_shapes and kind in ("prose", "item") and _SUBSTITUTE_IN.search(text):
        value += SUBSTITUTE_FOR_SUBSTITUTE
    if "year" in question_shapes:
        value += YEAR_FOR_WHEN if _YEAR_IN.search(text) else NO_YEAR_FOR_WHEN
    if "number" in question_shapes and _NUMBER_IN.search(_STEP_NUMBER.sub("", text)):
        value += NUMBER_FOR_HOW_MANY
    if "number" in question_shapes and of_measure(question_shapes, text):
        value += MEASURE_FOR_HOW_MANY
    if "name" in question_shapes and _PROPER_NAME.search(text):
        value += NAME_FOR_WHO
    if kind in ("prose", "item") and names_one(question_shapes, text):
        value += NAMED_FOR_WHICH
    if kind == "prose" and (holds := field(text)):
        if holds in question_shapes:
            value += FIELD_FOR_SHAPE
        elif question_shapes & _FIELD_LABELS.keys():
            value += FIELD_OTHERWISE
    return value


def in_place(question_shapes: frozenset[str], part: int, items: int) -> float:
    """How well item ``part`` (0-based) of a list of ``items`` items fits a question asking
    for a step by its place ("position:first" / "position:last"): :data:`PLACE_FOR_POSITION`
    at that place, else 0.0."""
    first = "position:first" in question_shapes and part == 0
    last = "position:last" in question_shapes and part == items - 1 and items > 1
    return PLACE_FOR_POSITION if first or last else 0.0


def under_heading(question_shapes: frozenset[str], kind: str, section: str) -> float:
    """How well a passage of ``kind`` under the heading ``section`` fits the question: a
    list under "Ingredients" fits "the recipe for X" (:data:`INGREDIENTS_FOR_RECIPE`); else 0.0."""
    return INGREDIENTS_FOR_RECIPE if "recipe" in question_shapes and kind == "list" and _INGREDIENTS.match(section) else 0.0


def names_one(question_shapes: frozenset[str], text: str) -> bool:
    """Whether ``text`` names the thing a "which <noun>" question asks for ("which:<noun>"):
    a name in code or capitals at most one word before the noun, or in code right after
    it ("called", "named", "is" or a colon between)."""
    for shape in question_shapes:
        kind, _, noun = shape.partition(":")
        if kind == "which":
            word = "(?i:" + re.escape(noun) + r"(?:e?s)?)\b"  # the noun in any case, a name in capitals
            # (a name starts where a token does, taken whole: from inside "A.A.A..." each
            # start ran to its end, quadratic)
            if re.search(rf"(?:`[^`\n]+`|(?<![\w.+-])[A-Z][\w.+-]*+)\s+(?:[\w.+-]++\s+)?{word}"
                         rf"|\b{word}\s*(?::|\s(?:is|called|named))\s*`[^`\n]+`", text):
                return True
    return False
