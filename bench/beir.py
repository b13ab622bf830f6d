"""BEIR SciFact through the real engine: BM25, dense, hybrid RRF, convex fusion, ts_rank.

Usage: ``python bench/beir.py`` (first run embeds 5,183 abstracts, cached afterwards);
``python bench/beir.py --pruning``: only BM25 and the default hybrid, each with the pruned
BM25 top-k and the exhaustive sum (KLEA_BM25_PRUNED), and the share of queries whose
BM25 lists are identical.

Every run goes through :func:`domains.retrieval.retrieve` (k = 100, lists 100 deep)
on a store holding the corpus (document = title + " " + text, one chunk each) in the
benchmark database. Scores: nDCG@10 and R@100 on the 300 test queries with
``ir-measures`` (trec_eval underneath). The convex fusion's alpha is tuned on the *train*
qrels only (809 queries), then applied to test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    cached_embeddings,
    command_line,
    load_qrels,
    load_scifact,
    scifact_dir,
    setup_django,
    sha8,
)

DOMAIN, STORE = "bench-scifact", "bench-scifact"
K = 100


def load_store(ids, texts, vectors):
    """The SciFact store, (re)built when missing or built from another corpus file."""
    from django.db import transaction

    from domains.models import Chunk, Document, Domain, Store

    marker = sha8(scifact_dir() / "corpus.jsonl")
    domain, _ = Domain.objects.get_or_create(name=DOMAIN, defaults={"description": "BEIR SciFact", "k_max": K})
    store = Store.objects.filter(name=STORE).first()
    if store and store.documents.filter(content_hash=marker).count() == len(ids):
        return domain, store
    started = time.monotonic()
    if store:
        store.delete()
    store = Store.objects.create(name=STORE, domain=domain)
    for start in range(0, len(ids), 500):
        with transaction.atomic():
            docs = Document.objects.bulk_create(
                Document(store=store, file_name=doc_id, content_hash=marker, status="stored")
                for doc_id in ids[start : start + 500]
            )
            Chunk.objects.bulk_create(
                Chunk(store=store, document=doc, ordinal=0, text=text, embedding=vector)
                for doc, text, vector in zip(docs, texts[start : start + 500], vectors[start : start + 500])
            )
    print(f"loaded {len(ids)} chunks in {time.monotonic() - started:.0f} s", flush=True)
    return domain, store


def run_engine(domain, queries, **kwargs) -> dict[str, dict[str, float]]:
    """qid -> {doc id: score}, the score being K - rank so evaluation keeps our order."""
    from domains.retrieval import retrieve

    run = {}
    for qid, text in queries.items():
        result = retrieve(text, [domain], k=K, depth=K, max_chars=10**9, **kwargs)
        run[qid] = {c.file_name: float(K - rank) for rank, c in enumerate(result.results)}
    return run


def run_ts_rank(store, queries) -> dict[str, dict[str, float]]:
    """The baseline users run today: ts_rank over an OR of the query's lexemes."""
    from django.db import connection

    from domains.retrieval import query_lexemes

    run = {}
    with connection.cursor() as cursor:
        for qid, text in queries.items():
            lexemes = query_lexemes(text)
            if not lexemes:
                run[qid] = {}
                continue
            tsquery = " | ".join("'" + lex.replace("'", "''").replace("\\", "\\\\") + "'" for lex in lexemes)
            cursor.execute(
                "SELECT d.file_name, ts_rank(c.search_vector, q) AS score "
                "FROM domains_chunk c JOIN domains_document d ON d.id = c.document_id, CAST(%s AS tsquery) q "
                "WHERE c.store_id = %s AND c.search_vector @@ q ORDER BY score DESC, c.id LIMIT %s",
                [tsquery, store.id, K],
            )
            run[qid] = {name: float(K - rank) for rank, (name, _) in enumerate(cursor.fetchall())}
    return run


def tune_alpha(store, queries, query_vectors, qrels) -> tuple[float, float]:
    """Best convex-fusion alpha on the given (train) queries: (alpha, nDCG@10)."""
    from domains.retrieval import bm25_search, convex_fusion, query_lexemes, vector_search

    names = dict(store.chunks.values_list("id", "document__file_name"))
    lists = {}
    for qid, text in queries.items():
        dense = vector_search(store.id, query_vectors[qid], K, -1.0).hits
        sparse = bm25_search(store.id, query_lexemes(text), K)
        lists[qid] = [(f"{STORE}:vector", dense), (f"{STORE}:bm25", sparse)]
    best = (0.0, -1.0)
    for step in range(21):
        alpha = step / 20
        run = {
            qid: {names[cid]: float(K - rank) for rank, (cid, _, _) in enumerate(convex_fusion(pairs, alpha)[:K])}
            for qid, pairs in lists.items()
        }
        ndcg = evaluate(qrels, run)["nDCG@10"]
        if ndcg > best[1]:
            best = (alpha, ndcg)
    return best


