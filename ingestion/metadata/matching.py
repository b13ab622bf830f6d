"""Which library record belongs to which file of a folder (docs/bibliography.md): by the
record's attachment paths, then by the DOI the cascade found in the file, then by the
normalised title; records of a work already matched are reported as duplicates.
:mod:`ingestion.metadata.layers` applies the matches.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass, field

from .biblio.doi import doi_key
from .library import Record

TITLE_THRESHOLD = 0.9  # difflib ratio of normalised titles for a title match
RULES = ("file", "doi", "title")


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
