"""Person names from bylines and metadata: marks removed, capitals normalised.

``"Frank Arute1"`` -> ``"Frank Arute"``; ``"Ross G. DOUGLAS*1"`` -> ``"Ross G. Douglas"``;
``"MICHAEL J. FISCHER"`` -> ``"Michael J. Fischer"``. A collaboration byline ("B. P.
Abbott et al.", "The ATLAS Collaboration") is kept as written, never split into persons.
"""

from __future__ import annotations

import re

# Affiliation and footnote marks printed after (or glued to) a name.
_MARK_CHARS = "*\u2217\u2020\u2021\u00a7\u00b6\u2016\u204e#\u2032\u00b9\u00b2\u00b3\u2070-\u2079\u262f\u00a4\u2666\u2663\u2660\u2665\u25a1\u2709"
_MARKS = re.compile(rf"[{_MARK_CHARS}]")
# The same marks as OCR reads them, glued after a name or its comma: "Theurer??",
# "Chaumet\u00ae", "Alam'", "Agyeman-Duah\"\u2019", "SHARMA\u2018?+", "Kneer!?", "Sundstrom,'"
# (OCR sees no raised small glyphs).
_OCR_MARKS = re.compile(r"(?:(?<=[^\W\d_])|(?<=,))[?!\u2122$%^|\u00ae\u00a9\u00b0+'\"\u2018\u2019\u201c\u201d*#]+(?=[\s,;]|$)")
# "Bendera;*;1": an affiliation letter glued before a ';'-separated mark list.
_GLUED_LETTER_MARKS = re.compile(r"(?<=[a-z])[a-e](?=;[\d;,*\u2217\u2020\u2021\u00a7]+(?:\s|$))")
# Digits (with commas) glued to a word or standing alone: "Arute1", "Bardin1,2", "Saif 2,".
_DIGIT_MARKS = re.compile(r"(?<=[^\W\d_])\d+(?:\s*,\s*\d+)*|(?<![^\s,;])\d+(?:\s*,\s*\d+)*(?=[\s,;]|$)")
_SEPARATORS = re.compile(r"\s*(?:,|;|&|\band\b|\bAND\b|\bund\b)\s*")
_ET_AL = re.compile(r"^(?P<lead>.+?\bet\s+al)\.?", re.IGNORECASE)
COLLABORATION = re.compile(r"\b(collaboration|consortium)\b", re.IGNORECASE)
_PARTICLES = {
    "van", "von", "de", "der", "den", "du", "da", "di", "del", "della", "dos", "das",
    "la", "le", "ten", "ter", "bin", "ibn", "al", "el", "y", "zu", "vander", "d'",
}
_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}
# Byline pieces that qualify the name before them: "Member, IEEE", "MD, PhD".
_QUALIFIERS = re.compile(
    r"^(?:(?:senior|student|life|graduate)\s+)?(?:member|fellow)(?:\s+ieee)?$|^(?:ieee|acm|siam|aaai)$"
    r"|^(?:md|m\.d\.|phd|ph\.d\.|msc|m\.sc\.|bsc|mph|mba|rn|dphil|frcp|frcs|facc|dds|dvm|pharmd|mbbs|mbchb)$",
    re.IGNORECASE,
)
# Words that make a line an affiliation or a heading, never a person's name.
_NOT_NAME_WORDS = {
    "university", "universit\u00e9", "universit\u00e4t", "universidad", "universit\u00e0",
    "universiteit", "department", "departamento", "institute", "institut", "instituto",
    "laboratory", "laboratories", "laboratoire", "laboratorio", "facility", "faculty",
    "school", "college", "division", "centre", "center", "hospital", "foundation",
    "society", "association", "academy", "corporation", "company", "inc", "ltd", "gmbh",
    "research", "science", "sciences", "engineering", "technology", "physics",
    "chemistry", "biology", "medicine", "medical", "computer", "computing",
    "information", "services", "systems", "national", "international", "program",
    "programme", "project", "theory", "applied", "street", "avenue", "road", "campus",
    "abstract", "summary", "introduction", "keywords", "received", "accepted",
    "published", "correspondence", "email", "e-mail", "article", "journal", "letter",
    "review", "vol", "volume", "issue", "press", "the", "of", "for", "in", "on", "with",
    "a", "an", "to", "at", "by", "from", "into", "via", "using", "is", "are", "its", "or",
    "open", "access", "copyright", "license", "licence", "preprint", "draft", "report",
    "journals", "publishing", "publisher", "publishers", "elsevier", "springer", "wiley",
    "ieee", "acm", "admin", "administrator", "user", "owner", "author", "authors",
}
# Stray OCR specks and quotes at the ends of a name ("\u201cD.C. Schram", "Kessels.'").
_EDGE_JUNK = " .;:-'\"`\u201c\u201d\u201e"
_GLUED_INITIALS = re.compile(r"[A-Z]{2,3}\.")
_INITIALS = re.compile(r"^(?:[A-Z]\.?-?){1,3}$|^(?:[A-Z]\.-?){1,3}$|^[A-Z][a-z]{1,2}\.$")


def _is_word(token: str) -> bool:
    """A capitalised name word: ``Sinha``, ``O'Connell``, ``Agyeman-Duah``, ``Mart()n``
    (a glyph the text layer lost)."""
    return token[0].isupper() and all(c.isalpha() or c in "'-()" for c in token) and any(
        c.islower() for c in token
    )


