"""Scientific tokens and dotted names in BM25: PostgreSQL's plain tokens against ``klea_search_text``.

Usage: ``python bench/lexemes.py`` (a few minutes; no embeddings).

Every tokenisation runs on the same SciFact corpus (5,183 abstracts, title + text, one
chunk each) in BM25-only stores of the benchmark database. "plain" is PostgreSQL alone
(the function body replaced by the identity inside a transaction that is rolled back);
"0009" is ``klea_search_text`` as migration 0009 left it (scientific tokens, no dotted
names); "klea" is the shipped ``klea_search_text`` (domains/bm25_sql.py).

- SciFact: nDCG@10 of BM25 on the 300 test queries (k = 100), ``ir-measures``.
- Query set of our own, derived from the corpus, not hand-picked: the 25 most frequent
  letter-digit identifiers (a letter run of >= 2 joined to a digit run, with or without
  a hyphen: "IL-6", "CD4", "COVID-19"), each asked in three forms: hyphenated ("IL-6"),
  joined ("IL6") and spaced ("IL 6"). Relevant = the abstracts containing the
  identifier in any of these forms (case-insensitive). Reported per form: P@10 (share
  of the top 10 that are relevant, out of min(10, relevant)) and R@100.
- Dotted names, when the answer bench's ``xarray-docs`` store is in the database
  (``python bench/answers.py --ingest``): its chunks (headings + text) in BM25-only
  stores, and a query set derived from them, not hand-picked: the 25 names that follow
  a dot ("DataArray.isel", "xr.open_dataset") in the most chunks, URLs left out, each
  asked alone ("isel", "open_dataset"). Relevant = the chunks holding the name as a word
  in any form ("ds.isel(...)", "isel", "DataArray.isel"; case-insensitive). P@10 and
  R@100 as above.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import command_line, load_qrels, load_scifact, setup_django  # noqa: E402

K = 100
IDENTIFIER = re.compile(r"\b([A-Za-z]{2,})[-\u2010 ]?([0-9]+)\b")
JOINED_OR_HYPHEN = re.compile(r"\b([A-Za-z]{2,})[-\u2010]?([0-9]+)\b")
# A name after a dot, outside URLs, paths and e-mail addresses (words holding "/", ":", "@").
URLISH = re.compile(r"\S*[/:@]\S*")
DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.\w+)*\.([A-Za-z_]\w+)")


class Rollback(Exception):
    pass


def identifier_queries(texts: list[str], count: int = 25) -> list[tuple[str, str, str, set[int]]]:
    """[(key, letters, digits, {index of the relevant texts})], the most frequent first."""
    spelled: dict[str, Counter] = {}
    docs: dict[str, set[int]] = {}
    for i, text in enumerate(texts):
        for letters, digits in JOINED_OR_HYPHEN.findall(text):
            key = letters.lower() + digits
            spelled.setdefault(key, Counter())[letters] += 1
            docs.setdefault(key, set()).add(i)
    keys = sorted(docs, key=lambda k: (-len(docs[k]), k))[:count]
    out = []
    for key in keys:
        letters = spelled[key].most_common(1)[0][0]
        digits = key[len(letters):]
        pattern = re.compile(rf"\b{re.escape(letters)}[-\u2010 ]?{digits}\b", re.IGNORECASE)
        relevant = {i for i, text in enumerate(texts) if pattern.search(text)}
        out.append((key, letters, digits, relevant))
    return out


def dotted_name_queries(texts: list[str], count: int = 25) -> list[tuple[str, set[int]]]:
    """[(name, {index of the relevant texts})]: the names after a dot in the most texts."""
    chunks_with: dict[str, set[int]] = {}
    for i, text in enumerate(texts):
        for name in set(DOTTED.findall(URLISH.sub(" ", text))):
            chunks_with.setdefault(name, set()).add(i)
    names = sorted(chunks_with, key=lambda n: (-len(chunks_with[n]), n))[:count]
    out = []
    for name in names:
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", re.IGNORECASE)
        out.append((name, {i for i, text in enumerate(texts) if word.search(text)}))
    return out


def build_store(name: str, ids: list[str], texts: list[str], headings: list[list[str]] | None = None):
    from domains.models import Chunk, Document, Domain, Store

    domain, _ = Domain.objects.get_or_create(name="bench-lexemes", defaults={"description": "bench"})
    Store.objects.filter(name=name).delete()
    store = Store.objects.create(name=name, domain=domain, mode=Store.Mode.BM25)
    headings = headings or [[] for _ in ids]
    for start in range(0, len(ids), 1000):
        docs = Document.objects.bulk_create(
            Document(store=store, file_name=doc_id, status="stored") for doc_id in ids[start : start + 1000]
        )
        Chunk.objects.bulk_create(
            Chunk(store=store, document=doc, ordinal=0, text=text, headings=chunk_headings)
            for doc, text, chunk_headings in zip(docs, texts[start : start + 1000], headings[start : start + 1000])
        )
    from django.db import connection

    with connection.cursor() as cursor:  # planner statistics for the rows just written
        cursor.execute("ANALYZE domains_chunk, domains_bm25term, domains_bm25posting, domains_bm25stats")
    return store


def precision_recall(store_id: int, index: dict[int, int], queries: list[tuple[str, set[int]]]) -> tuple[float, float]:
    """Mean P@10 (out of min(10, relevant)) and R@100 of BM25 over ``queries`` [(text, relevant)]."""
    from domains.retrieval import bm25_search, query_lexemes

    p10 = r100 = 0.0
    for query, relevant in queries:
        hits = [index[cid] for cid, _ in bm25_search(store_id, query_lexemes(query), K)]
        p10 += len(relevant.intersection(hits[:10])) / min(10, len(relevant))
        r100 += len(relevant.intersection(hits)) / len(relevant)
    return p10 / len(queries), r100 / len(queries)


def measure(label: str, ids, texts, test, qrels, identifiers, docs) -> dict:
    from bench.beir import evaluate
    from domains.retrieval import bm25_search, query_lexemes

    started = time.monotonic()
    store = build_store(f"bench-lexemes-{label}", ids, texts)
    index = {cid: i for i, cid in enumerate(store.chunks.order_by("id").values_list("id", flat=True))}
    names = dict(store.chunks.values_list("id", "document__file_name"))
    run = {
        qid: {names[cid]: float(K - r) for r, (cid, _) in enumerate(bm25_search(store.id, query_lexemes(q), K))}
        for qid, q in test.items()
    }
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(DISTINCT t.id) FROM domains_bm25posting p "
            "JOIN domains_bm25term t ON t.id = p.term_id WHERE t.store_id = %s",
            [store.id],
        )
        postings, terms = cursor.fetchone()
    figures = {"nDCG@10": evaluate(qrels, run)["nDCG@10"], "postings": postings / len(index), "terms": terms}
    for form, join in (("hyphenated", "-"), ("joined", ""), ("spaced", " ")):
        queries = [(letters + join + digits, relevant) for _, letters, digits, relevant in identifiers]
        figures[form] = precision_recall(store.id, index, queries)
    if docs:
        doc_texts, doc_headings, names = docs
        doc_store = build_store(f"bench-lexemes-xarray-{label}", [str(i) for i in range(len(doc_texts))],
                                doc_texts, doc_headings)
        doc_index = {cid: i for i, cid in enumerate(doc_store.chunks.order_by("id").values_list("id", flat=True))}
        figures["dotted"] = precision_recall(doc_store.id, doc_index, names)
    print(f"  {label}: {time.monotonic() - started:.0f} s", flush=True)
    return figures


def main() -> None:
    setup_django()
    from django.db import connection, transaction

    ids, texts, queries = load_scifact()
    qrels = load_qrels("test")
    test = {q: queries[q] for q in sorted(qrels)}
    identifiers = identifier_queries(texts)
    from domains.models import Chunk

    # The xarray documentation of the answer bench, headings + text as the search vector reads them.
    rows = list(Chunk.objects.filter(store__name="xarray-docs").order_by("id").values_list("text", "headings"))
    docs = None
    if rows:
        names = dotted_name_queries([" ".join(h) + " " + t for t, h in rows])
        docs = ([t for t, _ in rows], [h for _, h in rows], names)
    ligatures = sum(1 for t in texts if re.search("[\ufb00-\ufb06]", t))
    results = {}
    # Each measure runs in a transaction rolled back afterwards: the benchmark database
    # keeps neither the stores nor the replaced function.
    import importlib

    before_dotted = importlib.import_module("domains.migrations.0016_search_text_splits_dotted_names").PREVIOUS_FUNCTION
    for name, label, function in (
        ("PostgreSQL tokens", "plain",
         "CREATE OR REPLACE FUNCTION klea_search_text(t text) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT t $$"),
        ("klea_search_text of 0009 (no dotted names)", "0009", before_dotted),
        ("klea_search_text (now)", "klea", None),
    ):
        try:
            with transaction.atomic():
                if function:
                    with connection.cursor() as cursor:
                        cursor.execute(function)
                results[name] = measure(label, ids, texts, test, qrels, identifiers, docs)
                raise Rollback
        except Rollback:
            pass

    print()
    print(f"command: {command_line()}")
    print(f"SciFact: {len(texts)} abstracts, {len(test)} test queries; {ligatures} abstracts with ligatures")
    print(
        f"identifiers ({len(identifiers)}): "
        + ", ".join(f"{letters}-{digits} ({len(rel)})" for _, letters, digits, rel in identifiers)
    )
    if docs:
        print(f"dotted names ({len(docs[2])}, over {len(docs[0])} xarray-docs chunks): "
              + ", ".join(f"{n} ({len(rel)})" for n, rel in docs[2]))
    print("| tokens | SciFact BM25 nDCG@10 | hyphenated P@10 / R@100 | joined P@10 / R@100 | spaced P@10 / R@100 "
          "| dotted names P@10 / R@100 | postings per chunk | terms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, f in results.items():
        cells = " | ".join(f"{f[form][0]:.3f} / {f[form][1]:.3f}" for form in ("hyphenated", "joined", "spaced"))
        dotted = f"{f['dotted'][0]:.3f} / {f['dotted'][1]:.3f}" if "dotted" in f else "-"
        print(f"| {name} | {f['nDCG@10']:.4f} | {cells} | {dotted} | {f['postings']:.1f} | {f['terms']:,} |")


if __name__ == "__main__":
    main()
