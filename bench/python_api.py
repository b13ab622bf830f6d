"""The Python API's retrieval strategies on the documentation questions.

    python bench/python_api.py

Ingests the NeuroML and xarray documentation (KLEA_CORPORA_DIR) into the benchmark
database (``klea_bench``, bench/common.py) with ``Knowledge.add`` (unchanged files are
skipped on reruns), then asks tests/doc_questions.py through ``Knowledge.search`` with
each RetrievalStrategy and prints hit@1, hit@5 and MRR@5 of the file that answers each
question, and the median search latency. A second set joins two questions of the same
domain into one ("Q1, and Q2") and counts how many of the two answering files are in
the top 5 (top_k = 5).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import command_line, setup_django  # noqa: E402

setup_django()

from django.conf import settings  # noqa: E402

from chat.rag import Knowledge, RetrievalStrategy  # noqa: E402
from tests.doc_questions import NEUROML_QUESTIONS, XARRAY_QUESTIONS  # noqa: E402

SETS = {"neuroml": NEUROML_QUESTIONS, "xarray": XARRAY_QUESTIONS}
TOP_K = 5


def knowledge_for(name: str) -> Knowledge:
    knowledge = Knowledge(store=f"api-{name}", create=True, description=f"{name} documentation")
    started = time.monotonic()
    report = knowledge.add(Path(settings.KLEA_CORPORA_DIR) / "docs" / name)
    print(f"{name}: {len(report.outcomes)} files ({report.count('stored')} stored, "
          f"{report.count('unchanged')} unchanged) in {time.monotonic() - started:.0f} s", flush=True)
    return knowledge


def rank_of(expected: str, files: list[str]) -> int | None:
    return files.index(expected) + 1 if expected in files else None


def main() -> None:
    stores = {name: knowledge_for(name) for name in SETS}
    print(f"command: {command_line()}")
    print(f"| strategy | questions | hit@1 | hit@{TOP_K} | MRR@{TOP_K} | two-part: files in top {TOP_K} | median ms |")
    print("|---|---|---|---|---|---|---|")
    for strategy in RetrievalStrategy:
        ranks, both, latencies = [], [], []
        for name, questions in SETS.items():
            for question, expected in questions:
                started = time.perf_counter()
                hits = stores[name].search(question, top_k=TOP_K, strategy=strategy)
                latencies.append((time.perf_counter() - started) * 1000)
                assert not hits.retrieval_failed, hits.error
                ranks.append(rank_of(expected, [h.filename for h in hits]))
            pairs = list(zip(questions, questions[1:] + questions[:1]))
            for (first, file1), (second, file2) in pairs:
                joined = f"{first.rstrip('?')}, and {second[0].lower()}{second[1:]}"
                files = [h.filename for h in stores[name].search(joined, top_k=TOP_K, strategy=strategy)]
                both.append((file1 in files) + (file2 in files))
        n = len(ranks)
        hit1 = sum(r == 1 for r in ranks)
        hitk = sum(r is not None for r in ranks)
        mrr = sum(1 / r for r in ranks if r) / n
        print(f"| {strategy.value} | {n} | {hit1}/{n} | {hitk}/{n} | {mrr:.3f} | {sum(both)}/{2 * len(both)} "
              f"| {statistics.median(latencies):.0f} |")


if __name__ == "__main__":
    main()