def fix_caps(token: str) -> str:
    """``DOUGLAS`` -> ``Douglas``, ``O'CONNELL`` -> ``O'Connell``, ``AGYEMAN-DUAH`` ->
    ``Agyeman-Duah``; initials, ``II``/``III`` and mixed-case words unchanged."""
    letters = [c for c in token if c.isalpha()]
    if len(letters) < 3 or not all(c.isupper() for c in letters) or token.lower() in _SUFFIXES:
        return token
    return re.sub(r"[^\W\d_]+", lambda m: m.group(0)[0] + m.group(0)[1:].lower(), token)


def strip_marks(text: str) -> str:
    """Affiliation digits, letters glued before ``;`` lists and footnote symbols removed;
    what separated names (commas) is kept."""
    text = _GLUED_LETTER_MARKS.sub("", text)
    text = _OCR_MARKS.sub(" ", text)
    text = _MARKS.sub(" ", text)
    text = _DIGIT_MARKS.sub(", ", text)
    return text


def clean_person_name(raw: str) -> str | None:
    """One person's name, cleaned, or None when ``raw`` is not a person's name.

    Marks and affiliation digits are removed, words printed in capitals get normal
    capitals, typographic apostrophes become ``'``, white space is collapsed. Valid:
    2 to 6 words, each an initial (``J.``, ``J.-P.``, ``Md.``), a capitalised word, a
    particle (``van``, ``de``) or a suffix (``Jr.``), with no affiliation words.
    """
    text = strip_marks(raw or "").replace("\u2019", "'").replace("\u2018", "'")
    text = " ".join(text.replace(",", " ").split()).strip(_EDGE_JUNK)
    if raw and raw.rstrip().endswith(".") and re.search(r"\b[A-Z]$", text):
        text += "."
    tokens = text.split()
    # "RJ. Severens": OCR drops the period between initials (a capitals word with a
    # period before the surname is initials, never a name word).
    tokens = [
        ".".join(t[:-1]) + "." if i < len(tokens) - 1 and _GLUED_INITIALS.fullmatch(t) else t
        for i, t in enumerate(tokens)
    ]
    tokens = [fix_caps(t) for t in tokens]
    if not 2 <= len(tokens) <= 6:
        return None
    words = 0
    for token in tokens:
        low = token.lower().strip(".")
        # "van-de": OCR reads the space between particles as a hyphen
        particle = low in _PARTICLES or ("-" in low and all(part in _PARTICLES for part in low.split("-")))
        if _INITIALS.match(token) or token.lower() in _SUFFIXES or particle:
            continue
        if low in _NOT_NAME_WORDS or "@" in token:
            return None
        if not _is_word(token):
            return None
        words += 1
    return " ".join(tokens) if words else None


def collaboration_byline(text: str) -> str | None:
    """``"B. P. Abbott et al.*"`` -> ``"B. P. Abbott et al."``; ``"The LIGO Scientific
    Collaboration"`` -> itself; None for an ordinary byline."""
    cleaned = " ".join(_MARKS.sub(" ", text).split()).strip(" ,;")
    match = _ET_AL.match(cleaned)
    if match and clean_person_name(match.group("lead")[: -len("et al")]):
        return match.group("lead") + "."
    if COLLABORATION.search(cleaned) and not cleaned.startswith("(") and len(cleaned.split()) <= 8:
        return cleaned
    return None


def parse_byline(text: str) -> list[str] | None:
    """The names on a byline, or None when the line is not a byline.

    ``"Anna Sundström,1 Michael Rönnlund,2 Rolf Adolfsson3 and Lars-Göran Nilsson4"`` ->
    four names. Every piece between separators (``,``, ``;``, ``&``, ``and``) must be a
    person's name (see :func:`clean_person_name`); a suffix piece (``Jr.``) joins the
    name before it; a collaboration byline is one name.
    """
    collaboration = collaboration_byline(text)
    if collaboration:
        return [collaboration]
    names: list[str] = []
    # whitespace runs collapsed first: _SEPARATORS is quadratic on a long one
    for piece in _SEPARATORS.split(" ".join(strip_marks(text).split())):
        piece = piece.strip()
        if not re.search(r"\b(?:[A-Z]|Jr|Sr)\.$", piece):
            piece = piece.strip(" .")
        if not any(c.isalpha() for c in piece) or (names and _QUALIFIERS.match(piece.strip(" ."))):
            continue
        if piece.lower() in _SUFFIXES and names:
            names[-1] = f"{names[-1]} {piece}"
            continue
        name = clean_person_name(piece)
        if name is None:
            return None
        names.append(name)
    return names or None


def split_author_field(value: str) -> list[str]:
    """The PDF Info ``Author`` field as names: ``"Diego Ongaro, John Ousterhout; Stanford
    University"`` -> ``["Diego Ongaro", "John Ousterhout"]``; ``"Wickham, Hadley"`` ->
    ``["Hadley Wickham"]``. Pieces that are not person names are dropped."""
    names: list[str] = []
    for group in re.split(r"\s*;\s*", value or ""):
        pieces = [p.strip() for p in re.split(r"\s*,\s*|\s+and\s+|\s*&\s*", group) if p.strip()]
        if len(pieces) == 2 and all(len(p.split()) == 1 for p in pieces) and "," in group:
            pieces = [f"{pieces[1]} {pieces[0]}"]  # "Last, First"
        for piece in pieces:
            name = clean_person_name(piece)
            if name:
                names.append(name)
    return names
