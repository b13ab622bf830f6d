"""Benchmark: the question pipeline on the extractive backend at 10k and 100k chunks.

Builds (once, then reuses) synthetic domains ``bench-10000`` / ``bench-100000`` in the
benchmark database (``klea_bench`` or KLEA_BENCH_DATABASE, see bench/common.py): paragraphs of the shared documentation
corpora, embedded once with the store model, repeated with small Gaussian noise on the
vectors (so HNSW and BM25 see distinct rows) and spread over documents of 10 chunks with
years 1990-2024. Then asks the documentation questions of tests/doc_questions.py through
the full pipeline (the same code as ``manage.py ask --timings``) and prints the median
and 90th percentile per node and of the time to the first answer token (the minimum is
the best guide on a shared machine: other processes only ever add time).

    python bench/pipeline.py                      # 10k and 100k chunks, 27 questions
    python bench/pipeline.py --sizes 10000 --questions 5
    python bench/pipeline.py --drop               # remove the benchmark domains
    python bench/pipeline.py --sizes 100000 --load-only   # build the domain, measure nothing
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import setup_django  # noqa: E402

setup_django()

from asgiref.sync import async_to_sync  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from chat.backends.extractive import ExtractiveBackend  # noqa: E402
from chat.pipeline import TurnRequest, ask  # noqa: E402
from domains import embeddings  # noqa: E402
from domains.models import Chunk, Document, Domain, Store  # noqa: E402
from tests.doc_questions import NEUROML_QUESTIONS, XARRAY_QUESTIONS  # noqa: E402

CHUNKS_PER_DOCUMENT = 10
NOISE = 0.05  # standard deviation per dimension before re-normalising (cosine to the original ~0.7)
MIN_PARAGRAPH, MAX_PARAGRAPH = 200, 1500
CACHE = ROOT / "var" / "bench"
INSERT_BATCH = 2000


def paragraphs() -> list[str]:
    """Paragraphs of the documentation corpora (markdown/rst), 200-1500 characters."""
    out = []
    for name in ("neuroml", "xarray"):
        for path in sorted(Path(settings.KLEA_CORPORA_DIR, "docs", name).rglob("*")):
            if path.suffix not in (".md", ".rst"):
                continue
            for block in path.read_text(errors="replace").split("\n\n"):
                text = " ".join(block.split())
                if MIN_PARAGRAPH <= len(text) <= MAX_PARAGRAPH and not text.startswith(("```", "|", "..")):
                    out.append(text)
    return list(dict.fromkeys(out))


def paragraph_vectors(texts: list[str]) -> np.ndarray:
    """Embeddings of ``texts`` (cached under var/bench by content hash)."""
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"paragraphs-{digest}.npy"
    if path.exists():
        return np.load(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    vectors = embeddings.embed_texts(texts)
    print(f"embedded {len(texts)} paragraphs in {time.perf_counter() - started:.0f} s", flush=True)
    np.save(path, vectors)
    return vectors


def build(size: int, texts: list[str], vectors: np.ndarray) -> Domain:
    """The domain ``bench-<size>`` with exactly ``size`` chunks (built when missing)."""
    name = f"bench-{size}"
    domain = Domain.objects.filter(name=name).first()
    if domain and Chunk.objects.filter(store__domain=domain).count() == size:
        return domain
    if domain:
        domain.delete()
    started = time.perf_counter()
    rng = np.random.default_rng(size)
    domain = Domain.objects.create(
        name=name, description="Synthetic benchmark domain: NeuroML and xarray documentation paragraphs."
    )
    store = Store.objects.create(name=name, domain=domain)
    for start in range(0, size, INSERT_BATCH):
        with transaction.atomic():
            count = min(INSERT_BATCH, size - start)
            documents = Document.objects.bulk_create(
                Document(store=store, file_name=f"doc-{(start + i) // CHUNKS_PER_DOCUMENT:06d}.md", status="stored",
                         metadata={"title": f"Benchmark document {(start + i) // CHUNKS_PER_DOCUMENT}"})
                for i in range(0, count, CHUNKS_PER_DOCUMENT)
            )
            rows = []
            for i in range(count):
                index = start + i
                source = index % len(texts)
                vector = vectors[source] + rng.normal(0, NOISE, vectors.shape[1]).astype(np.float32)
                year = int(1990 + index % 35)
                rows.append(Chunk(
                    store=store, document=documents[i // CHUNKS_PER_DOCUMENT], ordinal=i % CHUNKS_PER_DOCUMENT,
                    text=texts[source], headings=[f"Section {source}"], year=year,
                    metadata={"title": documents[i // CHUNKS_PER_DOCUMENT].metadata["title"], "year": year},
                    embedding=vector / np.linalg.norm(vector),
                ))
            Chunk.objects.bulk_create(rows)
        print(f"  {name}: {start + count}/{size} chunks", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE domains_chunk")
    print(f"built {name} in {time.perf_counter() - started:.0f} s", flush=True)
    return domain


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def measure(domain: Domain, questions: list[str]) -> dict[str, list[float]]:
    """Per node (and ttft/total): the milliseconds of every question."""
    allowed = [domain]
    async_to_sync(ask)(TurnRequest("warm up the models", domains=allowed), backend=ExtractiveBackend())
    figures: dict[str, list[float]] = {}
    for question in questions:
        result = async_to_sync(ask)(TurnRequest(question, domains=allowed), backend=ExtractiveBackend())
        done = result.done
        for node, ms in done.timings.items():
            figures.setdefault(node, []).append(ms)
        ttft = done.ttft_ms if done.ttft_ms is not None else float("nan")
        figures.setdefault("first token", []).append(ttft)
        # What the pipeline adds to retrieval (the retrieval engine is benchmarked on its own).
        figures.setdefault("first token - retrieve", []).append(ttft - done.timings.get("retrieve", 0.0))
        figures.setdefault("total", []).append(done.total_ms)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--questions", type=int, default=27, help="how many documentation questions (max 27)")
    parser.add_argument("--drop", action="store_true", help="delete the benchmark domains and exit")
    parser.add_argument("--load-only", action="store_true", help="build the missing domains and exit")
    args = parser.parse_args()
    database = connection.settings_dict["NAME"]
    if database.startswith("test_"):
        sys.exit(f"refusing to run in the test database {database!r}")
    if args.drop:
        deleted = Domain.objects.filter(name__startswith="bench-").delete()
        print(f"deleted {deleted[0]} rows")
        return
    questions = [q for q, _ in NEUROML_QUESTIONS + XARRAY_QUESTIONS][: args.questions]
    texts = paragraphs()
    vectors = paragraph_vectors(texts)
    print(f"command: python bench/pipeline.py --sizes {' '.join(map(str, args.sizes))} --questions {len(questions)}")
    print(f"database {database}; {len(texts)} distinct paragraphs; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}")
    for size in args.sizes:
        domain = build(size, texts, vectors)
        if args.load_only:
            continue
        figures = measure(domain, questions)
        print(f"\n{domain.name}: {len(questions)} questions, extractive backend, milliseconds")
        print(f"  {'node':<23}{'min':>9}{'median':>9}{'p90':>9}")
        for node, values in figures.items():
            print(f"  {node:<23}{min(values):>9.1f}{statistics.median(values):>9.1f}{percentile(values, 90):>9.1f}")
        print(f"  load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
