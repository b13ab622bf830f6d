"""Ingestion and embedding benchmark; prints its figures and the command that made them.

    python bench/ingest.py [--corpora neuroml,xarray,based_cooking,pdfs] [--scifact-docs N]
                           [--speed-docs 1000] [--skip-corpora] [--skip-embedding]

Per corpus (``stores chunk`` then ``stores store --force`` into bench-* stores of the
configured database): files/s, pages/s, chunks/s of each step, embedding chunks/s, and
peak RSS of this process and of the conversion process. Embeddings: the plain
sentence-transformers/torch baseline against the int8 ONNX backend on SciFact
documents (about 230 tokens each), interleaved twice in the same run, per wall second
and per CPU second, with the minimum and mean cosine of every vector to its plain
twin; then SciFact nDCG@10 (BEIR test qrels, dense retrieval, exact cosine) for both.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402

from domains import embeddings  # noqa: E402
from domains.models import Domain  # noqa: E402
from ingestion.chunk.step import chunk_directory, shared_worker  # noqa: E402
from ingestion.store.step import store_directory  # noqa: E402

CORPORA = {"neuroml": "docs/neuroml", "xarray": "docs/xarray", "based_cooking": "docs/based_cooking", "pdfs": "pdfs"}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_corpus(name: str, relative: str) -> dict:
    folder = Path(settings.KLEA_CORPORA_DIR) / relative
    Domain.objects.get_or_create(name=f"bench-{name}", defaults={"description": f"benchmark corpus {name}"})
    chunked = chunk_directory(folder, force=True)
    started = time.perf_counter()
    stored = store_directory(folder, f"bench-{name}", f"bench-{name}", force=True)
    store_seconds = time.perf_counter() - started
    files = sum(1 for o in chunked.outcomes if o.status not in ("pruned", "unsupported"))
    return {
        "corpus": name, "files": files, "pages": chunked.pages, "chunks": chunked.chunks,
        "chunk_s": chunked.seconds, "store_s": store_seconds,
        "files_per_s": files / chunked.seconds, "pages_per_s": chunked.pages / chunked.seconds,
        "chunk_chunks_per_s": chunked.chunks / chunked.seconds,
        "embed_chunks_per_s": stored.chunks / store_seconds if stored.chunks else 0.0,
        "end_to_end_chunks_per_s": stored.chunks / (chunked.seconds + store_seconds) if stored.chunks else 0.0,
        "stored": stored.count("stored"), "failed": len(stored.failed), "needs_ocr": stored.count("needs_ocr"),
    }


def _scifact():
    root = Path(settings.KLEA_CORPORA_DIR) / "beir_scifact"
    docs = [json.loads(line) for line in (root / "corpus.jsonl").open(encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").open(encoding="utf-8"))}
    qrels: dict[str, dict[str, int]] = {}
    for line in (root / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query, doc, score = line.split("\t")
        qrels.setdefault(query, {})[doc] = int(score)
    return docs, queries, qrels


def _timed(function, texts):
    cpu, wall = time.process_time(), time.perf_counter()
    vectors = function(texts)
    return vectors, time.perf_counter() - wall, time.process_time() - cpu


def ndcg_at_10(doc_ids: list[str], doc_vectors: np.ndarray, query_vectors: dict[str, np.ndarray], qrels) -> float:
    """Mean nDCG@10 over the qrels queries; exact cosine (vectors are L2-normalised)."""
    scores = []
    for query, relevant in qrels.items():
        sims = doc_vectors @ query_vectors[query]
        top = np.argsort(-sims)[:10]
        dcg = sum(relevant.get(doc_ids[i], 0) / math.log2(rank + 2) for rank, i in enumerate(top))
        ideal = sum(r / math.log2(rank + 2) for rank, r in enumerate(sorted(relevant.values(), reverse=True)[:10]))
        scores.append(dcg / ideal if ideal else 0.0)
    return float(np.mean(scores))


def bench_embeddings(n_docs: int, speed_docs: int) -> dict:
    docs, queries, qrels = _scifact()
    docs = docs[:n_docs] if n_docs else docs
    texts = [f"{d['title']}\n{d['text']}" for d in docs]
    sample = texts[:speed_docs]
    tokens = np.mean([min(embeddings.count_tokens(t) + 2, 256) for t in sample])
    embeddings.embed_texts_torch(texts[:8])  # load both models before timing
    embeddings.embed_texts(texts[:8])
    runs: dict[str, list] = {"torch": [], "int8": []}
    functions = {"torch": embeddings.embed_texts_torch, "int8": embeddings.embed_texts}
    for _ in range(2):  # interleaved on the same sample, so machine load affects both alike
        for name, function in functions.items():
            _, wall, cpu = _timed(function, sample)
            runs[name].append((len(sample) / wall, len(sample) / cpu))
    vectors = {name: function(texts) for name, function in functions.items()}  # every document, for nDCG
    cosines = (vectors["torch"] * vectors["int8"]).sum(axis=1)
    query_ids = sorted(qrels)
    fp32_queries = dict(zip(query_ids, embeddings.embed_texts_torch([queries[q] for q in query_ids])))
    int8_queries = dict(zip(query_ids, embeddings.embed_texts([queries[q] for q in query_ids])))
    query_cosines = np.array([fp32_queries[q] @ int8_queries[q] for q in query_ids])
    doc_ids = [d["_id"] for d in docs]
    return {
        "docs": len(texts), "speed_docs": len(sample), "mean_tokens": float(tokens),
        "torch": runs["torch"], "int8": runs["int8"],
        "cos_min": float(cosines.min()), "cos_mean": float(cosines.mean()),
        "query_cos_min": float(query_cosines.min()),
        "ndcg_torch": ndcg_at_10(doc_ids, vectors["torch"], fp32_queries, qrels) if not n_docs else None,
        "ndcg_int8": ndcg_at_10(doc_ids, vectors["int8"], fp32_queries, qrels) if not n_docs else None,
        "ndcg_int8_int8": ndcg_at_10(doc_ids, vectors["int8"], int8_queries, qrels) if not n_docs else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default=",".join(CORPORA), help="Comma-separated corpus names.")
    parser.add_argument("--scifact-docs", type=int, default=0, help="Embed only the first N SciFact docs (0: all, with nDCG).")
    parser.add_argument("--speed-docs", type=int, default=1000, help="SciFact docs in each timed run.")
    parser.add_argument("--skip-corpora", action="store_true")
    parser.add_argument("--skip-embedding", action="store_true")
    args = parser.parse_args()
    print("command: python bench/ingest.py " + " ".join(sys.argv[1:]))
    print(f"machine: {os.cpu_count()} cores; backend {embeddings.backend()}; PDF pipeline {settings.KLEA_PDF_PIPELINE}")
    if not args.skip_corpora:
        print("\n| corpus | files | pages | chunks | chunk s | files/s | pages/s | chunks/s (chunk) | embed chunks/s (store) | end-to-end chunks/s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name in args.corpora.split(","):
            row = bench_corpus(name, CORPORA[name])
            print(f"| {row['corpus']} | {row['files']} | {row['pages'] or '-'} | {row['chunks']} | {row['chunk_s']:.1f} | "
                  f"{row['files_per_s']:.2f} | {row['pages_per_s']:.1f} | {row['chunk_chunks_per_s']:.1f} | "
                  f"{row['embed_chunks_per_s']:.1f} | {row['end_to_end_chunks_per_s']:.1f} |", flush=True)
        print(f"\npeak RSS: this process {peak_rss_mb():.0f} MB; conversion process {shared_worker().peak_rss_mb:.0f} MB")
    if not args.skip_embedding:
        e = bench_embeddings(args.scifact_docs, args.speed_docs)
        print(f"\nembedding speed: {e['speed_docs']} SciFact docs per run, mean {e['mean_tokens']:.0f} tokens "
              f"(with [CLS]/[SEP], cut at 256); quality over all {e['docs']} docs")
        print("| backend | run | chunks/s (wall) | chunks per CPU-second |")
        print("|---|---|---|---|")
        for name in ("torch", "int8"):
            for i, (wall, cpu) in enumerate(e[name], start=1):
                print(f"| {name} | {i} | {wall:.1f} | {cpu:.1f} |")
        speed_wall = np.mean([w for w, _ in e["int8"]]) / np.mean([w for w, _ in e["torch"]])
        speed_cpu = np.mean([c for _, c in e["int8"]]) / np.mean([c for _, c in e["torch"]])
        print(f"speed-up int8/torch: {speed_wall:.2f}x wall, {speed_cpu:.2f}x per CPU-second")
        print(f"cosine int8 vs torch, documents: min {e['cos_min']:.4f}, mean {e['cos_mean']:.4f}; "
              f"queries: min {e['query_cos_min']:.4f}")
        if e["ndcg_torch"] is not None:
            print(f"SciFact nDCG@10 (test, exact cosine): torch {e['ndcg_torch']:.4f}; int8 passages + fp32 queries "
                  f"(the product) {e['ndcg_int8']:.4f}; int8 both sides {e['ndcg_int8_int8']:.4f}")
    print(f"\npeak RSS of this process: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
