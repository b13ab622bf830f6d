"""The embedded PostgreSQL (domains/embedded_postgres.py) started the way daphne starts it:
in a fresh process whose logging is already at INFO (daphne's basicConfig) before the
settings load. pgserver's INFO lines (whole PostmasterInfo dumps) are not printed; its
warnings and errors are, and so is Klea's own INFO line.
"""

from __future__ import annotations

import subprocess
import sys

from django.conf import settings

# What daphne does before it loads the application: INFO to stderr; then the server starts
# (first run: initdb), is reused by a second start, and is stopped.
SCRIPT = """
import logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
from domains.embedded_postgres import ensure_embedded_postgres, stop_embedded_postgres
pgdata = Path(sys.argv[1])
try:
    print("first", file=sys.stderr, flush=True)
    ensure_embedded_postgres(pgdata)
    print("again", file=sys.stderr, flush=True)
    ensure_embedded_postgres(pgdata)
    print("level", logging.getLevelName(logging.getLogger("pgserver").getEffectiveLevel()), file=sys.stderr)
finally:
    print("stopped", stop_embedded_postgres(pgdata), file=sys.stderr)
"""


def test_a_server_start_logs_no_pgserver_info_lines(tmp_path):
    pgdata = tmp_path / "pgdata"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(pgdata)], cwd=settings.BASE_DIR, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "first",
        f"INFO domains.embedded_postgres: initialised the embedded PostgreSQL in {pgdata}",
        "again",
        "level WARNING",
        "stopped True",
    ]
