"""Answer quality of the extractive pipeline on the documentation corpora.

Needs the ``neuroml`` and ``xarray`` domains ingested in the development database (see
docs/documentation-corpora.md). Asks tests/doc_questions.py through the full pipeline
and prints, per domain, how many questions were routed right and cited the file that
answers them, plus the classifier's score ranges (in-domain minimum, off-topic maximum)
the time to the first answer token, and how often a question forced into the other
domain gets "No source in <domain> answers this question." instead of unrelated text.

    python bench/docs_qa.py
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")

import django  # noqa: E402

django.setup()

from asgiref.sync import async_to_sync  # noqa: E402

from chat.backends.extractive import ExtractiveBackend, routing  # noqa: E402
from chat.pipeline import TurnRequest, ask  # noqa: E402
from domains import embeddings  # noqa: E402
from domains.models import Domain  # noqa: E402
from tests.doc_questions import NEUROML_QUESTIONS, OFF_TOPIC_QUESTIONS, XARRAY_QUESTIONS  # noqa: E402


def main() -> None:
    allowed = list(Domain.objects.filter(name__in=["neuroml", "xarray"]).prefetch_related("stores"))
    if len(allowed) != 2:
        sys.exit("ingest the neuroml and xarray domains first (docs/documentation-corpora.md)")
    print("command: python bench/docs_qa.py")
    ttft, in_scores, off_scores = [], [], []
    for domain, questions in (("neuroml", NEUROML_QUESTIONS), ("xarray", XARRAY_QUESTIONS)):
        routed = cited = 0
        for question, expected in questions:
            result = async_to_sync(ask)(TurnRequest(question, domains=allowed), backend=ExtractiveBackend())
            files = [r["file_name"] for r in result.references]
            routed += result.answer.domains == [domain]
            cited += expected in files
            ttft.append(result.done.ttft_ms)
            if expected not in files:
                print(f"  miss: {question!r} expected {expected}, cited {files}")
            scores = routing.score_domains(embeddings.embed_query(question), allowed, question)
            in_scores.append(next(s.score for s in scores if s.domain.name == domain))
        print(f"{domain}: routed {routed}/{len(questions)}, cites the answering file {cited}/{len(questions)}")
    refused = 0
    for question in OFF_TOPIC_QUESTIONS:
        result = async_to_sync(ask)(TurnRequest(question, domains=allowed), backend=ExtractiveBackend())
        refused += result.answer.route == "refused"
        off_scores.append(routing.score_domains(embeddings.embed_query(question), allowed, question)[0].score)
    print(f"off-topic: refused {refused}/{len(OFF_TOPIC_QUESTIONS)}")
    # Each question forced into the other domain (the user's domain pick): its sources do
    # not answer it, and the answer should say so rather than quote them.
    declined = 0
    for other, questions in (("xarray", NEUROML_QUESTIONS), ("neuroml", XARRAY_QUESTIONS)):
        for question, _ in questions:
            request = TurnRequest(question, domains=allowed, pick=[other])
            result = async_to_sync(ask)(request, backend=ExtractiveBackend())
            declined += result.answer.text.startswith("No source in")
    total = len(NEUROML_QUESTIONS) + len(XARRAY_QUESTIONS)
    print(f"asked in the other domain: says no source answers {declined}/{total}")
    print(f"classifier: in-domain score min {min(in_scores):.3f}, off-topic max {max(off_scores):.3f} "
          f"(threshold {routing.CLASSIFY_THRESHOLD})")
    print(f"time to first token: median {statistics.median(ttft):.0f} ms, max {max(ttft):.0f} ms")


if __name__ == "__main__":
    main()
