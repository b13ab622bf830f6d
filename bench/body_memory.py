"""Peak memory of a real daphne receiving one large request body, and what it answered.

Starts ``daphne klea_site.asgi:application`` (no model warm-up) from ``--root`` (this
checkout by default; point it at an older checkout to measure before a change) on a free
loopback port, with DATABASE_URL from the environment, then sends one body per case from
a fresh server: a multipart form POST to ``/health`` (Content-Length announced), a
chunked POST to ``/api/query`` (no length) and a multipart POST to the admin upload page
(whose limit, KLEA_UPLOAD_MAX_BYTES, admits it), all without an account. Printed per case:
the status line, the seconds until the answer, daphne's resident memory before (VmRSS)
and its peak (VmHWM), MiB.

    python bench/body_memory.py --mib 100
    python bench/body_memory.py --mib 100 --root /path/to/older/checkout
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import daphne  # noqa: E402

PIECE = 2**20


def memory_mib(pid: int) -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {name: int(fields[name].split()[0]) // 1024 for name in ("VmRSS", "VmHWM")}


def send(port: int, head: bytes, size: int, chunked: bool) -> tuple[str, float]:
    """Send ``head`` and ``size`` bytes of body; return the status line and the seconds taken."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=600) as sock:
        sock.sendall(head)
        piece = b"x" * PIECE
        try:
            for _ in range(size // PIECE):
                sock.sendall(b"%x\r\n%s\r\n" % (PIECE, piece) if chunked else piece)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused early and closed
        answer = sock.recv(65536)
    return answer.split(b"\r\n", 1)[0].decode(), time.monotonic() - started


def case(root: Path, name: str, head_for, size: int, chunked: bool, log: Path) -> dict:
    env = {**os.environ, "KLEA_WARM_START": "false", "REDIS_URL": "", "PYTHONPATH": str(root)}
    with daphne(root, env, log) as (port, server):
        before = memory_mib(server.pid)["VmRSS"]
        status, seconds = send(port, head_for(size), size, chunked)
        time.sleep(1.0)  # let the app finish with the body
        return {"case": name, "body_mib": size // PIECE, "answer": status, "seconds": round(seconds, 1),
                "rss_before_mib": before, "peak_rss_mib": memory_mib(server.pid)["VmHWM"]}


def form_head(size: int) -> bytes:
    return (b"POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n" % size)


def upload_head(size: int) -> bytes:
    return (b"POST /admin/ingestion/ingestionjob/upload/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n" % size)


def chunked_head(size: int) -> bytes:
    return (b"POST /api/query HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=100, help="body size, MiB")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout daphne serves")
    args = parser.parse_args()
    log = Path("/tmp") / f"body-memory-{os.getpid()}.log"
    print(f"$ python bench/body_memory.py --mib {args.mib} --root {args.root}")
    for name, head_for, chunked in [("multipart POST /health", form_head, False),
                                    ("chunked POST /api/query", chunked_head, True),
                                    ("multipart POST to the upload page (under its limit)", upload_head, False)]:
        print(json.dumps(case(args.root.resolve(), name, head_for, args.mib * PIECE, chunked, log)))


if __name__ == "__main__":
    main()
