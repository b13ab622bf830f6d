"""Follow-ups in a conversation, on the extractive backend: the terse questions asked three ways.

bench/questions/terse.json holds in-domain questions that name their subject only by
"it" / "this" or are a few words long. Each is asked of its own domain alone (the
deployment most users have), on the bench database (bench/common.py), three ways:

- **alone**: no history;
- **after intro**: after "What is <the domain's subject>?" (INTRO), the question a
  follow-up's "it" stands for;
- **after other**: after the first question of the domain's first answer set, a question
  on another topic of the same domain.

A question :func:`chat.pipeline.follow_up.is_follow_up` takes for a follow-up is searched
together with the question before it in the last two; any other is searched as asked.
Reported per way: evidence in answer and file cited (chat.scoring), for every question
and for the follow-ups alone. No question is tuned on: this measures the merge.

    python bench/follow_ups.py          # one line per question, then the totals
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, setup_django  # noqa: E402

QUESTIONS = ROOT / "bench" / "questions"
INTRO = {"klea-docs": "What is Klea?", "xarray": "What is xarray?", "neuroml": "What is NeuroML?",
         "cooking": "What is based.cooking?"}
WAYS = ("alone", "after intro", "after other")


def main() -> None:
    setup_django()
    from asgiref.sync import async_to_sync

    from chat.pipeline import TurnRequest, ask
    from chat.pipeline.follow_up import is_follow_up
    from chat.scoring import load_questions
    from chat.scoring.metrics import score_turn
    from domains.models import Domain

    print(f"command: {command_line()}")
    domains = {d.name: d for d in Domain.objects.filter(active=True).prefetch_related("stores")}
    other = {name: load_questions(QUESTIONS / f"{name}.json")[0].question for name in INTRO}
    totals = {(way, subset): [0, 0, 0] for way in WAYS for subset in ("all", "follow-ups")}
    for q in load_questions(QUESTIONS / "terse.json"):
        follow_up = is_follow_up(q.question)
        marks = []
        for way in WAYS:
            before = {"after intro": INTRO[q.domain], "after other": other[q.domain]}.get(way)
            history = [{"role": "user", "content": before}, {"role": "assistant", "content": "-"}] if before else []
            result = async_to_sync(ask)(TurnRequest(q.question, domains=[domains[q.domain]], history=history))
            scored = score_turn(q, result)
            for subset in ("all", "follow-ups") if follow_up else ("all",):
                counts = totals[(way, subset)]
                counts[0] += 1
                counts[1] += scored.evidence_in_answer
                counts[2] += scored.file_cited
            marks.append(f"{way}: {'E' if scored.evidence_in_answer else '-'}{'F' if scored.file_cited else '-'}")
        print(f"{'follow-up' if follow_up else 'as asked '}  {' | '.join(marks)}  {q.question}", flush=True)
    print("\nE: evidence in answer, F: file cited")
    print(f"{'way':<12} {'questions':<11} {'n':>3} {'evidence':>9} {'file cited':>11}")
    for (way, subset), (n, evidence, cited) in totals.items():
        print(f"{way:<12} {subset:<11} {n:>3} {evidence:>9} {cited:>11}")


if __name__ == "__main__":
    main()
