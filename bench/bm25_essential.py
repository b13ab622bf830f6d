"""Where the pruned BM25 top-k spends its time: the postings it must sum, per claim.

Usage: ``python bench/bm25_essential.py --database klea_bench_lat_realtext_1000000`` on a
database loaded by bench/latency.py (store ``bench-latency``).

``klea_bm25_topk`` (domains/bm25_topk_sql.py) is MaxScore: with theta a lower bound of the
k-th best score, the lists of the smallest upper bounds summing below theta are
non-essential (looked up only for the chunks that can still enter the top k); every
posting of the other, essential, lists is summed per chunk (a hash aggregation, about
1 us a posting). Per claim (the first 100 SciFact test claims, k = 50 as ``retrieve()``
asks), at the best theta there is (the k-th best exact score) this counts the postings
summed by:

- ``maxscore``: whole lists non-essential, smallest bound first (the function's rule);
- ``maxscore_knapsack``: whole lists, the set skipping the most postings (a 0/1
  knapsack: does the rule's order lose anything?);
- ``impact_cuts``: per term a cut in its impact-ordered postings (32 impact buckets),
  the postings below every cut non-essential, their bounds (each term's cut impact)
  summing below theta, the cuts chosen to skip the most postings (a multiple-choice
  knapsack over the buckets' counts): what per-term impact histograms would allow.

Prints per-claim counts for the slowest claims by ``maxscore``, the totals and p50/p95
over the 100 claims, and the command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import command_line, setup_django  # noqa: E402

STORE = "bench-latency"
K = 50
BUCKET = 1024  # impact bucket width (impacts are 0..32767)
STEP = 0.05  # bound resolution of the impact-cut knapsack (BM25 score units)


def term_rows(store_id: int, lexemes: list[str]) -> list[dict]:
    """Per query term: df, the upper bound of its contribution (as klea_bm25_topk computes
    it, without the rounding slack) and its postings' counts per impact bucket."""
    from django.db import connection

    from domains.bm25_sql import IMPACT_SCALE
    from domains.retrieval.bm25 import Bm25Params

    params = Bm25Params.from_settings()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_count::float8, greatest(1::float8, total_length::float8 / chunk_count / impact_avgdl) "
            "FROM domains_bm25stats WHERE store_id = %s", [store_id])
        n, factor = cursor.fetchone()
        cursor.execute(
            "SELECT t.lexeme, t.df, ln(1 + (%s::float8 - t.df + 0.5) / (t.df + 0.5)) * (%s::float8 + 1), "
            "p.impact / %s, count(*), max(p.impact) FROM domains_bm25term t "
            "JOIN domains_bm25posting p ON p.term_id = t.id "
            "WHERE t.store_id = %s AND t.lexeme = ANY(%s) GROUP BY 1, 2, 3, 4",
            [n, params.k1, BUCKET, store_id, lexemes])
        terms: dict[str, dict] = {}
        for lexeme, df, w, bucket, count, best in cursor.fetchall():  # one pass over the postings
            row = terms.setdefault(lexeme, {"df": df, "w": float(w), "buckets": {}, "best": 0})
            row["buckets"][bucket] = count
            row["best"] = max(row["best"], best)
    for row in terms.values():
        row["ub"] = row["w"] * (row["best"] + 1) / IMPACT_SCALE * float(factor)
        row["per_bucket"] = row["w"] * BUCKET / IMPACT_SCALE * float(factor)
    return list(terms.values())


def maxscore(terms: list[dict], theta: float) -> int:
    summed, budget = 0, 0.0
    for term in sorted(terms, key=lambda t: t["ub"]):
        if budget + term["ub"] < theta:
            budget += term["ub"]
        else:
            summed += term["df"]
    return summed


def maxscore_knapsack(terms: list[dict], theta: float) -> int:
    cap = int(theta / STEP) - 1
    skipped = [0] * (cap + 1)  # 0/1 knapsack over whole lists, bounds rounded up to STEP
    for term in terms:
        cost = int(np.ceil(term["ub"] / STEP))
        skipped = [max(skipped[c], skipped[c - cost] + term["df"]) if cost <= c else skipped[c] for c in range(cap + 1)]
    return sum(t["df"] for t in terms) - skipped[cap]


def impact_cuts(terms: list[dict], theta: float) -> int:
    cap = int(theta / STEP) - 1
    skipped = [0] * (cap + 1)  # the most postings skipped within a bound budget
    for term in terms:
        options, below = [], 0
        for bucket in range(max(term["buckets"]) + 2):
            options.append((int(np.ceil(term["per_bucket"] * bucket / STEP)), below))
            below += term["buckets"].get(bucket, 0)
        skipped = [max(skipped[c - cost] + gain for cost, gain in options if cost <= c) for c in range(cap + 1)]
    return sum(t["df"] for t in terms) - skipped[cap]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--show", type=int, default=12, help="claims listed, most postings first")
    args = parser.parse_args()
    setup_django(args.database)
    from bench.scale_corpora import queries
    from domains.models import Store
    from domains.retrieval.bm25 import bm25_search, query_lexemes

    store = Store.objects.get(name=STORE)
    texts, _ = queries()
    rows = []
    for text in texts[:args.queries]:
        lexemes = sorted(set(query_lexemes(text)))
        hits = bm25_search(store.id, lexemes, K)
        terms = term_rows(store.id, lexemes)
        if len(hits) < K or not terms:
            continue
        theta = hits[-1][1]
        rows.append({"claim": text, "terms": len(terms), "postings": sum(t["df"] for t in terms), "theta": theta,
                     "maxscore": maxscore(terms, theta),
                     "maxscore_knapsack": maxscore_knapsack(terms, theta),
                     "impact_cuts": impact_cuts(terms, theta)})
    rows.sort(key=lambda r: -r["maxscore"])
    print("| claim (first words) | terms | postings | theta | MaxScore | MaxScore, best list set | per-term impact cuts |")
    print("|---|---|---|---|---|---|---|")
    for r in rows[:args.show]:
        print(f"| {' '.join(r['claim'].split()[:5])} ... | {r['terms']} | {r['postings']:,} | {r['theta']:.1f} "
              f"| {r['maxscore']:,} | {r['maxscore_knapsack']:,} | {r['impact_cuts']:,} |")
    for key in ("maxscore", "maxscore_knapsack", "impact_cuts"):
        values = [r[key] for r in rows]
        print(f"{key}: total {sum(values):,} postings summed over {len(rows)} claims; "
              f"p50 {np.percentile(values, 50):,.0f}, p95 {np.percentile(values, 95):,.0f}")
    print(f"\ncommand: {command_line()}")


if __name__ == "__main__":
    main()
