"""Benchmark: page provenance of PDF citations, and page render time.

Ingests the shared corpus's text-layer PDFs (``pdfs/ground_truth.json``,
``has_text_layer``) as the domain ``bench-pdfs`` in the benchmark database
(bench/common.py), then samples sentences from every page (``--per-page``, a fixed seed)
straight from pdfium's text layer, and for each:

1. finds the stored chunk that holds the sentence (letters and digits compared, so
   hyphenation and spacing do not matter); a sentence split over two chunks, or left
   out of every chunk (running heads, captions the converter dropped), is counted apart;
2. asks the sentence through the full pipeline (extractive backend), restricted to
   ``bench-pdfs``; *found* = a reference lists that chunk; *page right* = the
   reference's chunk names the sentence's page (target 100 % of found);
3. measures the highlight: the share of the sentence's characters (pdfium glyph box
   centres) that fall inside the chunk's line boxes on that page (target >= 95 %).

Then renders pages through :func:`domains.sources.render_page` (the source view's own
code) into an empty cache, then again from the cache, and prints the p50 / p90 times;
and opens chunks' sources with a quoted sentence (``GET /api/chunks/<id>/source?quote=``,
the quote located on the page's text layer), twice in a row each, and prints the p50 / p90 times
of the first and the second opening and how many quotes were located.

    nice -n 10 .venv/bin/python bench/pages.py                  # 1 sentence per page
    nice -n 10 .venv/bin/python bench/pages.py --per-page 2 --render-pages 40
    nice -n 10 .venv/bin/python bench/pages.py --skip-questions --render-pages 0 --quote-chunks 60
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import setup_django  # noqa: E402

DOMAIN = STORE = "bench-pdfs"
# Copies of the corpus's text-layer PDFs: ingestion follows no link out of its folder.
COPIES = ROOT / "var" / "bench" / "pdfs"
_SENTENCE = re.compile(r"(?:(?<=[.!?]\s)|(?<=[.!?]\r\n))[A-Z][^.!?]{60,300}?[.!?](?=\s)")
_HYPHEN_BREAK = re.compile(r"(\w)[-\x02]\s+(\w)")
SLACK = 0.003  # fraction of the page a glyph centre may lie outside a line box (rounding)


def normal(text: str) -> str:
    """Letters and digits only, lower case (NFKC first: ligatures become letters)."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


def copy_corpus() -> Path:
    from django.conf import settings

    corpus = Path(settings.KLEA_CORPORA_DIR) / "pdfs"
    truth = json.loads((corpus / "ground_truth.json").read_text())
    COPIES.mkdir(parents=True, exist_ok=True)
    for row in truth["documents"] if isinstance(truth, dict) else truth:
        copy = COPIES / row["file"]
        if row["has_text_layer"] and not copy.is_file():
            copy.unlink(missing_ok=True)  # a symlink an earlier version made
            shutil.copyfile(corpus / row["file"], copy)
    return COPIES


def ingest_pdfs() -> None:
    from domains.models import Domain
    from ingestion.runs.ingest import ingest

    Domain.objects.get_or_create(name=DOMAIN, defaults={"description": "Scientific papers (PDF)."})
    started = time.monotonic()
    report = ingest(copy_corpus(), STORE, DOMAIN, mirror=True)
    counts: dict[str, int] = {}
    for outcome in report.outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    print(f"ingest: {counts} in {time.monotonic() - started:.0f} s")


