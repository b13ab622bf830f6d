"""Small documents for the Python API tests, written to a temp folder and ingested.

Chosen (and measured with all-MiniLM-L6-v2) so that each retrieval strategy wins one
question: a paraphrase only dense search gets right (BASIC), a rare code only BM25
matches exactly (HYBRID), a two-part question whose second part the whole-question
embedding misses (FUSION).
"""

from __future__ import annotations

from pathlib import Path

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
TWO_PARTS = "How do I bake sourdough bread at home with flour and yeast, and what is the capital of Mongolia?"


def write_docs(folder: Path, names=None) -> Path:
    """Write DOCS (or the named subset) into ``folder``; :returns: ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names or DOCS:
        (folder / name).write_text(DOCS[name], encoding="utf-8")
    return folder
