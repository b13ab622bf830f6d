"""Retrieval alone on the answer bench: is the answering file (and the evidence) in the top k?

Usage: ``python bench/file_recall.py [--sets neuroml klea-docs] [--json FILE]`` against the
answer bench database (``KLEA_BENCH_DATABASE``, ``python bench/answers.py --ingest``).

For every in-domain question of bench/questions/ (``{question, domain, file, evidence}``):
``retrieve(question, [its domain])`` with the domain's ``default_k`` and the reference
budget, as the chat pipeline does with one routed domain. Reported per set: the questions
whose file has a chunk in the top k ("file in k"), whose evidence is in a top-k chunk
("evidence in k": at least 80 % of its words, as ``manage.py evaluate`` counts), and per
miss the fused rank of the file's first chunk and of the evidence chunk (to depth 50).
No answer is composed: a miss here is a retrieval miss, a file cited by ``answers.py``
but not in k cannot happen, and a file in k but not cited is a passage-choice miss.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, setup_django  # noqa: E402

SETS = ("neuroml", "xarray", "cooking", "klea-docs", "neuroml-2", "xarray-2", "cooking-2", "klea-docs-2")
# Written apart (bench/questions, 2026-12-07): asked when named.
FOURTH = ("neuroml-4", "xarray-4", "cooking-4", "klea-docs-4")
# Written apart over less-read files (2026-12-08; the seventh as first-time users ask), development sets: asked when named.
SIXTH_SEVENTH = ("neuroml-6", "xarray-6", "cooking-6", "klea-docs-6", "neuroml-7", "xarray-7", "cooking-7")
DEPTH = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", choices=SETS + FOURTH + SIXTH_SEVENTH, default=list(SETS),
                        help="Question sets (domain-N: a set written apart).")
    parser.add_argument("--json", metavar="FILE", help="Also write one row per question here.")
    args = parser.parse_args()
    setup_django()
    from chat.scoring.metrics import EVIDENCE_COVERAGE, coverage
    from domains.models import Domain
    from domains.retrieval import retrieve

    def has_evidence(question: dict, chunk) -> bool:
        return chunk.file_name == question["file"] and coverage(question["evidence"], chunk.text) >= EVIDENCE_COVERAGE

    print(f"command: {command_line()}")
    rows = []
    for name in args.sets:
        counts = [0, 0, 0]
        for question in json.loads((ROOT / "bench" / "questions" / f"{name}.json").read_text()):
            domain = Domain.objects.get(name=question["domain"])
            top = retrieve(question["question"], [domain]).results
            deep = retrieve(question["question"], [domain], k=DEPTH, max_chars=10**9).results
            row = {
                "set": name, "question": question["question"], "file": question["file"],
                "top_files": [c.file_name for c in top],
                "file_in_k": any(c.file_name == question["file"] for c in top),
                "evidence_in_k": any(has_evidence(question, c) for c in top),
                "file_rank": next((i for i, c in enumerate(deep, 1) if c.file_name == question["file"]), None),
                "evidence_rank": next((i for i, c in enumerate(deep, 1) if has_evidence(question, c)), None),
            }
            rows.append(row)
            counts[0] += 1
            counts[1] += row["file_in_k"]
            counts[2] += row["evidence_in_k"]
            if not (row["file_in_k"] and row["evidence_in_k"]):
                print(f"  {name}: file @{row['file_rank']} evidence @{row['evidence_rank']} "
                      f"{question['question']!r} -> {question['file']}; top k: {', '.join(row['top_files'])}")
        print(f"{name}: {counts[0]} questions, file in k {counts[1]}, evidence in k {counts[2]}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
