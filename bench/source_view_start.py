"""Benchmark: the first source-view call of a fresh process (the first "Show in source"
after a server start), against the calls after it.

Each run is a new Python process that reads the text layer of page 1 of a PDF through
:func:`domains.sources.text_layer` (what ``GET /api/chunks/<id>/source?quote=`` does for a
quote) three times, then draws the page once: the first call also starts the pdfium child
(ingestion/convert/worker.py). Prints the seconds of each call, per run.

    nice -n 10 .venv/bin/python bench/source_view_start.py --runs 2
    nice -n 10 .venv/bin/python bench/source_view_start.py --pdf path/to/file.pdf
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_RUN = """
import os, sys, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")
django.setup()
from pathlib import Path
from domains import sources
path = Path(sys.argv[1])
times = []
for _ in range(3):
    started = time.perf_counter()
    sources.text_layer(path, 1)
    times.append(time.perf_counter() - started)
started = time.perf_counter()
sources._pdf_task(path, path.name, "page 1", "draw_page", page=1, width=800, name=path.name)
times.append(time.perf_counter() - started)
print(" ".join(f"{t:.2f}" for t in times))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", type=Path, default=None, help="a PDF (default: the corpus's first text PDF)")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    corpora = Path(os.environ.get("KLEA_CORPORA_DIR") or ROOT.parent / "shared" / "corpora")
    pdf = args.pdf or sorted((corpora / "pdfs").glob("*.pdf"))[0]
    print(f"{pdf.name}: seconds of text layer 1st, 2nd, 3rd call, then a page drawn")
    for run in range(1, args.runs + 1):
        done = subprocess.run([sys.executable, "-c", ONE_RUN, str(pdf)], cwd=ROOT, capture_output=True, text=True,
                              check=True)
        print(f"run {run}: {done.stdout.strip()}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
