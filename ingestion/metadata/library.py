"""Reference-manager libraries: BibTeX (``.bib``) and CSL-JSON (``.json``) exports of
Zotero, JabRef and Mendeley, read into :class:`Record` values (docs/bibliography.md,
"Reference-manager libraries"); CSL-JSON is read in ingestion/metadata/csl.py.

BibTeX goes through ``bibtexparser`` (v2): ``@string`` macros and month macros resolved,
names split by BibTeX's rules (``von Last, Jr, First``; ``{Braced}`` names kept whole),
then LaTeX decoded with ``pylatexenc`` (``{\\"o}`` -> ö, ``{{Protected}}`` -> Protected).
A file that does not parse is refused whole (:class:`LibraryError` naming the file and
line): nothing of it is applied.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import bibtexparser
from bibtexparser.middlewares import SeparateCoAuthors, SplitNameParts
from bibtexparser.model import DuplicateBlockKeyBlock
from pylatexenc.latex2text import LatexNodes2Text

from ingestion.sources import LIBRARY_SUFFIXES

from .biblio.doi import normalize_doi

# Fields a record may give a file's DEFAULT entry (in this order).
RECORD_FIELDS = ("title", "authors", "year", "journal", "doi", "keywords", "collections", "abstract", "url_1",
                 "url_arxiv")
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d|2100)(?!\d)")
_JABREF_ENCODING = re.compile(rb"^\s*%\s*Encoding:\s*([\w.-]+)", re.I)
_LATEX = LatexNodes2Text(math_mode="text")
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
# bibtexparser logs each failed block itself; LibraryError says it once, with the line.
logging.getLogger("bibtexparser").setLevel(logging.ERROR)


class LibraryError(ValueError):
    """A library file that cannot be used; the message names the file and the line."""


@dataclass
class Record:
    """One reference of a library.

    ``fields``: the DEFAULT-entry values it gives (keys of :data:`RECORD_FIELDS`: title
    str, authors list of "Given Family", year int, journal str, doi str (normalised),
    keywords list, collections list, abstract str, url_1 str, url_arxiv str).
    ``files``: attachment paths of its ``file`` field, unescaped, in order.
    """

    key: str
    library: str  # the library's file name
    line: int  # 1-based line of the entry (BibTeX) or item (CSL-JSON)
    fields: dict = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.library}: {self.key}"


def read_library(path: Path | str) -> list[Record]:
    """The records of one BibTeX or CSL-JSON file (chosen by the suffix).

    :raises LibraryError: unreadable, not UTF-8 (a JabRef ``% Encoding:`` line is
        honoured; a BOM is skipped), a block that does not parse (unbalanced braces,
        ...), a duplicate entry key or field, a CSL-JSON file that is not an array of
        items with ids. The message names the file and the line.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LibraryError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    return parse_library(path.name, raw)


def parse_library(name: str, raw: bytes) -> list[Record]:
    """:func:`read_library` of bytes named ``name`` (an upload). :raises LibraryError."""
    suffix = Path(name).suffix.lower()
    if suffix not in LIBRARY_SUFFIXES:
        raise LibraryError(f"{name}: not a library (expected .bib or CSL-JSON .json)")
    text = _decode(name, raw)
    from .csl import csl_records  # here: csl.py builds on this module's Record

    try:
        records = _bibtex_records(text, name) if suffix == ".bib" else csl_records(text, name)
    except RecursionError:  # the parsers (bibtexparser, pylatexenc, json) recurse per level
        raise LibraryError(f"{name}: braces or JSON nested too deeply; not a reference-manager export") from None
    for record in records:
        # the database's text and JSON columns take neither (the whole build would fail)
        if any(_UNSAFE.search(value) for value in _strings([record.key, record.fields, record.files])):
            raise LibraryError(f"{name}: line {record.line}: entry '{_UNSAFE.sub('?', record.key)}' holds a NUL "
                               "character or a lone surrogate")
    return records


