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

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from ingestion.models import StagedFile
from ingestion.sources import OWN_FILES, folder_paths, is_library, resolve_directory

from .biblio.doi import doi_url
from .library import LibraryError, Record, read_library
from .map import DEFAULT, EDITED_NAME, read_template, template_for
from .matching import RULES, Matching, match_records

CASCADE, LIBRARY, GENERATED, MAP_FILE, STORED, LIBRARY_PATHS = (
    "cascade", "library", "generated", "map_file", "stored", "library_paths")
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
    other JSON files are not libraries). Hidden and ignored paths (ingestion.sources.folder_paths)
    and our own map files skipped."""
    found = []
    for path in sorted(folder_paths(directory)):
        if not path.is_file() or path.name in OWN_FILES:
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
