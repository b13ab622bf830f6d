"""Field rules shared by the text tiers: publication year, keywords, journal, junk
titles, arXiv identifiers and URLs.

A year is chosen by the kind of statement it appears in, strongest first: a publication
date ("Published 5 June 2017"), a citation line ("Clinical Science (2014) 126, 305"),
a short dated line ("Draft of October 7, 2013", a header "12 FEBRUARY 1996"), a
copyright line, the submission history ("Received 1 August 1997"), an arXiv
identifier. Within the strongest kind present the latest year wins (an issue follows
its online copyright year); years in running text are never used.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_YEAR = r"(1[89]\d\d|20\d\d)"
_DATE = rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH},?\s+|{MONTH}\s+\d{{1,2}}(?:\s*[-\u2013]\s*\d{{1,2}})?,?\s+|{MONTH},?\s+)"
_PUBLISHED = re.compile(
    rf"\b(?:published(?:\s+online)?|publication\s+date|available\s+online|first\s+published|issue\s+date)"
    rf"\s*:?\s*(?:on\s+)?{_DATE}?{_YEAR}\b",
    re.IGNORECASE,
)
_HISTORY = re.compile(r"\b(received|accepted|revised|submitted|revision)\b", re.IGNORECASE)
_NOT_PUBLICATION = re.compile(r"\b(downloaded|accessed|retrieved|printed on|generated)\b", re.IGNORECASE)
_VOLUME = re.compile(r"\b(?:vol(?:ume)?\.?|no\.|number|issue)\s*\d", re.IGNORECASE)
_CITATION_YEARS = [
    re.compile(rf"[(~]\s*{_YEAR}\s*[)!]"),  # "(2014)", APS "~2002!"
    re.compile(rf"\b{_YEAR},\s*\d+\s*[:(]"),  # "2014, 14:1"
    re.compile(rf"(?<!\d)\d+\s*\(\d+\)\s*:\s*\d+(?:\s*[-\u2013]\s*\d+)?,\s*{_YEAR}\b"),  # "8(1): 7-10, 2009"
    re.compile(rf"\b\d{{1,4}},\s*\d{{3,}}(?:[-\u2013]\d+)?\s+{_YEAR}\b"),  # "101, 023106 2007"
]
# Patterns that start with a digit run start only where the run does ((?<!\d)): a match
# inside a run implies one at its start, and without it a long run costs quadratic time.
_PAGES = re.compile(r"(?<!\d)\d+\s*[,:]\s*\d+|\b\d+\s*\(\d+\)|(?<!\d)\d+\s*[-\u2013]\s*\d+")
_DATED = re.compile(rf"{_DATE}{_YEAR}\b", re.IGNORECASE)
_STAMP_DATE = re.compile(rf"\b\d{{1,2}}\s+{MONTH}\s+(\d{{2}})\b", re.IGNORECASE)
_COPYRIGHT = re.compile(rf"(?:\u00a9|\(c\)|copyright)\s*(?:\S{{1,2}}\s+)?{_YEAR}\b", re.IGNORECASE)
_ANY_YEAR = re.compile(rf"\b{_YEAR}\b")

ARXIV_NEW = re.compile(r"\barXiv:\s?(\d{2})(\d{2})\.(\d{4,5})(v\d+)?", re.IGNORECASE)
# Archive names of the identifiers used until March 2007 (arXiv identifier scheme).
_OLD_ARCHIVES = (
    "acc-phys|adap-org|alg-geom|ao-sci|astro-ph|atom-ph|bayes-an|chao-dyn|chem-ph|cmp-lg|comp-gas"
    "|cond-mat|cs|dg-ga|funct-an|gr-qc|hep-ex|hep-lat|hep-ph|hep-th|math|math-ph|mtrl-th|nlin"
    "|nucl-ex|nucl-th|patt-sol|physics|plasm-ph|q-alg|q-bio|quant-ph|solv-int|supr-con"
)
ARXIV_OLD = re.compile(rf"\b((?:arXiv:)?((?:{_OLD_ARCHIVES})(?:\.[A-Z]{{2}})?)/(\d{{2}})(\d{{2}})(\d{{3}}))(v\d+)?\b")

_KEYWORDS = re.compile(
    r"^\s*(?:key\s*-?\s*words?(?:\s+and\s+phrases)?|additional\s+key\s+words\s+and\s+phrases|index\s+terms)"
    r"\s*[:.\u2014\u2013-]\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_LABEL_LINE = re.compile(
    r"^\s*(?:[A-Z][A-Za-z ]{1,40}:|\d+(?:\.\d+)*\.?\s+[A-Z]|[IVX]+\.\s+[A-Z]|\u00a9|\*|\u2217"
    r"|(?:abstract|introduction|background|summary|methods?|results|references)\b)",
    re.IGNORECASE,
)

_JUNK_TITLE = re.compile(
    r"\.(?:docx?|pdf|dvi|tex|ps|rtf|indd|qxd|odt|txt|eps|wpd)\b|^microsoft\s+\w+\s+-|^untitled\b|^title\b"
    r"|^unknown\b|^document\d*$|^slide\s*\d*$|^layout\s*\d*$|^manuscript\b|^paper\s*\d*$|^pii\b"
    r"|^arxiv:|\b10\.\d{4,9}/|^doi\b|^s?\d{4}-\d{3}[\dx]\(",
    re.IGNORECASE,
)
# Lines printed near a title that are never the title.
_NOT_TITLE = re.compile(
    r"^(?:(?:original|research|review|short|brief)?\s*(?:article|paper|communication|report|letter)s?"
    r"|open\s+access|abstract|summary|editorial|perspective|preprint|draft|contents|highlights"
    r"|research|review|letters?|correspondence|corresponding\s+author|academic\s+editor)\b[\s:.]*$"
    r"|^(?:vol(?:ume)?\.?|no\.|number|issue|pp?\.)\s*\d"
    r"|\bjournal\s+of\b|\bproceedings\b|\btransactions\s+on\b|contents\s+lists\s+available"
    r"|\bpreprint\s+series\b|\bcopyright\b|\u00a9|\blicen[cs]e\b|https?://|www\.|@|\breceived\b|\bdoi\b",
    re.IGNORECASE,
)
# An institution's name, never a title: "Department of ...", "... Accelerator Facility".
_INSTITUTION = re.compile(
    r"^(?:the\s+)?(?:department|university|institute|school|faculty|laborator(?:y|ies)|division|centre|center)\s+(?:of|for)\b"
    r"|\b(?:university|institute|laborator(?:y|ies)|facility|department|college|centre|center|inc\.?|ltd\.?|gmbh)$",
    re.IGNORECASE,
)
_URL = re.compile(r"(?:https?://|www\.)[^\s<>()\"']+", re.IGNORECASE)
_URL_SKIP = re.compile(r"creativecommons|licen[cs]e|copyright|permission|terms|policy|privacy|doi\.org|mailto:", re.IGNORECASE)
_SMALL_WORDS = {"of", "the", "and", "in", "for", "on", "a", "an", "to", "at"}


def latest_year() -> int:
    """The last plausible publication year: next year (issues are dated ahead)."""
    return dt.date.today().year + 1


def _plausible(year: int) -> bool:
    return 1800 <= year <= latest_year()


def year_candidates(line: str, band: str = "body") -> list[tuple[int, int]]:
    """(strength, year) pairs in one line; strength 0 is strongest (see the module
    docstring). ``band``: where the line is printed (header/footer/side/body)."""
    if _NOT_PUBLICATION.search(line):
        return []
    found: list[tuple[int, int]] = [(0, int(m.group(1))) for m in _PUBLISHED.finditer(line)]
    history = bool(_HISTORY.search(line))
    if not history:
        if _VOLUME.search(line):
            copyright_years = {m.start(1) for m in _COPYRIGHT.finditer(line)}
            found += [(1, int(m.group(1))) for m in _ANY_YEAR.finditer(line) if m.start(1) not in copyright_years]
        elif _PAGES.search(line):
            for pattern in _CITATION_YEARS:
                found += [(1, int(m.group(1))) for m in pattern.finditer(line)]
        if len(line) <= 60 or band != "body":
            found += [(2, int(m.group(1))) for m in _DATED.finditer(line)]
            for m in _STAMP_DATE.finditer(line):
                if ARXIV_OLD.search(line) or ARXIV_NEW.search(line):
                    two = int(m.group(1))
                    found.append((2, 2000 + two if 2000 + two <= latest_year() else 1900 + two))
        found += [(3, int(m.group(1))) for m in _COPYRIGHT.finditer(line)]
    else:
        found += [(4, int(m.group(1))) for m in _ANY_YEAR.finditer(line)]
    for m in ARXIV_NEW.finditer(line):
        found.append((5, 2000 + int(m.group(1))))
    for m in ARXIV_OLD.finditer(line):
        yy = int(m.group(3))
        if 1 <= int(m.group(4)) <= 12:
            found.append((5, 1900 + yy if yy >= 91 else 2000 + yy))
    return [(strength, year) for strength, year in found if _plausible(year)]


def pick_year(lines: Iterable[tuple[str, str]]) -> int | None:
    """The publication year from (line, band) pairs: the latest year of the strongest
    kind of statement present, or None."""
    candidates = [c for text, band in lines for c in year_candidates(text, band)]
    if not candidates:
        return None
    strongest = min(strength for strength, _ in candidates)
    return max(year for strength, year in candidates if strength == strongest)


def is_citation_line(line: str) -> bool:
    """A journal citation line ("Theoretical Computer Science 321 (2004) 5-12")."""
    return any(strength == 1 for strength, _ in year_candidates(line, "header"))


def journal_from_line(line: str) -> str | None:
    """The journal name that starts a citation line, capitals normalised, or None.

    ``"JOURNAL OF COMPUTATIONAL PHYSICS 63, 222-235 (1986)"`` -> ``"Journal of
    Computational Physics"``; ``"Nature | Vol 574 | 24 OCTOBER 2019"`` -> ``"Nature"``.
    """
    match = re.search(r"\b(Journal of [A-Z][A-Za-z]+(?: (?:of|and|the|for|in|on|[A-Z][A-Za-z]+))*)", line)
    head = re.sub(r"^.*?\bet al\.\s*", "", line.split("|")[0])
    head = re.split(r"\s*(?:[(~,]\s*)?\b(?:\d|vol\b|volume\b|no\.|pp\.)", head, maxsplit=1, flags=re.IGNORECASE)[0]
    head = head.strip(" ,;:.-") + ("." if head.rstrip().endswith(".") else "")
    for name in (head, match.group(1) if match else ""):
        words = name.split()
        if not 1 <= len(words) <= 10 or sum(c.isalpha() for c in name) < 4 or re.search(r"[\d,;:@/]", name):
            continue
        if re.match(rf"^(?:{MONTH}|vol|volume|issue|number|received|published|copyright)\b", name, re.IGNORECASE):
            continue
        if sum(len(w) == 1 for w in words) * 2 > len(words):  # letter-spaced "P H Y S I C A L"
            continue
        if name.isupper():
            name = " ".join(w.lower() if w.lower() in _SMALL_WORDS and i and len(w) > 1 else w.capitalize() if len(w) > 1 else w
                            for i, w in enumerate(name.split()))
        return name
    return None


def keywords_from_lines(lines: list[str]) -> list[str]:
    """Keywords after a ``Keywords:``/``Key words``/``Index Terms`` label, continued over
    following lines until a line that starts another labelled block or a heading.

    :returns: the keywords as printed, in order, split at ``,``, ``;`` and ``·``.
    """
    for index, line in enumerate(lines):
        match = _KEYWORDS.match(line)
        if not match:
            continue
        if not match.group("rest").strip():  # "Keywords:" alone, then one keyword a line
            listed = []
            for following in lines[index + 1 : index + 9]:
                if not following.strip() or _LABEL_LINE.match(following) or len(following.split()) > 6:
                    break
                listed.append(following.strip())
            text = "; ".join(listed)
        else:
            parts = [match.group("rest")]
            for following in lines[index + 1 : index + 4]:
                if not _continues(parts[-1].rstrip(), following.strip()):
                    break
                parts.append(following)
            text = " ".join(p.strip() for p in parts)
        words = [w.strip(" .\u2022") for w in re.split(r"\s*[;,\u00b7\u2022]\s*|\s+-\s+", text)]
        return [w for w in words if w and len(w) <= 80]
    return []


def _continues(previous: str, following: str) -> bool:
    """Does a keyword list go on from ``previous`` to the line ``following``? Yes after a
    separator; else only for a lower-case start that lists (``,``) or is short."""
    if not following or previous.endswith(".") or _LABEL_LINE.match(following) or following.isupper():
        return False
    if previous.endswith((",", ";", "-")):
        return True
    return following[0].islower() and (bool(re.search(r"[,;]", following)) or len(following.split()) <= 4)


def is_junk_title(title: str, file_stem: str = "") -> bool:
    """True for titles that name a file, a DOI, a PII or an arXiv stamp, for
    ``Microsoft Word - x.doc``, ``untitled``, bare codes (``ipg1300180a``) and digits."""
    title = " ".join((title or "").split())
    letters = sum(c.isalpha() for c in title)
    if letters < 4 or letters < 0.5 * len(title.replace(" ", "")):
        return True
    if " " not in title and any(c.isdigit() for c in title):
        return True
    if file_stem and re.sub(r"[\W_]+", "", title).lower() == re.sub(r"[\W_]+", "", file_stem).lower():
        return True
    return bool(_JUNK_TITLE.search(title))


def is_title_text(text: str) -> bool:
    """Could ``text`` be (part of) a printed title? Not a banner ("Open Access",
    "Article", letter-spaced "R E S E A R C H"), a journal or citation line, a URL, an
    e-mail, a date line or a copyright notice."""
    words = text.split()
    if not words or is_junk_title(text) or _NOT_TITLE.search(text) or _INSTITUTION.search(text.strip(" .,")):
        return False
    if is_citation_line(text):
        return False
    if sum(len(w) == 1 for w in words) > max(2, len(words) // 2):
        return False
    return not _DATED.fullmatch(text.strip("() ")) and len(words) <= 60


def arxiv_id(text: str) -> str | None:
    """The first arXiv identifier in ``text`` without its version: ``"2101.00001"``,
    ``"quant-ph/9508027"``; None when there is none."""
    new = ARXIV_NEW.search(text)
    if new:
        return f"{new.group(1)}{new.group(2)}.{new.group(3)}"
    for old in ARXIV_OLD.finditer(text):
        if 1 <= int(old.group(4)) <= 12:
            return f"{old.group(2)}/{old.group(3)}{old.group(4)}{old.group(5)}"
    return None


def urls_in(text: str) -> list[str]:
    """Web addresses in ``text`` except licences, copyright pages, doi.org and e-mail:
    ``www.x.org/a`` -> ``http://www.x.org/a``; trailing punctuation removed."""
    found = []
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:")
        if _URL_SKIP.search(url):
            continue
        found.append(url if url.lower().startswith("http") else "http://" + url)
    return found