def _strings(value):
    """Every string inside nested lists and dicts (values only), without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _decode(name: str, raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    declared = _JABREF_ENCODING.match(raw[:200])
    encoding = declared.group(1).decode() if declared else "utf-8"
    try:
        return raw.decode(encoding)
    except LookupError:
        raise LibraryError(f"{name}: line 1: unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        shown = "UTF-8" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
        raise LibraryError(
            f"{name}: line {line}: not {shown} (byte 0x{raw[exc.start]:02x}); export the library as UTF-8"
        ) from None


# --- BibTeX -----------------------------------------------------------------------


def _latex(value) -> str:
    text = _LATEX.latex_to_text(str(value)) if ("\\" in str(value) or "{" in str(value) or "~" in str(value)) else str(value)
    return " ".join(text.replace("\u00a0", " ").split())


def _bibtex_records(text: str, name: str) -> list[Record]:
    library = bibtexparser.parse_string(text, append_middleware=[SeparateCoAuthors(), SplitNameParts()])
    if library.failed_blocks:
        raise LibraryError(f"{name}: " + "; ".join(_failure(block) for block in library.failed_blocks[:5]))
    records = []
    for entry in library.entries:
        line = (entry.start_line or 0) + 1
        if not entry.key.strip():
            raise LibraryError(f"{name}: line {line}: @{entry.entry_type} entry without a key")
        records.append(Record(entry.key, name, line, _bibtex_fields(entry), file_field(str(entry.get("file").value))
                              if entry.get("file") else []))
    return records


def _failure(block) -> str:
    line = (block.start_line or 0) + 1
    if isinstance(block, DuplicateBlockKeyBlock):
        first = (block.previous_block.start_line or 0) + 1
        return f"line {line}: duplicate entry key '{block.key}' (first at line {first})"
    error = block.error
    reason = getattr(error, "abort_reason", "") or str(error) or type(error).__name__
    reason = " ".join(reason.split(". Note:")[0].split())  # without bibtexparser's hint about its own API
    head = re.match(r"\s*@(\w+)\s*[{(]\s*([^,\s]*)", block.raw or "")
    if head and getattr(error, "abort_reason", ""):
        return f"line {line}: @{head.group(1)}{{{head.group(2)}, ... does not parse (unbalanced braces?): {reason}"
    return f"line {line}: {reason}"


def _bibtex_fields(entry) -> dict:
    fields = {f.key.lower(): f.value for f in entry.fields}  # field names are case-insensitive

    def _value(_entry, key: str) -> str:
        value = fields.get(key)
        return "" if value is None or isinstance(value, list) else str(value).strip()

    out: dict = {}
    title = _latex(_value(entry, "title"))
    if title:
        out["title"] = title
    author = fields.get("author")
    if isinstance(author, list):
        names = [_latex(parts.merge_first_name_first) for parts in author]
        others = bool(names) and names[-1].lower() == "others"  # BibTeX's "and others": et al.
        names = [n for n in names if n and n.lower() != "others"]
        if names and others:
            names[-1] += " et al."
        if names:
            out["authors"] = names
    year = year_in(_value(entry, "date")) or year_in(_value(entry, "year"))
    if year:
        out["year"] = year
    journal = _latex(_value(entry, "journal") or _value(entry, "journaltitle") or _value(entry, "booktitle"))
    if journal:
        out["journal"] = journal
    doi = normalize_doi(_value(entry, "doi"))
    if doi:
        out["doi"] = doi
    keywords = split_list(_latex(_value(entry, "keywords")))
    if keywords:
        out["keywords"] = keywords
    # JabRef writes its groups as "groups"; "collections" for exports that add Zotero's.
    collections = split_list(_latex(_value(entry, "collections") or _value(entry, "groups")))
    if collections:
        out["collections"] = collections
    abstract = _latex(_value(entry, "abstract"))
    if abstract:
        out["abstract"] = abstract
    url = _value(entry, "url")
    eprint = _value(entry, "eprint")
    if eprint and (_value(entry, "archiveprefix") or _value(entry, "eprinttype")).lower() == "arxiv":
        out["url_arxiv"] = f"https://arxiv.org/abs/{eprint}"
    elif "arxiv.org/abs/" in url:
        out["url_arxiv"] = url
    if url.startswith(("http://", "https://")) and "arxiv.org/abs/" not in url:
        out["url_1"] = url
    return {key: out[key] for key in RECORD_FIELDS if key in out}


def year_in(text: str) -> int | None:
    """The first plausible year (1500-2100) in ``text``, or None."""
    match = _YEAR.search(text or "")
    return int(match.group(1)) if match else None


def split_list(text: str) -> list[str]:
    """Items of a ``;``- or ``,``-separated list, stripped, each once."""
    return list(dict.fromkeys(k.strip() for k in re.split(r"[;,]", text or "") if k.strip()))


def file_field(value: str) -> list[str]:
    """Attachment paths of a BibTeX ``file`` field, in order.

    Formats: JabRef and Zotero ``description:path:type`` items separated by ``;``, with
    ``\\:``, ``\\;`` and ``\\\\`` escapes (``:C\\:\\\\Users\\\\a.pdf:PDF``); Mendeley's
    ``$\\backslash$``; plain paths separated by ``;`` (Better BibTeX).
    """
    value = value.replace("$\\backslash$", "\\")
    items, parts, current, escaped = [], [], [], False
    for ch in value:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ":":
            parts.append("".join(current))
            current = []
        elif ch == ";":
            parts.append("".join(current))
            items.append(parts)
            parts, current = [], []
        else:
            current.append(ch)
    parts.append("".join(current))
    items.append(parts)
    paths = []
    for parts in items:
        if len(parts) >= 3:
            path = ":".join(parts[1:-1])  # an unescaped drive colon ("C:/x.pdf") stays inside the path
        elif len(parts) == 2 and len(parts[0]) == 1:
            path = ":".join(parts)  # "C:/papers/a.pdf"
        else:
            path = ":".join(parts)
        path = path.strip()
        if path:
            paths.append(path)
    return paths


# --- CSL-JSON ---------------------------------------------------------------------
