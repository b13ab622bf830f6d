"""Small documents for the Python API tests, written to a temp folder and ingested.

Chosen (and measured with all-MiniLM-L6-v2) so that each retrieval strategy wins one
question: a paraphrase only dense search gets right (BASIC), a rare code only BM25
matches exactly (HYBRID), a two-part question whose second part the whole-question
embedding misses (FUSION).
"""

from __future__ import annotations

import threading
from pathlib import Path

from chat.rag import RetrievalStrategy

DOCS = {
    "sourdough.md": "# Sourdough\n\nTo bake sourdough bread, feed the starter, mix flour and water, let the dough "
    "rise overnight and bake it in a hot oven.",
    "flour.md": "# Bread flour\n\nBread flour has more protein than cake flour, which gives bread dough a stronger "
    "gluten network and a chewy crumb.",
    "yeast.md": "# Yeast breads\n\nBaking bread with commercial yeast is faster than with a sourdough starter; the "
    "dough rises in two hours.",
    "mongolia.md": "# Mongolia\n\nUlaanbaatar is the capital and largest city of Mongolia, home to nearly half of "
    "the country's population.",
    "paris.md": "# France\n\nParis is the capital of France and its largest city, on the river Seine.",
    "speed.md": "# Performance tuning\n\nTo speed up code execution, cache results, avoid repeated work and profile "
    "the hot loops before optimising.",
    "marathon.md": "# Marathon day\n\nThe program of the marathon: make sure runners run faster downhill and hydrate "
    "at every station.",
    "err1.md": "# Printer errors\n\nError KQ7731: the paper tray is empty.",
    "err2.md": "# Printer errors\n\nError KQ7713: the printer ran out of ink and means to stop.",
    "err3.md": "# Printer errors\n\nError QK1377: the printer lost its network connection.",
}

# question -> (top_k, files expected per strategy)
PARAPHRASE = "How can I make my program run faster?"
RARE_CODE = "What is KQ7731?"
THREE_PARTS = ("How do I bake sourdough bread at home with flour and yeast, what is the capital of Mongolia, and why "
               "did my printer lose its network connection?")


def write_docs(folder: Path, names=None) -> Path:
    """Write DOCS (or the named subset) into ``folder``; :returns: ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names or DOCS:
        (folder / name).write_text(DOCS[name], encoding="utf-8")
    return folder


class ListKnowledge:
    """A user-written knowledge (RAG accepts any object with this ``search``): returns its
    items (dicts) whatever top_k asks, and records each call."""

    def __init__(self, items, delay: float = 0.0):
        self.items = items
        self.calls: list[dict] = []
        self.delay = delay
        self._lock = threading.Lock()

    def search(self, query, top_k=5, filters=None, strategy=RetrievalStrategy.BASIC, **kwargs):
        with self._lock:
            self.calls.append({"query": query, "top_k": top_k, "filters": filters, "strategy": strategy, **kwargs})
        if self.delay:
            threading.Event().wait(self.delay)  # let concurrent calls interleave
        return list(self.items)


def items(n: int, score=lambda i: 1.0 - i / 100) -> list[dict]:
    """``n`` dict results f0.md, f1.md, ... scoring 1.0, 0.99, ..."""
    return [
        {"id": str(i), "text": f"Text {i}.", "score": score(i), "metadata": {"filename": f"f{i}.md"}}
        for i in range(n)
    ]
