"""Where a file's metadata map comes from, and the one precedence rule over its sources
(docs/ingestion.md, "Where a file's map comes from").

Sources, per file: the bibliographic **cascade** (computed at ``chunk``), a matched
**library** record (a tier above the cascade: its fields win), the **map file**
(``DIR/metadata-map.json``) and **edits** (the staged map in the admin before ``store``;
the stored map in the admin, ``map-import --collection`` after it).

The rule: *a source that changed since it was last applied is applied; the others
keep what they said.* Each source's last applied values are kept (``StagedFile.sources``),
so a change is known field by field:

- cascade + library give the **generated** map (library fields over cascade fields,
  a fixed order: a curated record outranks what is read from the PDF); when it
  changes, the changed fields are written over the staged map;
- then the map file, when its entry for the file changed (or is new): its changed
  fields are written over the staged map;
- at ``store``, the staged map's fields that changed since the last store are
  written over the stored map; a stored field that was edited since (admin) and now
  gets another value is a **conflict**: the change being stored wins and the edit is
  reported (the admin value is printed, never lost silently). Fields nobody changed
  keep their stored value, admin edits included. Only metadata and years are
  rewritten: a file whose content did not change is not re-embedded.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from ingestion.models import StagedFile
from ingestion.sources import OWN_FILES, is_library, resolve_directory

from .biblio.doi import doi_key, doi_url
from .library import LibraryError, Record, read_library
from .map import DEFAULT, EDITED_NAME, read_template, template_for

CASCADE, LIBRARY, GENERATED, MAP_FILE, STORED, LIBRARY_PATHS = (
    "cascade", "library", "generated", "map_file", "stored", "library_paths")
TITLE_THRESHOLD = 0.9  # difflib ratio of normalised titles for a title match
RULES = ("file", "doi", "title")
_MISSING = object()


# --- three-way merge of maps ---------------------------------------------------------


@dataclass(frozen=True)
class Change:
    key: str
    field: str
    old: object
    new: object

    def line(self) -> str:
        def show(value):
            return "(none)" if value is _MISSING else json.dumps(value, ensure_ascii=False)[:80]

        return f"[{self.key}] {self.field}: {show(self.old)} -> {show(self.new)}"


@dataclass
class Merge:
    entries: dict[str, dict]
    changes: list[Change] = field(default_factory=list)
    conflicts: list[Change] = field(default_factory=list)  # old = the overwritten edited value


def merge(ours: dict[str, dict], base: dict[str, dict] | None, theirs: dict[str, dict]) -> Merge:
    """``ours`` with every field that changed from ``base`` to ``theirs`` written over it.

    :param ours: the map as it is (possibly edited); :param base: what the changing
        source said last time (None: it never said anything, so all of ``theirs`` counts
        as changed); :param theirs: what it says now.
    :returns: Merge: the new entries, the fields written (``changes``), and the fields
        whose value in ``ours`` had been edited away from ``base`` and was overwritten
        (``conflicts``). A heading key that left ``theirs`` goes when its entry in
        ``ours`` is empty or unedited; a new heading key comes with its fields.
    """
    base = base or {}
    out = {key: dict(values) for key, values in ours.items()}
    result = Merge(out)
    for key in list(theirs) + [k for k in base if k not in theirs]:
        new_entry, old_entry = theirs.get(key), base.get(key) or {}
        if new_entry is None:
            if key in out and (not out[key] or out[key] == old_entry):
                del out[key]
            continue
        target = out.setdefault(key, {})
        for name in list(new_entry) + [n for n in old_entry if n not in new_entry]:
            new, old = new_entry.get(name, _MISSING), old_entry.get(name, _MISSING)
            if new == old:
                continue
            mine = target.get(name, _MISSING)
            if mine == new:
                continue
            if mine != old and mine is not _MISSING:
                result.conflicts.append(Change(key, name, mine, new))
            if new is _MISSING:
                target.pop(name, None)
            else:
                target[name] = new
            result.changes.append(Change(key, name, mine, new))
    return result


# --- library records -> files -----------------------------------------------------------


def _norm_title(text: str) -> str:
    text = unicodedata.normalize("NFKD", str(text or "")).encode("ascii", "ignore").decode().casefold()
    return " ".join(re.findall(r"[a-z0-9]+", text))


def _norm_path(path: str) -> str:
    return path.replace("\\", "/").strip().lower()


@dataclass
class Matching:
    """``files``: file name -> (record, rule) with rule one of :data:`RULES`;
    ``duplicates``: records left over because another record of the same work (same
    DOI or title) was matched; ``unmatched_records``: the other records left over."""

    files: dict[str, tuple[Record, str]] = field(default_factory=dict)
    unmatched_records: list[Record] = field(default_factory=list)
    duplicates: list[tuple[Record, Record]] = field(default_factory=list)  # (unused record, the matched one)
    unmatched_files: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {rule: sum(1 for _, r in self.files.values() if r == rule) for rule in RULES}


def _same_work(a: Record, b: Record) -> bool:
    doi_a, doi_b = a.fields.get("doi"), b.fields.get("doi")
    if doi_a and doi_b:
        return doi_key(doi_a) == doi_key(doi_b)
    title = _norm_title(a.fields.get("title", ""))
    return bool(title) and title == _norm_title(b.fields.get("title", ""))


def _first_twins(matched: list[Record]):
    """``twin_of(record)``: the first of ``matched`` that is the same work as ``record``
    (:func:`_same_work`), or None; by lookups, not a scan of ``matched`` per record."""
    by_doi: dict[str, int] = {}  # DOI -> first matched record with it
    by_title: dict[str, int] = {}  # title -> first matched record with it
    by_title_no_doi: dict[str, int] = {}  # title -> first matched record without a DOI
    for order, m in enumerate(matched):
        doi, title = m.fields.get("doi"), _norm_title(m.fields.get("title", ""))
        if doi:
            by_doi.setdefault(doi_key(doi), order)
        if title:
            by_title.setdefault(title, order)
            if not doi:
                by_title_no_doi.setdefault(title, order)

    def twin_of(record: Record) -> Record | None:
        doi, title = record.fields.get("doi"), _norm_title(record.fields.get("title", ""))
        if doi:  # a record with a DOI: the same DOI, or the same title on one without a DOI
            found = [by_doi.get(doi_key(doi)), by_title_no_doi.get(title) if title else None]
        else:
            found = [by_title.get(title) if title else None]
        found = [order for order in found if order is not None]
        return matched[min(found)] if found else None

    return twin_of


def match_records(records: list[Record], files: dict[str, dict]) -> Matching:
    """Match records to files: by the record's ``file`` attachments (the path ends with
    the file's name in the folder; several attachments per record), then by the DOI the
    cascade found in the file, then by the normalised title (difflib ratio >= 0.9),
    each file and each DOI/title match used once.

    :param files: file name (relative to the folder) -> its cascade DEFAULT entry.
    """
    matching = Matching()
    used: set[int] = set()
    # Files by lower-cased name and by bare name (folder order kept): a lookup per path
    # suffix of an attachment, not a scan of the folder per attachment (a library of
    # 10^4 records against a folder of 10^3 files would take minutes).
    position = {name: i for i, name in enumerate(files)}
    by_name: dict[str, list[str]] = {}
    by_base: dict[str, list[str]] = {}
    for name in files:
        by_name.setdefault(name.lower(), []).append(name)
        by_base.setdefault(name.lower().rsplit("/", 1)[-1], []).append(name)
    for index, record in enumerate(records):
        for attachment in map(_norm_path, record.files):
            # the attachment itself and each of its suffixes after a "/"
            suffixes = {attachment} | {attachment[i + 1:] for i, ch in enumerate(attachment) if ch == "/"}
            for name in sorted((n for key in suffixes for n in by_name.get(key, ())), key=position.__getitem__):
                if name not in matching.files:
                    matching.files[name] = (record, "file")
                    used.add(index)
        if index not in used:  # attachments stored elsewhere than the folder: the bare file name
            for attachment in map(_norm_path, record.files):
                base = attachment.rsplit("/", 1)[-1]
                hits = [n for n in by_base.get(base, ()) if n not in matching.files]
                if len(hits) == 1:
                    matching.files[hits[0]] = (record, "file")
                    used.add(index)
    by_doi = {doi_key(d["doi"]): name for name, d in files.items() if d.get("doi") and name not in matching.files}
    for index, record in enumerate(records):
        doi = record.fields.get("doi")
        name = by_doi.get(doi_key(doi)) if doi and index not in used else None
        if name and name not in matching.files:
            matching.files[name] = (record, "doi")
            used.add(index)
    pairs = []
    # once per file, and only the files with a title
    titled = [(name, t) for name, t in ((n, _norm_title(d.get("title", ""))) for n, d in files.items()) if t]
    for index, record in enumerate(records):
        title = _norm_title(record.fields.get("title", ""))
        if index in used or not title:
            continue
        for name, found in titled:
            if name not in matching.files:
                # the cheap upper bounds first: most pairs are far apart
                sm = difflib.SequenceMatcher(None, title, found)
                if sm.real_quick_ratio() >= TITLE_THRESHOLD and sm.quick_ratio() >= TITLE_THRESHOLD:
                    ratio = sm.ratio()
                    if ratio >= TITLE_THRESHOLD:
                        pairs.append((ratio, index, name))
    for _, index, name in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):  # ties: the earlier record
        if index not in used and name not in matching.files:
            matching.files[name] = (records[index], "title")
            used.add(index)
    twin_of = _first_twins([r for i, r in enumerate(records) if i in used])
    for index, record in enumerate(records):
        if index in used:
            continue
        twin = twin_of(record)
        if twin is not None:
            matching.duplicates.append((record, twin))
        else:
            matching.unmatched_records.append(record)
    matching.unmatched_files = sorted(n for n in files if n not in matching.files)
    return matching


def library_entry(record: Record, rule: str) -> dict:
    """What a StagedFile remembers of its matched record (``sources["library"]``)."""
    return {"library": record.library, "key": record.key, "match": rule, "fields": record.fields}


def overlay(cascade: dict, library: dict | None) -> dict:
    """The generated DEFAULT entry: the library record's fields over the cascade's.

    ``_sources`` starts with ``library``; ``_metadata_complete`` is true when the
    record has title, authors and year (or the cascade was complete); ``_library``
    names the record (``refs.bib: key``) and how it was matched.
    """
    if not library:
        return dict(cascade)
    fields = library["fields"]
    out = {"title": fields.get("title") or cascade.get("title", "")}
    out.update({k: v for k, v in cascade.items() if k != "title"})
    out.update(fields)
    if fields.get("doi"):
        out["url_doi"] = doi_url(fields["doi"])
    out["_metadata_complete"] = bool(cascade.get("_metadata_complete")) or all(
        fields.get(k) for k in ("title", "authors", "year"))
    out["_sources"] = ["library"] + [s for s in cascade.get("_sources", []) if s != "library"]
    out["_library"] = f"{library['library']}: {library['key']} (matched by {library['match']})"
    return out


def generated_map(staged: StagedFile) -> dict[str, dict]:
    """Cascade + library record for the file, with an empty entry per heading chain."""
    sources = staged.sources or {}
    default = overlay(sources.get(CASCADE, staged.metadata_map.get(DEFAULT, {})), sources.get(LIBRARY))
    return template_for(default, (c["headings"] for c in staged.chunks or []))


def refresh_generated(staged: StagedFile) -> Merge:
    """Write the fields of the generated map that changed since it was last applied
    over the staged map (no save). :returns: the Merge (fields written, edits replaced)."""
    sources = staged.sources = dict(staged.sources or {})
    new = generated_map(staged)
    result = merge(staged.metadata_map or {}, sources.get(GENERATED), new)
    staged.metadata_map, sources[GENERATED] = result.entries, new
    return result


# --- the folder's sources -----------------------------------------------------------------


@dataclass
class SourcesReport:
    """What :func:`apply_folder_sources` read and applied, for map-lint and ``store``."""

    libraries: list[str] = field(default_factory=list)  # "refs.bib: 22 records"
    errors: list[str] = field(default_factory=list)  # libraries refused (nothing of them applied)
    notes: list[str] = field(default_factory=list)
    matching: Matching | None = None
    map_file_changed: int = 0
    map_file_present: bool = False
    unknown_keys: list[str] = field(default_factory=list)
    changed: dict[str, list[Change]] = field(default_factory=dict)  # file -> fields written
    conflicts: list[str] = field(default_factory=list)  # edited staged fields that a change replaced

    def lines(self) -> list[str]:
        out = [f"library {text}" for text in self.libraries]
        if self.matching is not None:
            counts = self.matching.counts()
            out.append(f"library matches: {len(self.matching.files)} file(s) (" +
                       ", ".join(f"{rule} {counts[rule]}" for rule in RULES) + ")")
        out += [f"library refused: {error}" for error in self.errors]
        out += self.notes
        if self.map_file_present:
            out.append(f"imported {EDITED_NAME}: {self.map_file_changed} file(s) changed")
        return out + self.conflicts


def folder_libraries(directory: Path) -> list[Path]:
    """``*.bib`` files under the folder, and ``*.json`` files holding a JSON array (CSL-JSON;
    other JSON files are not libraries). Hidden folders and our own map files skipped."""
    found = []
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if not path.is_file() or any(p.startswith(".") for p in rel.parts) or path.name in OWN_FILES:
            continue
        if is_library(path):
            found.append(path)
    return found


def read_libraries(paths: list[Path]) -> tuple[list[Record], list[str], list[str]]:
    """:returns: (records of all files, "name: N records" lines, errors)."""
    records, lines, errors = [], [], []
    for path in paths:
        try:
            found = read_library(path)
        except LibraryError as exc:
            errors.append(str(exc))
            continue
        records += found
        lines.append(f"{path.name}: {len(found)} record(s)")
    return records, lines, errors


def check_library(path: Path | str) -> Path:
    """A ``--library FILE`` argument, read once to check it. :raises LibraryError."""
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise LibraryError(f"{path}: no such library file")
    read_library(path)
    return path


def apply_folder_sources(directory: Path | str, libraries: list[Path | str] | None = None,
                         only: set[str] | None = None) -> SourcesReport:
    """Apply the libraries and the map file of a chunked folder to its staged maps.

    :param libraries: ``--library`` files (remembered for the folder, replacing the ones
        given before); None: the ones given before that still exist. Library files in
        the folder (``*.bib``, CSL-JSON ``*.json``) are always read.
    :param only: update only these files (an upload's); matching still sees them all.
    :returns: SourcesReport. A library that does not parse is refused whole and the
        staged maps keep what earlier libraries gave (``errors``).
    :raises MapError: a malformed ``metadata-map.json``.
    """
    directory = resolve_directory(directory)
    report = SourcesReport()
    edited_path = directory / EDITED_NAME
    edited = read_template(edited_path) if edited_path.is_file() else None
    with transaction.atomic():
        rows = list(StagedFile.objects.select_for_update().filter(directory=str(directory)).order_by("file_name"))
        if libraries is not None:
            extra, gone = [str(Path(p).expanduser().resolve()) for p in libraries], []
        else:
            remembered = sorted({p for row in rows for p in (row.sources or {}).get(LIBRARY_PATHS, [])})
            extra = [p for p in remembered if Path(p).is_file()]
            gone = [p for p in remembered if p not in extra]
            report.notes += [f"library {p}: gone, no longer applied" for p in gone]
        in_folder = folder_libraries(directory)
        paths = in_folder + [Path(p) for p in extra if Path(p) not in in_folder]
        records, report.libraries, report.errors = read_libraries(paths)
        chunked = [r for r in rows if r.status == StagedFile.Status.CHUNKED]
        if paths and not report.errors:
            report.matching = match_records(
                records, {r.file_name: (r.sources or {}).get(CASCADE, r.metadata_map.get(DEFAULT, {})) for r in chunked})
        for row in chunked:
            if only is not None and row.file_name not in only:
                continue
            before = (json.dumps(row.metadata_map, sort_keys=True), json.dumps(row.sources or {}, sort_keys=True))
            sources = row.sources = dict(row.sources or {})
            if libraries is not None or gone:
                sources[LIBRARY_PATHS] = extra
            if report.matching is not None:
                matched = report.matching.files.get(row.file_name)
                sources[LIBRARY] = library_entry(*matched) if matched else None
            elif not paths:
                sources[LIBRARY] = None  # every library left the folder
            known = sources.get(GENERATED) is not None  # else every field would look edited
            generated = refresh_generated(row)
            changes = generated.changes
            if known:
                report.conflicts += [f"{row.file_name}: conflict: {c.line().replace(': ', ': edit ', 1)} "
                                     f"(the cascade or library changed; the change wins)" for c in generated.conflicts]
            if edited is not None and row.file_name in edited:
                entries = edited[row.file_name]
                base = sources.get(MAP_FILE)
                if base != entries:
                    # First import: only what differs from the staged map is an edit (keys
                    # the file does not name stay).
                    first = base is None
                    result = merge(row.metadata_map, row.metadata_map if first else base, entries)
                    if first:
                        result.entries.update({k: v for k, v in row.metadata_map.items() if k not in entries})
                    row.metadata_map = result.entries
                    changes += result.changes
                    report.conflicts += [f"{row.file_name}: conflict: {c.line().replace(': ', ': ', 1)} "
                                         f"(changed by the cascade or library, then in {EDITED_NAME}; the map file wins)"
                                         for c in result.conflicts]
                    sources[MAP_FILE] = entries
                    report.map_file_changed += bool(result.changes)
            if (json.dumps(row.metadata_map, sort_keys=True), json.dumps(sources, sort_keys=True)) != before:
                row.save(update_fields=["metadata_map", "sources", "updated_at"])
            if changes:
                report.changed[row.file_name] = changes
    if edited is not None:
        report.map_file_present = True
        report.unknown_keys = [key for key in edited if key not in {r.file_name for r in rows}]
    return report


def apply_sources(directory: Path, report, options, only: set[str] | None = None):
    """Libraries and the map file onto the folder's staged maps; what they gave goes
    into the report's notes, a refused library into its errors."""
    sources = apply_folder_sources(directory, [options.library] if options.library else None, only=only)
    report.notes += sources.lines()
    report.errors += [f"library refused: {error}" for error in sources.errors]
    return sources
