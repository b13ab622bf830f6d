"""The shape of a question: "how do I", "which ... are", a year, a number, a name, "what
is X", "why", "what does X stand for", a name written in code, a generic question about
"this", and so many things counted ("the three rules").

A generic question about "this" ("What does this project do?") names nothing a source
could match: it is answered by an opening passage, the way a page introduces itself. How
well a passage's form fits each shape: :mod:`.fits`.
"""

from __future__ import annotations

import re

from domains.retrieval import asked_acronym
from domains.retrieval.definitions import asked_subjects

from .text import terms

HOWTO = re.compile(
    r"^\s*(how\s+(do|can|should|would|could|to|does\s+one)\b|what\s+(command|commands)\b)"
    # The verbs as verbs ("... I install", "to run"), not as nouns ("stop words", "a run").
    r"|(^\s*|\b(i|we|you|to)\s+)(install|set\s*up|configure|enable|run|start|stop|point\b.*\bat)\b",
    re.I,
)
LISTING = re.compile(
    r"^\s*(which|what)\b(?!\s+(is|was|does|did)\b).*\b(are|exist|support(s|ed)?|available|include[sd]?|needed)\b"
    r"|^\s*what\s+(are|kinds?|types?|sorts?|options|formats|steps|ingredients)\b|^\s*list\b|\bname\s+the\b"
    # What a thing holds or needs: "What goes in a LEMS file?", "What is in a spice mix?",
    # "Which cheese goes into fondue?",
    # "What does a release need?", "What do I need installed?"; not a step of a method
    # ("What goes into the chili at the end?").
    r"|^\s*(what\s+(is|are)|(what|which)\s+([\w'-]+\s+){0,2}?(goes|go))\s+in(to)?\b(?!.*\b(end|start|beginning|first|last|after|before|then|finally)\b)"
    r"|^\s*what\s+(do|does|did)\b.*\b(contain|include|consist|require|need)s?\b",
    re.I,
)
# "When was/did ..." asks for a time; "when does ..." and a mid-question "when" for a
# condition. "How old is the recipe?" asks for an age or for when it began ("ca. 1740 BC");
# "How old must I be ...?" for an age only.
YEAR = re.compile(r"\bwhen\s+(was|were|did|had)\b|\b(what|which)\s+(year|date)\b|\bsince\s+when\b"
                  r"|\bhow\s+old\s+(?:is|are|was|were)\s+(?:it|they|the|this|that|these|those)\b", re.I)