def evaluate(qrels, run) -> dict[str, float]:
    """Mean nDCG@10 and R@100 over *all* queries of ``qrels`` (no result = 0; trec_eval
    alone would skip queries missing from the run)."""
    import ir_measures
    from ir_measures import R, nDCG

    totals = {"nDCG@10": 0.0, "R@100": 0.0}
    for metric in ir_measures.iter_calc([nDCG @ 10, R @ 100], qrels, run):
        totals[str(metric.measure)] += metric.value
    return {name: value / len(qrels) for name, value in totals.items()}


def pruning(domain, test, record) -> None:
    """BM25 and the default hybrid with and without the pruned BM25 top-k."""
    from django.test import override_settings

    runs = {}
    for pruned in (False, True):
        with override_settings(KLEA_BM25_PRUNED=pruned):
            name = "pruned" if pruned else "exhaustive"
            runs[pruned] = run_engine(domain, test, modes=["bm25"])
            record(f"BM25 k1 1.2 b 0.75, {name}", runs[pruned])
            record(f"hybrid (default fusion), BM25 {name}", run_engine(domain, test))
    same = sum(list(runs[False][q]) == list(runs[True][q]) for q in test)
    print(f"  BM25 top {K} identical (same documents in the same order): {same} of {len(test)} queries")


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pruning", action="store_true", help="only BM25 and hybrid, pruned against exhaustive")
    args = parser.parse_args()
    started = time.monotonic()
    setup_django()
    from django.conf import settings
    from django.test import override_settings

    from domains.retrieval import RRF_K, RRF_WEIGHTS

    ids, texts, all_queries = load_scifact()
    vectors = cached_embeddings("scifact-corpus", texts, scifact_dir() / "corpus.jsonl")
    qids = sorted(all_queries)
    query_matrix = cached_embeddings("scifact-queries", [all_queries[q] for q in qids], scifact_dir() / "queries.jsonl")
    query_vectors = dict(zip(qids, query_matrix))
    domain, store = load_store(ids, texts, vectors)
    test_qrels, train_qrels = load_qrels("test"), load_qrels("train")
    test = {q: all_queries[q] for q in sorted(test_qrels)}
    train = {q: all_queries[q] for q in sorted(train_qrels)}

    rows = []

    def record(name, run):
        scores = evaluate(test_qrels, run)
        rows.append((name, scores["nDCG@10"], scores["R@100"]))
        print(f"  {name}: nDCG@10 {scores['nDCG@10']:.3f}  R@100 {scores['R@100']:.3f}", flush=True)

    if args.pruning:
        pruning(domain, test, record)
    else:
        for k1, b in ((0.9, 0.4), (1.2, 0.75)):
            with override_settings(KLEA_BM25_K1=k1, KLEA_BM25_B=b):
                record(f"BM25 k1 {k1} b {b} (Postgres tokens)", run_engine(domain, test, modes=["bm25"]))
        default_bm25 = f"k1 {settings.KLEA_BM25_K1} b {settings.KLEA_BM25_B}"
        record("dense, exact cosine", run_engine(domain, test, modes=["vector"]))
        with override_settings(KLEA_VECTOR_EXACT_MAX_ROWS=0):
            record("dense, HNSW (ef_search 200)", run_engine(domain, test, modes=["vector"]))
        rrf = f"RRF k {RRF_K}, BM25 weight {RRF_WEIGHTS['bm25']}"
        record(f"hybrid {rrf} (BM25 {default_bm25} + dense), the default", run_engine(domain, test))
        with override_settings(KLEA_BM25_K1=0.9, KLEA_BM25_B=0.4):
            record(f"hybrid {rrf} (BM25 k1 0.9 b 0.4 + dense)", run_engine(domain, test))
        alpha, train_ndcg = tune_alpha(store, train, query_vectors, train_qrels)
        print(f"  convex alpha tuned on train qrels ({len(train)} queries): {alpha:.2f} "
              f"(train nDCG@10 {train_ndcg:.3f})")
        domain.fusion_alpha = alpha
        convex = run_engine(domain, test, fusion="convex")
        record(f"hybrid convex, TMM-normalised, alpha {alpha:.2f} (tuned on train)", convex)
        record("Postgres ts_rank, OR of lexemes (baseline)", run_ts_rank(store, test))

    print()
    print(f"BEIR SciFact test ({len(test)} queries, {len(ids)} documents); command: {command_line()}")
    print("| run | nDCG@10 | R@100 |")
    print("|---|---|---|")
    for name, ndcg, recall in rows:
        print(f"| {name} | {ndcg:.3f} | {recall:.3f} |")
    print(f"total {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
