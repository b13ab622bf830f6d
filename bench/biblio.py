"""Bibliographic cascade against hand-checked ground truth (issue #5).

    .venv/bin/python bench/biblio.py [--corpus DIR]

Corpus: ``<KLEA_CORPORA_DIR>/pdfs`` (22 PDFs + ground_truth.json). Runs in a throwaway
database (``<test database>_bench_biblio``), created and dropped here.

1. Offline tiers (network off): per file and per field.
   - DOI: exact match with ``expected_doi_from_first_page`` where one is printed;
     "no DOI claimed" where none is printed.
   - Title: equal after NFKC, case folding, quotes/dashes unified, white space collapsed.
   - Year: equal (``null`` = none printed: correct when none is claimed).
   - Authors: precision/recall/F1 per file; two names match when surname and first
     initial agree (accents, case and punctuation ignored); no names = F1 0.
   Targets: DOI 100 % of printed DOIs and no wrong DOI elsewhere, title >= 85 %,
   year >= 90 %, author F1 >= 0.85, on the files with a text layer (the scans without
   one need OCR first; their figures are shown apart).
2. The same files with local fake Crossref/OpenAlex/Semantic Scholar servers (real HTTP
   on 127.0.0.1) serving the ground-truth records: every file whose DOI was found must
   come out ``_metadata_complete`` with the ground-truth title, authors, year and DOI;
   then a second pass must send no request (the cache).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import unicodedata
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from ingestion.metadata.biblio import doi_key, extract_bibliography  # noqa: E402
from ingestion.metadata.biblio.resolver import default_resolver  # noqa: E402
from bench.fake_doi_services import FakeDoiServices  # noqa: E402

QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


def norm_title(text: str | None) -> str:
    text = unicodedata.normalize("NFKC", text or "").translate(QUOTES).casefold()
    return " ".join(text.split()).strip(" .")


def name_key(name: str) -> tuple[str, str]:
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    tokens = [t for t in (re.sub(r"[^a-z-]", "", w) for w in folded.split()) if t]
    while tokens and tokens[-1] in ("et", "al"):
        tokens.pop()
    return (tokens[-1], tokens[0][0]) if tokens else ("", "")


def author_scores(found: list[str], truth: list[str]) -> tuple[float, float, float]:
    if not found or not truth:
        return 0.0, 0.0, 0.0
    matched = sum((Counter(map(name_key, found)) & Counter(map(name_key, truth))).values())
    precision, recall = matched / len(found), matched / len(truth)
    return precision, recall, (2 * precision * recall / (precision + recall) if matched else 0.0)


def offline(pdfs: Path, truth: list[dict]) -> list[dict]:
    rows = []
    for gt in truth:
        start = time.perf_counter()
        out = extract_bibliography(pdfs / gt["file"], network=False)
        ms = 1000 * (time.perf_counter() - start)
        expected = gt["expected_doi_from_first_page"]
        precision, recall, f1 = author_scores(out.get("authors", []), gt["authors"])
        rows.append({
            "file": gt["file"], "text": gt["has_text_layer"], "ms": ms, "out": out,
            "doi_ok": out.get("doi") == expected, "doi_printed": expected is not None,
            "title_ok": norm_title(out.get("title")) == norm_title(gt["title"]),
            "year_ok": out.get("year") == gt["year"], "p": precision, "r": recall, "f1": f1,
        })
    return rows


def summarise(rows: list[dict], label: str) -> dict:
    n = len(rows)
    printed = [r for r in rows if r["doi_printed"]]
    others = [r for r in rows if not r["doi_printed"]]
    figures = {
        "files": n,
        "doi_printed": (sum(r["doi_ok"] for r in printed), len(printed)),
        "doi_none_claimed": (sum(r["doi_ok"] for r in others), len(others)),
        "title": sum(r["title_ok"] for r in rows) / n,
        "year": sum(r["year_ok"] for r in rows) / n,
        "author_p": sum(r["p"] for r in rows) / n,
        "author_r": sum(r["r"] for r in rows) / n,
        "author_f1": sum(r["f1"] for r in rows) / n,
    }
    print(f"{label}: {n} files | DOI exact {figures['doi_printed'][0]}/{figures['doi_printed'][1]} printed, "
          f"no DOI claimed {figures['doi_none_claimed'][0]}/{figures['doi_none_claimed'][1]} others | "
          f"title {figures['title']:.1%} | year {figures['year']:.1%} | authors P {figures['author_p']:.3f} "
          f"R {figures['author_r']:.3f} F1 {figures['author_f1']:.3f}")
    return figures


def with_services(pdfs: Path, truth: list[dict]) -> bool:
    records = {gt["doi"]: {"title": gt["title"], "authors": gt["authors"], "year": gt["year"]}
               for gt in truth if gt["doi"]}
    fakes = FakeDoiServices(records).start()
    for name, value in fakes.settings().items():
        setattr(settings, name, value)
    settings.KLEA_DOI_TIMEOUT, settings.KLEA_DOI_RETRIES, settings.KLEA_DOI_BACKOFF = 5.0, 0, 0.0
    default_resolver.reset()
    ok = True
    try:
        print("\n| file | DOI | complete | title | authors | year | sources |")
        print("|---|---|---|---|---|---|---|")
        found = good = 0
        for gt in truth:
            out = extract_bibliography(pdfs / gt["file"], network=True)
            if not out.get("doi"):
                continue
            found += 1
            checks = (out["_metadata_complete"], out.get("title") == gt["title"],
                      out.get("authors") == gt["authors"], out.get("year") == gt["year"])
            right_doi = gt["doi"] is not None and doi_key(out["doi"]) == doi_key(gt["doi"])
            good += all(checks) and right_doi
            marks = ["yes" if c else "NO" for c in (right_doi, *checks)]
            print(f"| {gt['file']} | " + " | ".join(marks) + f" | {', '.join(out['_sources'])} |")
        asked = Counter(fakes.services_asked())
        print(f"\nwith DOI services: {good}/{found} files with a DOI complete and correct; "
              f"{len(fakes.seen)} requests (" + ", ".join(f"{k} {v}" for k, v in sorted(asked.items())) + ")")
        before = len(fakes.seen)
        for gt in truth:
            extract_bibliography(pdfs / gt["file"], network=True)
        print(f"second pass: {len(fakes.seen) - before} requests (cache)")
        ok = good == found and len(fakes.seen) == before
    finally:
        fakes.stop()
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path(settings.KLEA_CORPORA_DIR) / "pdfs")
    args = parser.parse_args()
    truth = json.loads((args.corpus / "ground_truth.json").read_text(encoding="utf-8"))["documents"]
    truth.sort(key=lambda d: d["file"])
    print("command: .venv/bin/python bench/biblio.py" + (f" --corpus {args.corpus}" if "--corpus" in sys.argv else ""))
    print(f"corpus: {args.corpus} ({len(truth)} files)\n")
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        rows = offline(args.corpus, truth)
        print("| file | text layer | DOI | title | year | authors P/R/F1 | ms | sources |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            doi = ("exact" if r["doi_ok"] else "WRONG") if r["doi_printed"] else ("none claimed" if r["doi_ok"] else "WRONG")
            print(f"| {r['file']} | {'yes' if r['text'] else 'no'} | {doi} | {'ok' if r['title_ok'] else 'MISS'} | "
                  f"{'ok' if r['year_ok'] else 'MISS'} | {r['p']:.2f}/{r['r']:.2f}/{r['f1']:.2f} | {r['ms']:.0f} | "
                  f"{', '.join(r['out']['_sources'])} |")
        print()
        text_rows = [r for r in rows if r["text"]]
        figures = summarise(text_rows, "offline, files with a text layer")
        summarise(rows, "offline, all files")
        print(f"median time per file: {sorted(r['ms'] for r in rows)[len(rows) // 2]:.0f} ms")
        targets = (figures["doi_printed"][0] == figures["doi_printed"][1]
                   and figures["doi_none_claimed"][0] == figures["doi_none_claimed"][1]
                   and figures["title"] >= 0.85 and figures["year"] >= 0.90 and figures["author_f1"] >= 0.85)
        print(f"targets (text-layer files): {'met' if targets else 'NOT met'}")
        services_ok = with_services(args.corpus, truth)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    return 0 if targets and services_ok else 1


if __name__ == "__main__":
    sys.exit(main())