# "Which <noun>s can ...", "What aged <noun>s are ...": several things are asked for (a
# plural noun before an auxiliary; "which setting selects" is a singular noun and a verb).
PLURAL_ASKED = re.compile(
    r"^\s*(which|what)\s+((?!of\b)[\w'-]+\s+){0,2}[\w-]*[a-rt-z]s'?\s+"
    r"(are|were|do|did|does|can|could|may|might|should|would|will|must|have|has)\b"
    # "Which simulators import NeuroML models ...?": a plural noun right after "which" (lower
    # case, not "-us", "-is", "-as", "-os": "status", "axis", "alias"; nor "news"), before a
    # verb (after a word more it may be a verb itself: "Which attribute stores dimension
    # names"; "what" would read "What happens when" so)
    r"|^\s*which\s+(?!news\b)(?-i:[a-z][a-z-]*[^\WsuiaoA-Z_]s)\s+(?!(?:is|was|does|did|has|of|in|on|for|to|from|with|by)\b)"
    r"[a-z]{3,}\b",
    re.I,
)
# A keyword query ending in a plural noun naming things one lists ("neuroml code of conduct
# rules", "lenten chili spices") asks for them, as "Which are the ...?" would; any other
# final "-s" may be a verb ("git clone fails") or one thing ("status", "news").
_TERSE_PLURAL = re.compile(
    r"^(?!\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|should|would|"
    r"will|may|might|must|has|have|had|i|my|please|tell|give|show|list)\b)\s*(?:[\w'.-]+\s+){1,5}"
    r"(?:rules|steps|stages|ingredients|spices|herbs|toppings|options|settings|features|requirements|dependencies|"
    r"prerequisites|versions|types|kinds|formats|tools|commands|methods|functions|parameters|arguments|examples|"
    r"members|modules|components|engines|backends|extras|fields|limits|codes|errors|variables|alternatives|"
    r"substitutes|differences|benefits|advantages|platforms|simulators|libraries|packages|endpoints)\s*\??\s*$",
    re.I,
)
NUMBER = re.compile(
    r"\bhow\s+(many|much|long|big|large|often|fast|strong|old|hot|warm|cold|far|high|tall|wide|deep|heavy|small|"
    r"short|thick|soon|early|late)\b"
    r"|\bwhat\s+(is\s+the\s+)?(default|number|size|limit|port|version|temperature|amount|percentage|percent|ratio|"
    r"proportion|share|fraction|speed|weight|length|duration|(time\s+)?(span|range|period|interval))\b"
    r"|\bwhich\s+(version|port)\b"
    # a measure named anywhere, as terse questions name it ("limoncello alcohol percentage")
    r"|\b(percentage|percent|abv|temperature)\b",
    re.I,
)
REASON = re.compile(r"^\s*why\b", re.I)
# "Which Python version does it need?", "java versions", "What minimum versions of numpy
# ...": a version number is asked for. A question holding one ("in version 2, ...", "NeuroML
# v1") asks about that version instead.
VERSION = re.compile(r"\bversions?\b", re.I)
# (a number standing alone: "version 2", "v1", "3.11"; not a name's digits, "netcdf4", "TrakEM2")
_HOLDS_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)*(?![\w.])", re.I)
# "How do I know when the mixture is cooked enough?", "When is the turkey done?", "how can
# you tell when gnocchi are done": the sign that a thing is done or ready is asked for, not
# the steps that get it there.
SIGN = re.compile(
    r"\bhow\s+(?:do|can|would|will|should|could)\s+(?:i|you|we|one)\s+(?:know|tell)\b"
    r"(?!\s+(?:which|what|where|who|whom|how|about|apart|the\s+difference)\b)"
    r"|\bhow\s+(?:do|can|would|will|should|could)\s+(?:i|you|we|one)\s+(?:see|check)\s+(?:when|if|whether|that)\b"
    r"|\bhow\s+to\s+tell\s+(?:when|if|whether)\b"
    r"|\bwhen\s+(?:is|are)\s+(?:[\w'-]+\s+){0,12}?(?:done|ready|cooked|baked|finished|set)\b"
    r"|\b(?:[a-z]+ed|done|long|thick|firm|brown|soft|hot|set)\s+enough\b",
    re.I,
)
# "What can I use instead of turnip greens?", "Can I make it without quark?", "a substitute
# for ...", "an alternative to ...", "replace the butter with ...": a replacement (or doing
# without) is asked for; not "How do I replace a broken sensor?", nor "the alternative
# hypothesis".
SUBSTITUTE = re.compile(
    r"\binstead\s+of\b|\bin\s+place\s+of\b|\bsubstitut\w*\s+(?:for|with)\b|\b(?:a|any|good)\s+substitute\b"
    r"|\breplacement\s+for\b|\bto\s+replace\b|\breplace\s+(?:[\w'-]+\s+){1,3}with\b|\balternatives?\s+(?:to|for)\b"
    r"|\bswap\s+(?:[\w'-]+\s+){1,3}for\b|\bwithout\b|\b(?:do\s+not|don't|dont)\s+(?:have|own)\b",
    re.I,
)
# "What is X and why does it ...?": X to define, then a cause (or a way: "and how").
DEFINITION_AND = re.compile(
    r"^\s*what\s+(?:is|are)\s+(?:an?\s+|the\s+)?(?P<subject>[\w.-]+(?:\s+[\w.-]+)?)"
    r"(?:\s+(?:in|of|for|within)\s+[\w.'-]+(?:\s+[\w.'-]+)?)?,?\s+and\s+(?P<then>why|how)\b", re.I)
# "What is the recipe for X?" asks first for what goes into it (the method is its steps).
RECIPE = re.compile(r"\brecipes?\s+(for|of)\b", re.I)
# "Which SDK does ...", "what attribute stores ...": one thing asked for by its kind (a
# singular noun), answered by its name: "the official `mcp` Python SDK".
_WHICH_ONE = re.compile(
    r"^\s*(?:which|what)\s+(?P<noun>(?!(?:is|are|was|were|does|do|did|can|could|should|would|will|has|have|had|"
    r"happens|kinds?|types?|sorts?|of|if)\b)[a-z][\w-]*[^\Ws])\s+(?:does|do|did|is|was|can|should|would|will|has|makes?|"
    r"stores?|goes|holds?)\b", re.I)
