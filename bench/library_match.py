"""Matching a large reference-manager library to a folder (ingestion/metadata/matching.py,
``match_records``): a library of N records, every one with a ``file`` attachment, the
first M of them matching the M files of the folder, the others unmatched (they go through
the title rule and the duplicate check). No database, no network.

    nice -n 10 .venv/bin/python bench/library_match.py [N M ...]

Prints N, M, the files matched and the seconds; default sizes 2000 500, 20000 5000.
Then the parse of a Zotero-like CSL-JSON export of N items (``parse_library``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")

import django  # noqa: E402

django.setup()

from ingestion.metadata.matching import match_records  # noqa: E402
from ingestion.metadata.library import Record, parse_library  # noqa: E402


def run(n: int, m: int) -> None:
    records = [Record(f"k{i}", "lib.bib", i, {"title": f"Paper number {i}", "doi": f"10.1/{i}"},
                      [f"C:\\Zotero\\storage\\{i}\\paper-{i}.pdf"]) for i in range(n)]
    files = {f"sub/paper-{j}.pdf": {"title": f"A scanned report {j}"} for j in range(m)}
    start = time.perf_counter()
    matching = match_records(records, files)
    print(f"records {n:>6}  files {m:>5}  matched {len(matching.files):>5}  "
          f"{time.perf_counter() - start:7.2f} s")


def parse(n: int) -> None:
    items = [{"id": f"item-{i}", "type": "article-journal", "title": f"Paper {i}", "author": [
        {"family": "Doe", "given": "J"}], "issued": {"date-parts": [[2000 + i % 20]]}, "abstract": "x " * 200}
        for i in range(n)]
    raw = json.dumps(items, indent=2).encode()
    start = time.perf_counter()
    records = parse_library("library.json", raw)
    print(f"CSL-JSON items {n:>6}  {len(raw) / 1e6:5.1f} MB  records {len(records):>6}  "
          f"{time.perf_counter() - start:7.2f} s")


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [2000, 500, 20000, 5000]
    for n, m in zip(sizes[::2], sizes[1::2]):
        run(n, m)
    for n in sizes[::2]:
        parse(n)
