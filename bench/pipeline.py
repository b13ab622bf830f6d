"""Benchmark: the question pipeline on the extractive backend at 10k and 100k chunks.

Builds (once, then reuses) synthetic domains ``bench-10000`` / ``bench-100000`` in the
benchmark database (``klea_bench`` or KLEA_BENCH_DATABASE, see bench/common.py): paragraphs of the shared documentation
corpora, embedded once with the store model, repeated with small Gaussian noise on the
vectors (so HNSW and BM25 see distinct rows) and spread over documents of 10 chunks with
years 1990-2024. Then asks the documentation questions of tests/doc_questions.py through
the full pipeline (the same code as ``manage.py ask --timings``) and prints per node and
for the time to the first answer token the wall milliseconds (minimum, median, 90th
percentile; the minimum is the best guide on a shared machine: other processes only ever
add time), the median CPU milliseconds of this process (all its threads) and the mean CPU
milliseconds of its PostgreSQL backend (from /proc, in 10 ms ticks, hence the mean), and
the load average before and after.

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
from chat.pipeline.events import Stage  # noqa: E402
from chat.pipeline.turn import Turn, TurnResult  # noqa: E402
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


def build(size: int, texts: list[str]) -> Domain:
    """The domain ``bench-<size>`` with exactly ``size`` chunks (built when missing; the
    paragraphs are embedded only then)."""
    name = f"bench-{size}"
    domain = Domain.objects.filter(name=name).first()
    if domain and Chunk.objects.filter(store__domain=domain).count() == size:
        return domain
    if domain:
        domain.delete()
    vectors = paragraph_vectors(texts)
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


def backend_pid() -> int:
    """The process id of this thread's PostgreSQL connection (the pipeline's database
    work runs on it: thread-sensitive sync_to_async under async_to_sync)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def backend_cpu_ms(pid: int) -> float:
    """CPU milliseconds so far of the PostgreSQL backend ``pid`` (user + system,
    /proc/<pid>/stat; NaN when the server runs on another machine)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


class MeteredTurn(Turn):
    """A turn that also reads its database backend's CPU time as each node starts and
    ends."""

    pg_pid: int
    pg_ms: dict[str, float]

    async def _emit(self, event) -> None:
        if isinstance(event, Stage):
            now = backend_cpu_ms(self.pg_pid)
            if event.phase == "start":
                self._pg_started = now
            else:
                self.pg_ms[event.node] = self.pg_ms.get(event.node, 0.0) + now - self._pg_started
        await super()._emit(event)


async def metered(question: str, allowed: list[Domain], pid: int) -> tuple[TurnResult, dict[str, float]]:
    turn = MeteredTurn(TurnRequest(question, domains=allowed), backend=ExtractiveBackend())
    turn.pg_pid, turn.pg_ms = pid, {}
    result = TurnResult()
    turn.start()
    async for event in turn:
        result.events.append(event)
    return result, turn.pg_ms


def measure(domain: Domain, questions: list[str]) -> dict[str, dict[str, list[float]]]:
    """Per node (and first token/total): ``{"wall": [ms per question], "cpu": [...],
    "pg": [...]}`` (wall time, this process's CPU, the database backend's CPU)."""
    allowed = [domain]
    async_to_sync(ask)(TurnRequest("warm up the models", domains=allowed), backend=ExtractiveBackend())
    figures: dict[str, dict[str, list[float]]] = {}

    def add(node: str, wall: float, cpu: float = float("nan"), pg: float = float("nan")) -> None:
        row = figures.setdefault(node, {"wall": [], "cpu": [], "pg": []})
        row["wall"].append(wall)
        row["cpu"].append(cpu)
        row["pg"].append(pg)

    for question in questions:
        pid = backend_pid()
        cpu_started, pg_started = time.process_time(), backend_cpu_ms(pid)
        result, pg_ms = async_to_sync(metered)(question, allowed, pid)
        cpu_turn, pg_turn = (time.process_time() - cpu_started) * 1000, backend_cpu_ms(pid) - pg_started
        done = result.done
        for node, ms in done.timings.items():
            add(node, ms, done.cpu_ms.get(node, float("nan")), pg_ms.get(node, float("nan")))
        ttft = done.ttft_ms if done.ttft_ms is not None else float("nan")
        add("first token", ttft)
        # What the pipeline adds to retrieval (the retrieval engine is benchmarked on its own).
        add("first token - retrieve", ttft - done.timings.get("retrieve", 0.0))
        add("total", done.total_ms, cpu_turn, pg_turn)
    return figures


def fmt(values: list[float], how) -> str:
    values = [v for v in values if v == v]  # NaN: not measured
    return f"{how(values):>9.1f}" if values else f"{'-':>9}"


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
    print(f"command: python bench/pipeline.py --sizes {' '.join(map(str, args.sizes))} --questions {len(questions)}")
    print(f"database {database}; {len(texts)} distinct paragraphs; {os.cpu_count()} CPUs; "
          f"load average before {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for size in args.sizes:
        domain = build(size, texts)
        if args.load_only:
            continue
        figures = measure(domain, questions)
        print(f"\n{domain.name}: {len(questions)} questions, extractive backend, milliseconds")
        print(f"  {'node':<23}{'wall min':>9}{'median':>9}{'p90':>9}{'cpu med':>9}{'pg mean':>9}")
        for node, row in figures.items():
            wall = row["wall"]
            print(f"  {node:<23}{min(wall):>9.1f}{statistics.median(wall):>9.1f}{percentile(wall, 90):>9.1f}"
                  f"{fmt(row['cpu'], statistics.median)}{fmt(row['pg'], statistics.mean)}")
        print(f"  (total: cpu and pg of the whole turn)\n  load average after {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