def page_chars(page) -> tuple[str, list]:
    """The page's characters as pdfium numbers them (one str, aligned with the index),
    and each one's box (left, bottom, right, top) in page points."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    textpage = page.get_textpage()
    try:
        count = pdfium_c.FPDFText_CountChars(textpage)
        values = [ctypes.c_double() for _ in range(4)]
        chars, boxes = [], []
        for index in range(count):
            chars.append(chr(pdfium_c.FPDFText_GetUnicode(textpage, index)))
            pdfium_c.FPDFText_GetCharBox(textpage, index, *(ctypes.byref(v) for v in values))
            left, right, bottom, top = (v.value for v in values)
            boxes.append((left, bottom, right, top))
    finally:
        textpage.close()
    return "".join(chars), boxes


def sample(per_page: int, seed: int) -> list[dict]:
    """Sentences of every page: {file, page, question, key, centres (fractions)}."""
    import pypdfium2 as pdfium

    rng = random.Random(seed)
    samples = []
    for path in sorted(COPIES.glob("*.pdf")):
        pdf = pdfium.PdfDocument(str(path))
        try:
            for index in range(len(pdf)):
                page = pdf[index]
                try:
                    if page.get_rotation() != 0:
                        continue  # boxes are compared in the page's own frame only
                    width, height = page.get_size()
                    text, boxes = page_chars(page)
                finally:
                    page.close()
                candidates = []
                for match in _SENTENCE.finditer(" " + text):
                    start, end = match.start() - 1, match.end() - 1
                    words = text[start:end].split()
                    letters = sum(ch.isalpha() for ch in text[start:end])
                    if len(words) >= 8 and letters >= 0.7 * len(text[start:end].replace(" ", "")) and "http" not in text[start:end]:
                        candidates.append((start, end))
                for start, end in rng.sample(candidates, min(per_page, len(candidates))):
                    raw = text[start:end]
                    centres = [
                        ((boxes[i][0] + boxes[i][2]) / 2 / width, 1 - (boxes[i][1] + boxes[i][3]) / 2 / height)
                        for i in range(start, end)
                        if not text[i].isspace() and text[i] not in "\x02\x00" and boxes[i][2] > boxes[i][0]
                    ]
                    question = " ".join(_HYPHEN_BREAK.sub(r"\1\2", raw.replace("\x02", "-")).split())
                    samples.append({"file": path.name, "page": index + 1, "question": question,
                                    "key": normal(raw.replace("\x02", "")), "centres": centres})
        finally:
            pdf.close()
    return samples


def coverage(centres: list, boxes: list, page: int) -> float:
    """Share of glyph centres inside the chunk's line boxes on ``page``."""
    here = [b[1:] for b in boxes if b[0] == page]
    if not centres:
        return 0.0
    inside = sum(
        any(l - SLACK <= x <= r + SLACK and t - SLACK <= y <= b + SLACK for l, t, r, b in here) for x, y in centres
    )
    return inside / len(centres)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def measure_citations(samples: list[dict]) -> None:
    from asgiref.sync import async_to_sync

    from chat.backends.extractive import ExtractiveBackend
    from chat.pipeline import TurnRequest, ask
    from domains.models import Chunk, Domain

    chunks: dict[str, list[tuple[int, str, dict]]] = {}
    for cid, name, text, provenance in Chunk.objects.filter(store__name=STORE).values_list(
        "id", "document__file_name", "text", "provenance"
    ):
        chunks.setdefault(name, []).append((cid, normal(text), provenance))
    allowed = [Domain.objects.get(name=DOMAIN)]
    backend = ExtractiveBackend()
    async_to_sync(ask)(TurnRequest("warm up the models", domains=allowed, pick=[DOMAIN]), backend=backend)
    in_chunk = found = page_right = covered = 0
    shares: list[float] = []
    misses: list[str] = []
    started = time.monotonic()
    for sample in samples:
        holders = [c for c in chunks.get(sample["file"], []) if sample["key"] in c[1]]
        if len(holders) != 1:
            continue
        in_chunk += 1
        cid, _, provenance = holders[0]
        share = coverage(sample["centres"], provenance.get("boxes", []), sample["page"])
        shares.append(share)
        covered += share >= 0.95
        result = async_to_sync(ask)(TurnRequest(sample["question"], domains=allowed, pick=[DOMAIN]), backend=backend)
        cited = [(ref, c) for ref in result.references if ref.get("kind") == "document" for c in ref["chunks"]
                 if c["chunk_id"] == cid]
        if not cited:
            continue
        found += 1
        ref, chunk = cited[0]
        pages = chunk["pages"] or [0, 0]
        if pages[0] <= sample["page"] <= pages[1] and ref["pages"][0] <= sample["page"] <= ref["pages"][1]:
            page_right += 1
        else:
            misses.append(f"{sample['file']} p. {sample['page']}: cited as {pages}")
    seconds = time.monotonic() - started
    total = len(samples)
    print(f"sentences sampled: {total} from {len({s['file'] for s in samples})} PDFs "
          f"({len({(s['file'], s['page']) for s in samples})} pages)")
    print(f"  held by exactly one chunk: {in_chunk} ({100 * in_chunk / max(total, 1):.1f} %); the rest are split "
          "over two chunks or in text the converter drops (running heads, some captions)")
    print(f"  right chunk found in the references: {found} / {in_chunk} ({100 * found / max(in_chunk, 1):.1f} %)")
    print(f"  page named right when found: {page_right} / {found} ({100 * page_right / max(found, 1):.1f} %)")
    print(f"  highlight covers >= 95 % of the sentence: {covered} / {in_chunk} ({100 * covered / max(in_chunk, 1):.1f} %); "
          f"mean coverage {100 * statistics.fmean(shares) if shares else 0:.1f} %, "
          f"p10 {100 * percentile(shares, 0.10):.1f} %")
    print(f"  ({seconds:.0f} s for {in_chunk} questions, extractive backend)")
    for line in misses[:10]:
        print(f"  page miss: {line}")


