"""Passage choice alone: record the extractive backend's inputs once, replay its choice offline.

The answer bench (bench/answers.py) runs retrieval and routing for every question; the
passage choice of the model-free backend (chat/backends/extractive/passages.py) is a
small part of it. ``record`` runs the bench sets once through the full pipeline and
keeps, per in-domain question, what the backend's ``answer`` was given (the question,
its search text, its vector, the numbered sources with their chunks); ``replay``
composes the answer again from those inputs with the code as it is now and scores it
the way the bench does (evidence in answer: ``chat.scoring.metrics.coverage`` >= 0.8).
Changes to passage choice are measured in seconds, without retrieval's noise. Both
report file cited too (the answer cites a source of the question's file in its domain),
and how many how-to answers open with an instruction (code, numbered steps, an imperative).
``--k`` asks how a wider or narrower candidate pool would answer: ``record --k N``
retrieves each domain's N best chunks without the reference budget, ``replay --k M``
keeps each domain's M best of them (by score) and numbers the sources again.

    python bench/passage_replay.py record /tmp/inputs.pickle       # about as long as answers.py
    python bench/passage_replay.py replay /tmp/inputs.pickle -v 2  # seconds once inputs.pickle.vectors holds the passages
    python bench/passage_replay.py replay /tmp/inputs.pickle --misses   # misses with the evidence in the references
    python bench/passage_replay.py record /tmp/deep.pickle --k 24  # each domain's 24 best chunks, no budget
    python bench/passage_replay.py replay /tmp/deep.pickle --k 12  # answered from the 12 best of them
    python bench/passage_replay.py record /tmp/held.pickle --sets neuroml-3 xarray-3 cooking-3 klea-docs-3

The held-out third, fifth and eighth sets (``*-3``, ``*-5``, ``*-8``, ``papers-4``) are not recorded unless
named with ``--sets``: replay them for their totals only (no ``-v 2``, no ``--misses``),
never to choose a change. Off-topic sets (``--sets off-topic off-topic-6``) are recorded
too: those routing lets through reach the answer, and replay counts as refused each one
it composes nothing for (the answer then says that no source answers); ``terse`` is
recorded as an answerable set.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, setup_django  # noqa: E402

QUESTIONS = ROOT / "bench" / "questions"
SETS = ("neuroml", "neuroml-2", "xarray", "xarray-2", "cooking", "cooking-2", "klea-docs", "klea-docs-2")
FIRST = ("neuroml", "xarray", "cooking", "klea-docs")
HELD_OUT = ("neuroml-3", "xarray-3", "cooking-3", "klea-docs-3")
# Written apart after the others (bench/questions, 2026-12-07): recorded when named, reported on their own.
FOURTH = ("neuroml-4", "xarray-4", "cooking-4", "klea-docs-4")
# Written apart without reading the answer code or the other sets (2026-12-07): held out like the third sets.
FIFTH = ("neuroml-5", "xarray-5", "cooking-5", "klea-docs-5")
# Files drawn at random, written apart (2026-12-08): held out the same way.
EIGHTH = ("neuroml-8", "xarray-8", "cooking-8")
# Written apart over less-read files (2026-12-08; the seventh as first-time users ask), development sets: recorded when named.
SIXTH_SEVENTH = ("neuroml-6", "xarray-6", "cooking-6", "klea-docs-6", "neuroml-7", "xarray-7", "cooking-7")
# as bench/answers.py: recorded when named (the bench database needs its domain)
ON_REQUEST = ("papers", "papers-2", "papers-3", "papers-4")
# Recorded when named: off-topic questions that routing lets through reach the backend's
# answer too, and replay counts those it composes nothing for as refused (off-topic-3 and
# -5 held out: totals only); terse.json's in-domain questions naming their subject "it",
# shapes.json's sign and version questions (bench/answers.py).
OFF_TOPIC = ("off-topic", "off-topic-2", "off-topic-3", "off-topic-5", "off-topic-6")
OTHER = ("terse", "shapes")


@dataclass
class Chunk:
    text: str
    score: float
    headings: list[str]
    chunk_id: int | None
    # Its stored document (filled on replay from the bench database): the backend reads
    # a chunk's neighbours by it (a lead-in's block in the next chunk, a sentence cut
    # by the previous one), so a replay without it answered some questions otherwise.
    document_id: int | None = None


@dataclass
class Source:
    number: int
    file_name: str
    chunks: list[Chunk] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    domain: str = ""


def _plain(source) -> Source:
    chunks = [Chunk(c.text, float(c.score or 0.0), list(getattr(c, "headings", None) or ()), getattr(c, "chunk_id", None))
              for c in source.chunks]
    return Source(source.number, getattr(source, "file_name", ""), chunks, dict(getattr(source, "metadata", {}) or {}),
                  getattr(source, "domain", "") or "")


def record(path: Path, k: int | None = None, sets: tuple[str, ...] = SETS) -> None:
    from chat.backends.extractive import ExtractiveBackend
    from chat.scoring import evaluate, load_questions
    from domains.models import Domain

    domains = list(Domain.objects.filter(active=True))
    if k is not None:  # a deeper pool without a budget, cut back per domain by ``replay --k``
        import importlib

        retrieve = importlib.import_module("chat.pipeline.nodes.retrieve")
        shallow = retrieve.retrieval_entry

        def deeper(*args, **kwargs):
            return shallow(*args, **{**kwargs, "k": k, "max_chars": 10**9})

        retrieve.retrieval_entry = deeper

    seen: dict[str, dict] = {}
    original = ExtractiveBackend.answer

    async def answer(self, task):
        vector = await task.vector()
        seen[task.question] = {"question": task.question, "search_text": task.search_text,
                               "vector": vector, "sources": [_plain(s) for s in task.sources]}
        async for piece in original(self, task):
            yield piece

    ExtractiveBackend.answer = answer  # a bench recorder, not a test: the real backend runs on
    rows = []
    for name in sets:
        questions = load_questions(QUESTIONS / f"{name}.json")
        report = evaluate(questions, domains)
        for q, scored in zip(questions, report.scored):
            entry = seen.pop(q.question, None)
            rows.append({"set": name, "domain": q.domain, "evidence": q.evidence, "file": q.file, "inputs": entry,
                         "answer": scored.answer, "references_coverage": scored.references_coverage})
        print(f"{name}: {len(questions)} recorded", flush=True)
    path.write_bytes(pickle.dumps({"command": command_line(), "rows": rows}))


def _documents(rows: list[dict]) -> None:
    """Give every recorded chunk its stored document's id, read from the bench database
    the recording was made on (one query)."""
    from domains.models import Chunk as Stored

    chunks = [c for row in rows if row["inputs"] for s in row["inputs"]["sources"] for c in s.chunks
              if c.chunk_id is not None]
    documents = dict(Stored.objects.filter(id__in={c.chunk_id for c in chunks}).values_list("id", "document_id"))
    for chunk in chunks:
        chunk.document_id = documents.get(chunk.chunk_id)


def _cite(number, chunk_ids=None, texts=None) -> str:
    return f"[{number}]"


def narrowed(sources: list, k: int | None) -> list:
    """``sources`` cut to each domain's ``k`` best chunks and numbered again as
    :func:`domains.retrieval.group_sources` numbers them (a recording at a deeper k
    replayed at a smaller one); unchanged when ``k`` is None."""
    if k is None:
        return sources
    chunks = [(source, chunk) for source in sources for chunk in source.chunks]
    chunks.sort(key=lambda pair: -pair[1].score)  # stable: ties keep the recorded order
    kept: dict[str, int] = {}
    groups: dict[tuple[str, str], Source] = {}
    domains: list[str] = []
    for source, chunk in chunks:
        if kept.get(source.domain, 0) >= k:
            continue
        kept[source.domain] = kept.get(source.domain, 0) + 1
        if source.domain not in domains:
            domains.append(source.domain)
        key = (source.domain, source.file_name)
        if key not in groups:
            groups[key] = Source(0, source.file_name, [], source.metadata, source.domain)
        groups[key].chunks.append(chunk)
    out = [group for domain in domains for key, group in groups.items() if key[0] == domain]
    for number, source in enumerate(out, 1):
        source.number = number
    return out


def compose(inputs: dict, chosen: list | None = None) -> str:
    """The answer to the recorded ``inputs``; ``chosen``, when given, receives the
    passages it quotes (in answer order)."""
    import asyncio

    from chat.backends.extractive import biblio
    from chat.backends.extractive.passages import Composer

    reference = biblio.answer(inputs["question"], inputs["sources"], inputs["search_text"])
    if reference is not None:
        return f"{reference[1]} [{reference[0]}]"

    class Recording(Composer):
        def choose(self):
            passages = super().choose()
            if chosen is not None:
                chosen.extend(passages)
            return passages

    async def run() -> str:
        composer = Recording(inputs["vector"], inputs["sources"], inputs["question"], inputs["search_text"])
        return "".join([piece async for piece in composer.pieces(_cite)])

    return asyncio.run(run())


def leads_with_instruction(question: str, chosen: list) -> bool | None:
    """Whether the answer to a how-to question opens with an instruction (a code block,
    numbered steps, an imperative sentence: :func:`~chat.backends.extractive.fits.instructs`);
    None for a question of another shape."""
    from chat.backends.extractive.fits import instructs
    from chat.backends.extractive.shapes import shapes

    if "howto" not in shapes(question):
        return None
    return bool(chosen) and instructs(chosen[0].kind, chosen[0].text)


def explain(inputs: dict, evidence: str) -> None:
    """Print the ranked candidates of one question: the top 3 and the best one holding the
    evidence, with their score parts (cheap = lexical + retrieval + shape; cosine)."""
    import numpy as np

    from chat.backends.extractive import passages
    from chat.scoring.metrics import coverage
    from domains import embeddings

    composer = passages.Composer(inputs["vector"], inputs["sources"], inputs["question"], inputs["search_text"])
    idf = composer._idf()
    offered = composer.offered(idf)
    texts = [passages.embedded(p) for p in offered]
    cosines = embeddings.embed_cached(texts) @ inputs["vector"] if texts else np.array([])
    for p, cosine in zip(offered, cosines):
        p.cosine = float(cosine)
        p.score = p.cosine + p.cheap - passages.LENGTH_PENALTY * max(0, len(p.text) - passages.LENGTH_FREE) / passages.LENGTH_STEP
    print(f"   shapes {sorted(composer.shapes)}  terms {sorted(composer.wanted)}  idf "
          + " ".join(f"{t}={v:.2f}" for t, v in sorted(idf.items())))
    by_cheap = {id(p): i for i, p in enumerate(offered)}
    ranked = sorted(offered, key=lambda p: (-p.score, p.chunk.rank, p.start))
    holding = [p for p in ranked if coverage(evidence, p.text) >= 0.8]
    for p in ranked[:3] + holding[:1]:
        tag = "EVID" if p in holding else "    "
        print(f"   {tag} #{ranked.index(p)} cheap#{by_cheap[id(p)]} score {p.score:.3f} cos {p.cosine:.3f} "
              f"lex {p.lexical:.2f} cheap {p.cheap:.3f} src {p.chunk.number} rank {p.chunk.rank} "
              f"chunk {p.chunk.score:.2f} {p.kind}: " + p.text.replace("\n", " | ")[:160])
    if not holding:
        print("   (no candidate holds the evidence)")


def replay(path: Path, verbosity: int, misses: bool, only: str = "", k: int | None = None) -> None:
    import re

    from chat.scoring.metrics import EVIDENCE_COVERAGE, coverage, strip_citations

    from domains import embeddings

    data = pickle.loads(path.read_bytes())
    print(f"recorded by: {data['command']}" + (f"; replayed with each domain's {k} best chunks" if k else ""))
    # Passage vectors persist beside the recording (keyed as the process cache keys them:
    # backend, model, text), so a replay embeds only the passages the code now offers anew:
    # on a loaded machine a first replay takes minutes, the next ones seconds.
    vectors = path.with_name(path.name + ".vectors")
    embeddings.cache.maxsize = 10**6
    if vectors.exists():
        embeddings.cache._rows.update(pickle.loads(vectors.read_bytes()))
    _documents(data["rows"])
    totals: dict[str, list] = {}
    refused: dict[str, list[bool]] = {}
    for row in data["rows"]:
        inputs = row["inputs"]
        if only and not (inputs and only.lower() in inputs["question"].lower()):
            continue
        if row["evidence"] is None:  # off-topic: refused when not routed or nothing composed
            text = compose(dict(inputs, sources=narrowed(inputs["sources"], k))) if inputs else ""
            refused.setdefault(row["set"], []).append(not text.strip())
            if only or verbosity >= 2:
                print(f"{'refused ' if not text.strip() else 'ANSWERED'} {row['set']}: "
                      + (inputs["question"] if inputs else "(not routed)"))
                if text.strip() and (only or verbosity >= 3):
                    print("   answer: " + text.replace("\n", " | ")[:300])
            continue
        domain = row.get("domain") or (row["set"].rsplit("-", 1)[0] if row["set"][-1:].isdigit() else row["set"])
        if inputs:
            inputs = dict(inputs, sources=narrowed(inputs["sources"], k))
            chosen: list = []
            text = compose(inputs, chosen)
            lead = leads_with_instruction(inputs["question"], chosen)
            numbers = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
            cited = any(s.number in numbers and s.domain == domain and s.file_name == row["file"]
                        for s in inputs["sources"])
            pool = max((coverage(row["evidence"], "\n".join(c.text for c in s.chunks)) for s in inputs["sources"]),
                       default=0.0)
        else:
            text, cited, pool, lead = row["answer"], False, 0.0, None
        got = coverage(row["evidence"], strip_citations(text)) >= EVIDENCE_COVERAGE
        in_refs = pool >= EVIDENCE_COVERAGE if k else (row["references_coverage"] or 0) >= EVIDENCE_COVERAGE
        totals.setdefault(row["set"], []).append((got, in_refs, len(text), cited, lead))
        if only:
            print(f"{'ok' if got else 'MISS'} {inputs['question']}\n   answer: " + text.replace("\n", " | "))
            explain(inputs, row["evidence"])
        elif verbosity >= 2 or (misses and in_refs and not got):
            mark = "ok  " if got else ("MISS" if in_refs else "miss")
            how = {True: " [how-to: instruction first]", False: " [how-to: no instruction first]"}.get(lead, "")
            uncited = "" if cited else " [file not cited]"
            print(f"{mark} {row['set']}: {inputs['question'] if inputs else '(no answer call)'}{how}{uncited}")
            if not got and (verbosity >= 3 or misses):
                print("   evidence: " + row["evidence"].replace("\n", " ")[:300])
                print("   answer:   " + text.replace("\n", " ")[:500])
                if misses and inputs:
                    explain(inputs, row["evidence"])
    vectors.write_bytes(pickle.dumps(dict(embeddings.cache._rows)))
    groups = {"first sets": [t for name in FIRST for t in totals.get(name, [])],
              "second sets": [t for name in totals if name.endswith("-2") for t in totals[name]],
              "third sets": [t for name in HELD_OUT for t in totals.get(name, [])],
              "fourth sets": [t for name in FOURTH for t in totals.get(name, [])],
              "fifth sets": [t for name in FIFTH for t in totals.get(name, [])],
              "sixth, seventh": [t for name in SIXTH_SEVENTH for t in totals.get(name, [])],
              "eighth sets": [t for name in EIGHTH for t in totals.get(name, [])]}
    groups = {name: rows for name, rows in groups.items() if rows}
    where = "in the chunks given" if k else "in references"
    for name, rows in [*totals.items(), *groups.items(), ("all", [t for rows in groups.values() for t in rows])]:
        lengths = [r[2] for r in rows]
        howto = [r[4] for r in rows if r[4] is not None]
        print(f"{name:12} evidence in answer {sum(r[0] for r in rows):3d} / {len(rows):3d}"
              f"  file cited {sum(r[3] for r in rows):3d}  ({where} {sum(r[1] for r in rows):3d})"
              f"  median chars {statistics.median(lengths) if lengths else 0:.0f}"
              f"  how-to led by an instruction {sum(howto):2d} / {len(howto):2d}")
    for name, rows in refused.items():
        print(f"{name:12} refused {sum(rows):3d} / {len(rows):3d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("record", "replay"))
    parser.add_argument("file", type=Path, help="The recorded inputs (a pickle file).")
    parser.add_argument("-v", "--verbosity", type=int, default=1, help="2: one line per question; 3: misses' texts.")
    parser.add_argument("--misses", action="store_true", help="Show misses whose evidence is in the references.")
    parser.add_argument("--only", default="", help="Explain the questions holding this text.")
    parser.add_argument("--sets", nargs="+", choices=SETS + HELD_OUT + FOURTH + FIFTH + SIXTH_SEVENTH + EIGHTH + ON_REQUEST + OFF_TOPIC + OTHER,
                        default=SETS,
                        help="record: the question sets (default: the first and second sets).")
    parser.add_argument("--k", type=int, help="record: every domain's k (no reference budget); "
                        "replay: keep each domain's k best recorded chunks.")
    args = parser.parse_args()
    setup_django()
    if args.action == "record":
        record(args.file, args.k, tuple(args.sets))
    else:
        replay(args.file, args.verbosity, args.misses, args.only, args.k)


if __name__ == "__main__":
    main()