# A step asked for by its place in a method: "What is the first step when upgrading ...?",
# "the first thing to do", "the last stage"; "first" alone is mostly an adverb ("which
# article first introduced ...").
POSITION = {
    "first": re.compile(r"\b(first|1st|initial|opening)\s+(step|thing|stage|phase|action|task|instruction|command)s?\b"
                        r"|\bwhat\s+(do|should|must)\s+(i|you|we)\s+do\s+first\b", re.I),
    "last": re.compile(r"\b(last|final|closing)\s+(step|thing|stage|phase|action|task|instruction|command)s?\b", re.I),
}
# The measure a number should be of: "how strong" (a drink) and "what percentage" ask for a
# percentage, "how long" for a time or a length, "how big" for a size, "how hot" for a
# temperature. A number of another measure (a step's "1 liter", a version "0.11") does
# not answer them: :func:`of_measure`.
_MEASURE_ASKED = {
    "percent": re.compile(r"\b(percentage|percent|proportion|abv|how\s+strong|alcohol\s+content)\b", re.I),
    "time": re.compile(r"\bhow\s+(long|often|soon|old)\b|\b(duration|(time\s+)?(span|period|interval))\b", re.I),
    "length": re.compile(r"\bhow\s+(long|short)\b|\blength\b", re.I),
    "size": re.compile(r"\bhow\s+(big|large|small)\b|\bsize\b", re.I),
    "temperature": re.compile(r"\bhow\s+(hot|warm|cold)\b|\btemperature\b", re.I),
}
# "How many qubits ...", "how many levels of compliance": what is counted, up to the verb.
_HOW_MANY = re.compile(
    r"\bhow\s+many\s+(?P<noun>(?:(?!(?:are|were|is|was|do|does|did|can|could|will|would|should|must|have|has|had|"
    r"in|of|on|for|per|to|at|by|with|does|there)\b)[\w-]+\s*){1,3})",
    re.I,
)
# A quantity right before a word (up to two words between: "three read-only tools", "53 qubits").
# "Which pip extra installs ...", "what option turns ...": a name written in code is asked for.
CODE_NAME = re.compile(
    r"^\s*(which|what)\s+([\w-]+\s+)?(extras?|flags?|options?|arguments?|parameters?|keywords?|functions?|methods?|"
    r"commands?|subcommands?|variables?)\b(?!\s+(is|are|was|were|does|do)\b)",
    re.I,
)
NAME = re.compile(
    r"^\s*who\b|\bwhich\s+(person|people|author|authors|company|organi[sz]ation|journal|university|institute)\b"
    r"|\bname\s+of\b",
    re.I,
)
# What a generic question calls the thing it asks about, and the other words it may use.
REFERENTS = frozenset(
    "this these that it here project tool software app application site website system program package "
    "library product service server documentation docs repository repo domain paper article document".split()
)
GENERIC_TERMS = REFERENTS | terms(
    "purpose about mean means work works used good offer offers provide provides main feature features goal "
    "point idea overview describe explain tell know need get started start begin thing things made built for "
    "is are was were does do can could should would"
)
_WORDS = re.compile(r"[a-z]+")
# An imperative request asks what its question form asks ("Give me the ingredients for
# hummus" = "What are the ingredients for hummus?"; "Tell me how to ..." = "How to ...?";
# "Tell me about X" = "What is X?"): :func:`as_question`.
_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    r"(?:(?:give|show|tell|bring)\s+(?:me|us)|list|name)\s+(?:please\s+)?(?:about\s+)?(?P<rest>\S.*)$",
    re.I | re.S,
)
_ASKS = re.compile(r"^(what|which|who|whom|whose|when|where|why|how|whether|if)\b", re.I)
# The words after a noun phrase's head ("the ingredients | for hummus", "the table | of ...").
_AFTER_HEAD = re.compile(
    r"\s+(?:of|for|in|on|to|from|with|by|at|about|that|which|who|used|needed|required|and|or)\b.*$", re.I | re.S)


# A referent after "a" / "an" is a term asked about ("What is a domain?" asks what the
# word means, where "What is this domain?" asks about the one at hand).
_INDEFINITE = re.compile(r"\ban?\s+([a-z]+)")


def is_generic(question: str) -> bool:
    """A question about "this" that names nothing else: it mentions a referent
    (REFERENTS, not after "a" / "an") and every other content word is a generic one
    (GENERIC_TERMS)."""
    lowered = question.lower()
    words = set(_WORDS.findall(lowered)) - set(_INDEFINITE.findall(lowered))
    return bool(words & REFERENTS) and terms(question) <= GENERIC_TERMS

