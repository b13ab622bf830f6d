"""Routing alone, on the extractive backend: which questions are refused, misrouted or let in.

Routes every question of bench/questions/*.json (every set, later ones included) on the
bench database (bench/common.py; the four domains of bench/answers.py) two ways:

- **all domains**: against every active domain, as a user who ticks none. An in-domain
  question is *refused* (routed nowhere) or *misrouted* (its domain not among those
  routed); an off-topic question is *accepted* when routed anywhere.
- **one domain**: against its own domain alone, the deployment most users have (``make
  run`` serves one demo domain). An in-domain question is *refused* when that domain does
  not take it; an off-topic question is asked of each domain alone, and every domain that
  takes it counts as one acceptance.

No answer is composed (that is bench/answers.py); each question costs one embedding and
the probes of :mod:`chat.backends.extractive.routing`. Besides the answer sets,
``off-topic-2`` holds general-knowledge, other-software, chit-chat and dummy-"it" questions
("Is it worth ...?"), and ``terse`` in-domain questions that name their subject only by
"it" / "this" or are a few words long (the shapes a one-domain user types).

Column ``follow-ups`` counts the questions :func:`chat.pipeline.follow_up.is_follow_up`
takes for follow-ups: asked after another question, they would be routed and searched
together with it (a self-contained question should not be; most of ``terse`` should).

    python bench/routing.py                     # all sets; every refusal and acceptance listed
    python bench/routing.py --sets klea-docs off-topic off-topic-2 --json var/routing.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, setup_django  # noqa: E402

QUESTIONS = ROOT / "bench" / "questions"


def route(question: str, domains: list) -> tuple[list[str], dict[str, float]]:
    """The domains the extractive backend routes ``question`` to (best first) and every
    domain's score (see :mod:`chat.backends.extractive.routing`)."""
    from chat.backends.extractive import routing
    from domains import embeddings

    vector = embeddings.embed_query(question)
    routed = [s.domain.name for s in routing.classify(vector, domains, question)]
    scores = {s.domain.name: round(s.score, 3) for s in routing.score_domains(vector, domains, question)}
    return routed, scores


def main() -> None:
    names = sorted(p.stem for p in QUESTIONS.glob("*.json"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", choices=names, default=names, help="Question sets (default: all).")
    parser.add_argument("--json", metavar="FILE", help="Also write every question's routes and scores here.")
    args = parser.parse_args()
    setup_django()
    from chat.pipeline.follow_up import is_follow_up
    from chat.scoring import load_questions
    from domains.models import Domain

    domains = list(Domain.objects.filter(active=True).prefetch_related("stores").order_by("name"))
    by_name = {d.name: d for d in domains}
    print(f"command: {command_line()}")
    print(f"domains: {', '.join(by_name)}")
    started = time.monotonic()
    rows, lines, problems = [], [], []
    for name in args.sets:
        questions = load_questions(QUESTIONS / f"{name}.json")
        counts = {"n": len(questions), "all_refused": 0, "all_misrouted": 0, "one_refused": 0,
                  "all_accepted": 0, "one_accepted": 0, "follow_ups": 0}
        for q in questions:
            routed, scores = route(q.question, domains)
            row = {"set": name, "question": q.question, "domain": q.domain, "routed": routed, "scores": scores,
                   "follow_up": is_follow_up(q.question)}
            counts["follow_ups"] += row["follow_up"]
            if q.off_topic:
                alone = [d.name for d in domains if route(q.question, [d])[0]]
                row["accepted_alone"] = alone
                counts["all_accepted"] += bool(routed)
                counts["one_accepted"] += len(alone)
                if routed or alone:
                    problems.append(f"  {name}: {q.question!r} accepted: all domains {routed or '-'}, "
                                    f"alone {alone or '-'}; scores {scores}")
            else:
                alone, alone_scores = route(q.question, [by_name[q.domain]])
                row["routed_alone"] = alone
                row["score_alone"] = alone_scores[q.domain]
                counts["all_refused"] += not routed
                counts["all_misrouted"] += bool(routed) and q.domain not in routed
                counts["one_refused"] += not alone
                if q.domain not in routed or not alone:
                    problems.append(f"  {name}: {q.question!r} ({q.domain}): all domains -> {routed or 'refused'}, "
                                    f"alone -> {alone or 'refused'}; scores {scores}")
            rows.append(row)
        lines.append((name, counts, questions[0].off_topic if questions else False))

    print(f"\n{'set':<14} {'n':>4}  all domains: refused misrouted accepted | one domain: refused accepted"
          " | follow-ups")
    for name, c, off in lines:
        if off:
            # accepted alone: out of n questions x len(domains) single-domain deployments
            print(f"{name:<14} {c['n']:>4}  {'':>21} {c['all_accepted']:>8} | {'':>19} "
                  f"{c['one_accepted']}/{c['n'] * len(domains)} | {c['follow_ups']}")
        else:
            print(f"{name:<14} {c['n']:>4}  {c['all_refused']:>21} {c['all_misrouted']:>9} {'':>8} | "
                  f"{c['one_refused']:>19} {'':>8} | {c['follow_ups']}")
    inside = [c for _, c, off in lines if not off]
    outside = [c for _, c, off in lines if off]
    n_in, n_off = sum(c["n"] for c in inside), sum(c["n"] for c in outside)
    print(f"in-domain {n_in}: refused {sum(c['all_refused'] for c in inside)}, misrouted "
          f"{sum(c['all_misrouted'] for c in inside)} (all domains); refused "
          f"{sum(c['one_refused'] for c in inside)} (own domain alone); follow-ups "
          f"{sum(c['follow_ups'] for c in inside)}")
    print(f"off-topic {n_off}: accepted {sum(c['all_accepted'] for c in outside)} (all domains); "
          f"{sum(c['one_accepted'] for c in outside)}/{n_off * len(domains)} (each domain alone); follow-ups "
          f"{sum(c['follow_ups'] for c in outside)}")
    if problems:
        print("\nrefused, misrouted or accepted:\n" + "\n".join(problems))
    print(f"{len(rows)} questions in {time.monotonic() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