def measure_rendering(pages: int, widths: tuple[int, ...]) -> None:
    from django.contrib.auth.models import User
    from django.test import Client, override_settings

    from domains.models import Document
    from domains.sources import render_page

    documents = list(Document.objects.filter(store__name=STORE, status="stored").order_by("file_name"))
    targets = [(d, p) for d in documents for p in range(1, (d.pages or 0) + 1)]
    rng = random.Random(7)
    targets = rng.sample(targets, min(pages, len(targets)))
    with tempfile.TemporaryDirectory() as cache, override_settings(KLEA_PAGE_CACHE_DIR=Path(cache)):
        for width in widths:
            for label in ("uncached", "cached"):
                times = []
                for document, page in targets:
                    started = time.perf_counter()
                    image = render_page(document, page, width)
                    times.append(1000 * (time.perf_counter() - started))
                    assert image.cached == (label == "cached")
                print(f"render {width} px, {label}: p50 {statistics.median(times):.1f} ms, "
                      f"p90 {percentile(times, 0.9):.1f} ms over {len(times)} pages")
        # the same cached pages through HTTP (Django's whole request path, no network)
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(User.objects.filter(is_superuser=True).first() or User.objects.create_superuser("bench-pages"))
        for width in widths:
            times = []
            for document, page in targets:
                started = time.perf_counter()
                response = client.get(f"/api/documents/{document.pk}/pages/{page}?width={width}")
                times.append(1000 * (time.perf_counter() - started))
                assert response.status_code == 200 and response["X-Klea-Page-Cache"] == "hit"
            print(f"GET page {width} px, cached: p50 {statistics.median(times):.1f} ms, "
                  f"p90 {percentile(times, 0.9):.1f} ms over {len(times)} pages")


def measure_quotes(count: int) -> None:
    """Open ``count`` random PDF chunks' sources with one quoted sentence of each, twice in
    a row (the view opened again), through Django's whole request path."""
    from django.contrib.auth.models import User
    from django.test import Client

    from domains.models import Chunk

    chunks = [c for c in Chunk.objects.filter(store__name=STORE).order_by("pk") if (c.provenance or {}).get("boxes")]
    rng = random.Random(11)
    quoted = []
    for chunk in rng.sample(chunks, min(count, len(chunks))):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", chunk.text) if len(s.split()) >= 8]
        if sentences:
            quoted.append((chunk, sentences[len(sentences) // 2]))
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(User.objects.filter(is_superuser=True).first() or User.objects.create_superuser("bench-pages"))
    times: dict[str, list[float]] = {"first": [], "second": []}
    located = 0
    for chunk, sentence in quoted:
        for label in times:
            started = time.perf_counter()
            response = client.get(f"/api/chunks/{chunk.pk}/source", {"quote": sentence})
            times[label].append(1000 * (time.perf_counter() - started))
            assert response.status_code == 200 and response.json()["unavailable"] is None
            located += label == "first" and bool(response.json()["quoted"])
    for label, values in times.items():
        print(f"GET chunk source with a quote, {label} opening: p50 {statistics.median(values):.1f} ms, "
              f"p90 {percentile(values, 0.9):.1f} ms, max {max(values):.1f} ms over {len(values)} chunks")
    print(f"  {located} of {len(quoted)} quotes located on the text layer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-page", type=int, default=1, help="sentences sampled per page (default 1)")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--render-pages", type=int, default=30, help="pages rendered per width (default 30)")
    parser.add_argument("--quote-chunks", type=int, default=40, help="chunks opened with a quote (default 40)")
    parser.add_argument("--skip-questions", action="store_true", help="only time the page rendering and quotes")
    args = parser.parse_args()
    setup_django()
    print("command: " + " ".join(["python", "bench/pages.py", *sys.argv[1:]]))
    ingest_pdfs()
    if not args.skip_questions:
        measure_citations(sample(args.per_page, args.seed))
    if args.render_pages:
        measure_rendering(args.render_pages, (800, 1200))
    measure_quotes(args.quote_chunks)


if __name__ == "__main__":
    main()