# "the three rules", "its 5 main steps", "which four kinds": the question asks for so many things.
_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_COUNTED = re.compile(
    r"\b(?:the|these|those|its|their|his|her|which|what)\s+(?P<n>two|three|four|five|six|seven|eight|nine|ten|[2-9])"
    r"\s+(?:[a-z-]+\s+){0,2}[a-z-]+s\b",
    re.I,
)


def as_question(question: str) -> str:
    """The question an imperative request asks ("Give me the X", "Show me the X", "Tell
    me (about) X", "List the X", "Name the X"; "can you ..." and "please" aside): its
    rest when that is a question ("Tell me how to ..." -> "how to ..."), else "What are
    X?" for a plural noun phrase and "What is X?" for a singular one. Any other text is
    returned as it is."""
    match = _REQUEST.match(question)
    if match is None:
        return question
    rest = match.group("rest").strip()
    if _ASKS.match(rest):
        return rest
    head = _AFTER_HEAD.sub("", rest.rstrip(" ?.!")).split()
    last = head[-1].lower() if head else ""
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
    return f"{'What are' if plural else 'What is'} {rest}"


def shapes(question: str) -> frozenset[str]:
    """The shapes of a question: any of "generic", "howto", "listing", "year", "sign" ("how
    do I know when it is done?"), "version" ("which Python version ..."), "substitute" ("what
    can I use instead of X?", "can I make it without X?"), "number" (with
    "measure:<kind>", kind one of percent, time, length, size, temperature, and "many:<term>"
    for what "how many" counts, :func:`.fits.of_measure`), "name", "reason" ("why"), "code
    name" ("which option ..."), "which:<noun>" ("which SDK does ...": one thing by its kind),
    "count:<n>" ("the three rules": n things), "position:first" / "position:last" ("the first
    step": a step by its place), "recipe" ("the recipe for X"), "definition:<subject>" ("what
    is X?"; one per subject of "what is X and what is Y?"; "what is X and why ...?" adds
    "reason", "... and how ...?" "howto"), "acronym:<X>" ("what does X stand for?", X as
    written).
    An imperative request has its question form's shapes as well (:func:`as_question`)."""
    asked = as_question(question)
    return _shapes(question) | (_shapes(asked) if asked != question else frozenset())


def _shapes(question: str) -> frozenset[str]:
    found = {"generic"} if is_generic(question) else set()
    if HOWTO.search(question):
        found.add("howto")
    if LISTING.search(question) or PLURAL_ASKED.search(question) or _TERSE_PLURAL.match(question):
        found.add("listing")
    if YEAR.search(question):
        found.add("year")
    if NUMBER.search(question):
        found.add("number")
    if NAME.search(question):
        found.add("name")
    if CODE_NAME.search(question):
        found.add("code name")
    if REASON.search(question):
        found.add("reason")
    if SIGN.search(question):
        found.add("sign")
    if SUBSTITUTE.search(question):
        found.add("substitute")
    if VERSION.search(question) and not _HOLDS_VERSION.search(question):
        found.add("version")
    if "number" in found:
        found.update("measure:" + kind for kind, pattern in _MEASURE_ASKED.items() if pattern.search(question))
        if match := _HOW_MANY.search(question):
            found.update("many:" + term for term in terms(match.group("noun")))
    if RECIPE.search(question):
        found.add("recipe")
    if match := _WHICH_ONE.search(question):
        found.add("which:" + match.group("noun").lower())
    found.update("position:" + place for place, pattern in POSITION.items() if pattern.search(question))
    if match := _COUNTED.search(question):
        count = match.group("n").lower()
        found.add(f"count:{_COUNTS.get(count, count)}")
    if acronym := asked_acronym(question):
        found.add(f"acronym:{acronym}")
    found.update("definition:" + subject for subject in asked_subjects(question))
    if match := DEFINITION_AND.match(question):
        found.add("definition:" + match.group("subject").lower())
        found.add("reason" if match.group("then").lower() == "why" else "howto")
    return frozenset(found)


def subjects(question_shapes: frozenset[str]) -> list[str]:
    """The subjects a "what is X (and what is Y)" question asks to define, sorted."""
    return sorted(s.split(":", 1)[1] for s in question_shapes if s.startswith("definition:"))


def counted(question: str) -> set[str]:
    """The terms of what "the three rules" counts ({"thre", "rule"}; set() = nothing counted)."""
    match = _COUNTED.search(question)
    return terms(match.group(0)) if match else set()
