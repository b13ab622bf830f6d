"""``stores map-lint DIR``: check the metadata map of a chunked folder
(docs/ingestion.md, "Steps").

Checks: missing core fields (bibliographic ones only where expected:
:func:`missing_fields`); suspicious titles (untitled, unknown, the file stem);
suspicious DOIs (``.pdf`` inside, junk after the suffix); years outside 1800..next
year + 1 or disagreeing with a year in the file name; more than 5 url keys; map keys
that are not source files (a stale map keyed by heading titles); and, fatal, source
files without an entry. The folder's libraries and ``DIR/metadata-map.json`` are
applied first; records and files that no library matched are listed.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from ingestion.convert import PDF_EXTENSIONS
from ingestion.models import StagedFile
from ingestion.sources import list_source_files, relative_name, resolve_directory

from .layers import apply_folder_sources
from .map import DEFAULT, MapError

CORE_FIELDS = ("title", "authors", "year", "doi")
# Fields of a cited work: expected of papers, and of any file whose metadata has one.
BIBLIOGRAPHIC = ("authors", "year", "doi", "journal")
SUSPICIOUS_TITLES = {"untitled", "unknown", "no title", "title", "none", ""}
MAX_URL_KEYS = 5
MAX_ITEMS = 20
_DOI = re.compile(r"^10\.\d{4,9}/[^\s]+$")
_DOI_JUNK = re.compile(r"[.,;:)\]}>'\"]$|\s")
_FILE_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)")


@dataclass
class LintReport:
    """Sections of findings; ``fatal`` when a source file has no map entry."""

    title: str
    sections: dict[str, list[str]] = field(default_factory=dict)
    totals: list[str] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    fatal: bool = False

    def add(self, section: str, item: str) -> None:
        self.sections.setdefault(section, []).append(item)

    def fatal_findings(self) -> str:
        """What was fatal, in one line (the command's error)."""
        reasons = []
        if any(name.startswith("source files without") for name in self.sections):
            reasons.append("a source file has no metadata map entry (see above); run `stores chunk` on it")
        if any(name.startswith("libraries refused") for name in self.sections):
            reasons.append("a library does not parse (see above); nothing of it was applied")
        return "; ".join(reasons)

    def lines(self) -> list[str]:
        out = [self.title] + [f"  {line}" for line in self.totals]
        for section, items in self.sections.items():
            out.append(f"{section} ({len(items)}):")
            out.extend(f"  {item}" for item in items[:MAX_ITEMS])
            if len(items) > MAX_ITEMS:
                out.append(f"  ... and {len(items) - MAX_ITEMS} more")
        if not self.sections:
            out.append("no problems found")
        if self.samples:
            out.append("samples:")
            out.extend(f"  {line}" for line in self.samples)
        return out


def suspicious_doi(doi: str) -> str:
    """Why a DOI looks wrong ("" when it looks fine)."""
    if ".pdf" in doi.lower():
        return "contains '.pdf'"
    if not _DOI.match(doi):
        return "not of the form 10.NNNN/suffix"
    if _DOI_JUNK.search(doi):
        return "junk after the suffix"
    if doi.count("(") != doi.count(")"):
        return "unbalanced parentheses"
    return ""


def _year_problem(year, file_name: str) -> str:
    try:
        value = int(year)
    except (TypeError, ValueError):
        return f"year {year!r} is not a number"
    latest = dt.date.today().year + 1
    if not 1800 <= value <= latest:
        return f"year {value} outside 1800..{latest}"
    in_name = {int(y) for y in _FILE_YEAR.findall(Path(file_name).stem)}
    if in_name and value not in in_name:
        return f"year {value} but the file name says {', '.join(map(str, sorted(in_name)))}"
    return ""


def _empty(value) -> bool:
    return value in (None, "", [])


def missing_fields(file_name: str, metadata: dict, fields, domain_fields=frozenset()) -> list[str]:
    """The ``fields`` (in their order) absent from ``metadata`` that the file is expected
    to have: ``title`` and any non-bibliographic field always; a bibliographic one
    (:data:`BIBLIOGRAPHIC`) only for a paper (a PDF), a file whose
    metadata has another one (a library record, a DOI: a cited work), or a field in
    ``domain_fields`` (the names the domain filters on). A plain note lacks no year."""
    absent = [f for f in fields if _empty(metadata.get(f))]
    work = Path(file_name).suffix.lower() in PDF_EXTENSIONS or any(not _empty(metadata.get(f)) for f in BIBLIOGRAPHIC)
    return [f for f in absent if work or f not in BIBLIOGRAPHIC or f in domain_fields]


def lint_entry(report: LintReport, file_name: str, entries: dict[str, dict]) -> None:
    """Add the findings for one file's map to ``report``."""
    default = entries.get(DEFAULT) or {}
    missing = missing_fields(file_name, default, CORE_FIELDS)
    if missing:
        report.add("missing core fields", f"{file_name}: {', '.join(missing)}")
    title = " ".join(str(default.get("title") or "").split())
    stem = Path(file_name).stem
    if "title" not in missing and (
        title.lower() in SUSPICIOUS_TITLES or title.lower() in {stem.lower(), stem.replace("_", " ").replace("-", " ").lower()}
    ):
        report.add("suspicious titles", f"{file_name}: {title!r}")
    for key, values in entries.items():
        doi = values.get("doi")
        if doi:
            problem = suspicious_doi(str(doi))
            if problem:
                report.add("suspicious DOIs", f"{file_name} [{key}]: {doi} ({problem})")
        if values.get("year") not in (None, ""):
            problem = _year_problem(values["year"], file_name)
            if problem:
                report.add("suspicious years", f"{file_name} [{key}]: {problem}")
        urls = [k for k in values if k.startswith("url")]
        if len(urls) > MAX_URL_KEYS:
            report.add("too many url keys", f"{file_name} [{key}]: {len(urls)} (at most {MAX_URL_KEYS})")


def map_lint(directory: Path | str) -> LintReport:
    """Lint the staged metadata map of ``directory``, after applying its libraries and
    ``metadata-map.json`` (:func:`ingestion.metadata.layers.apply_folder_sources`).

    Library findings: records that match no file and files that match no record (when
    the folder has a library); a library that does not parse is fatal.

    :raises IngestError: not a directory. :raises MapError: bad ``metadata-map.json``.
    """
    directory = resolve_directory(directory)
    sources = apply_folder_sources(directory)
    unknown = sources.unknown_keys
    report = LintReport(f"map-lint {directory}")
    report.totals += sources.lines()
    for error in sources.errors:
        report.add("libraries refused, nothing of them applied (fatal)", error)
        report.fatal = True
    if sources.matching is not None:
        for record in sources.matching.unmatched_records:
            title = record.fields.get("title", "(no title)")
            report.add("library records matching no file", f"{record.label} (line {record.line}): {title}")
        for record, twin in sources.matching.duplicates:
            report.add("library records of works already matched", f"{record.label} (line {record.line}): same work as "
                       f"{twin.label}")
        for name in sources.matching.unmatched_files:
            report.add("files matching no library record", name)
    staged = {s.file_name: s for s in StagedFile.objects.filter(directory=str(directory))}
    sources = [relative_name(p, directory) for p in list_source_files(directory)]
    report.totals.append(f"{len(sources)} source files, {sum(1 for s in staged.values() if s.metadata_map)} with a map")
    for key in unknown:
        looks_like_heading = any(key in (s.metadata_map or {}) for s in staged.values())
        why = "a heading chain, not a file name (stale map?)" if looks_like_heading else "no such source file"
        report.add("map keys that are not source files", f"{key}: {why}")
    for file_name in sources:
        row = staged.get(file_name)
        if row is None or row.status == StagedFile.Status.FAILED:
            reason = "not chunked" if row is None else f"chunking failed: {row.error}"
            report.add("source files without a map entry (fatal)", f"{file_name}: {reason}")
            report.fatal = True
        elif row.status != StagedFile.Status.CHUNKED:
            report.add("files without chunks", f"{file_name}: {row.error}")
        else:
            lint_entry(report, file_name, row.metadata_map)
    return report


__all__ = ["LintReport", "MapError", "lint_entry", "map_lint", "missing_fields", "suspicious_doi"]
