"""Answer quality on the documentation corpora: ``manage.py evaluate`` over bench/questions/.

The bench database (``klea_bench``, see bench/common.py) holds five domains: ``neuroml``,
``xarray`` and ``cooking`` (the shared documentation corpora), ``papers`` (the shared
corpus's scientific PDFs, scans OCRed by Tesseract as the product does), all configured by
docs/docs-domains.json, and ``klea-docs`` (this repository's docs/, the demo domain). ``--ingest`` creates or
refreshes them (incremental: unchanged files are skipped; a new chunk format or
``KLEA_CHUNK_MAX_TOKENS`` re-chunks and re-stores every file; ``--force`` redoes all). The run asks every question of bench/questions/*.json through
the full pipeline (extractive backend unless ``--backend``) and prints the evaluate
report: per corpus and overall, evidence in answer, file cited, evidence in references,
median answer length, routed right, off-topic refused, time to first token.

    python bench/answers.py --ingest          # once (about 3 min on 2 idle cores)
    python bench/answers.py                   # all sets but the papers sets
    python bench/answers.py --sets papers papers-2   # the PDF sets (after --ingest adds the domain)
    python bench/answers.py --sets xarray off-topic --json var/answers.json -v 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, setup_django  # noqa: E402

QUESTIONS = ROOT / "bench" / "questions"
# A set is named after its domain, or domain-N for a later set written apart (reported beside it).
# terse.json (pronoun and few-word questions over all four domains) is for bench/routing.py.
SETS = ("neuroml", "neuroml-2", "neuroml-3", "xarray", "xarray-2", "xarray-3", "cooking", "cooking-2", "cooking-3",
        "klea-docs", "klea-docs-2", "klea-docs-3", "papers", "papers-2", "off-topic", "off-topic-2",
        "neuroml-4", "xarray-4", "cooking-4", "klea-docs-4", "papers-3", "off-topic-3",
        "neuroml-5", "xarray-5", "cooking-5", "klea-docs-5", "papers-4", "off-topic-5", "off-topic-6", "shapes",
        "neuroml-6", "xarray-6", "cooking-6", "klea-docs-6", "neuroml-7", "xarray-7", "cooking-7",
        "neuroml-8", "xarray-8", "cooking-8")
# The fifth sets (and papers-4) were written without reading the answer code or the other
# sets: held out like the third sets, report their totals only, never tune on them.
# off-topic-6 (60 questions, written apart the same way) is the refusal's development set:
# near-misses beside each domain, general knowledge, terse and chit-chat; read and tune on it.
# Asked only when named (--sets papers): a bench database built before the papers domain
# (bench/answers.py --ingest adds it) would count its questions as misses of the other sets' totals.
# shapes.json: 35 questions over the four documentation domains, written apart (session 14) to
# check the "sign" and "version" question shapes (14 each) and 7 near-misses of them
# (chat/backends/extractive/shapes.py); asked when named, read and tuned on once.
# The sixth sets (90 questions, session 15) were written apart the same way, over less-read
# files (at most two questions a file; yes/no, why, comparisons, typos): a development set,
# read and tuned on, so that the fifth stay held out. The seventh (90, same session) likewise,
# over the three shared corpora, asked as first-time users would (yes/no, troubleshooting,
# comparisons, keyword queries). The eighth (75, same session, files drawn at random, written
# without reading the answer code) are held out like the fifth: totals only.
ON_REQUEST = ("papers", "papers-2", "papers-3", "papers-4", "shapes")
# domain -> folder of KLEA_CORPORA_DIR
CORPORA = {"neuroml": "docs/neuroml", "xarray": "docs/xarray", "cooking": "docs/based_cooking", "papers": "pdfs"}


def ingest_all(force: bool) -> None:
    from django.conf import settings
    from django.core.management import call_command

    from domains.config_io import load_domain_config
    from ingestion.runs.ingest import ingest

    load_domain_config(json.loads((ROOT / "docs" / "docs-domains.json").read_text()))
    for domain, folder in CORPORA.items():
        started = time.monotonic()
        report = ingest(Path(settings.KLEA_CORPORA_DIR) / folder, f"{domain}-docs", domain,
                        mirror=True, force=force)
        print(f"{domain}: {report.count('stored')} stored, {report.count('unchanged')} unchanged, "
              f"{report.count('skipped')} skipped, {report.count('failed')} failed, "
              f"{report.chunks} chunks written, {time.monotonic() - started:.0f} s", flush=True)
    call_command("demo")  # klea-docs: this repository's docs/


def per_set(report, sizes: dict[str, int]):
    """The report regrouped by question set (``sizes``: set name -> question count, in the
    order asked): a :class:`chat.scoring.run.Report` whose groups are the in-domain sets."""
    from chat.scoring.metrics import summarise
    from chat.scoring.run import Report

    regrouped = Report(report.scored, off_topic=report.off_topic, overall=report.overall)
    start = 0
    for name, size in sizes.items():
        scored = report.scored[start:start + size]
        start += size
        if scored and not scored[0].off_topic:
            regrouped.domains[name] = summarise(scored)
    return regrouped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ingest", action="store_true", help="Create or refresh the five domains, then stop.")
    parser.add_argument("--force", action="store_true", help="With --ingest: re-chunk and re-embed every file.")
    parser.add_argument("--sets", nargs="+", choices=SETS, default=[s for s in SETS if s not in ON_REQUEST],
                        help="Question sets to ask (papers sets and shapes only when named).")
    parser.add_argument("--backend", help="Override KLEA_LLM_BACKEND.")
    parser.add_argument("--json", metavar="FILE", help="Also write the full report (every question) here.")
    parser.add_argument("-v", "--verbosity", type=int, default=1, help="2: one line per question on stderr.")
    args = parser.parse_args()
    setup_django()
    if args.ingest:
        ingest_all(args.force)
        return
    from chat.scoring import evaluate, load_questions
    from domains.models import Domain

    loaded = {name: load_questions(QUESTIONS / f"{name}.json") for name in args.sets}
    questions = [q for name in args.sets for q in loaded[name]]
    domains = list(Domain.objects.filter(active=True))

    def progress(position, scored):
        if args.verbosity >= 2:
            print(f"{position}/{len(questions)} {scored.domain or 'off-topic'}: {scored.question!r}: "
                  f"{scored.outcome()}", file=sys.stderr, flush=True)

    print(f"command: {command_line()}")
    started = time.monotonic()
    report = evaluate(questions, domains, backend=args.backend, on_scored=progress)
    print("\n".join(report.lines()))
    by_set = per_set(report, {name: len(loaded[name]) for name in args.sets})
    if len(by_set.domains) > len(report.domains):
        print("per set:\n" + "\n".join(by_set.lines()[:len(by_set.domains) + 1]))
    print(f"{len(questions)} questions in {time.monotonic() - started:.0f} s")
    if args.json:
        data = report.as_dict()
        data["sets"] = {name: summary.as_dict() for name, summary in by_set.domains.items()}
        Path(args.json).write_text(json.dumps(data, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
