"""Shared set-up of the benchmarks: a database of their own, SciFact, cached embeddings.

Benchmarks run against the database ``klea_bench`` (KLEA_BENCH_DATABASE) on the same
server as the product (embedded or DATABASE_URL), created and migrated on first use, so
benchmark rows never mix with the product's or the tests' data. Corpus embeddings are
cached under ``var/bench-cache`` (keyed by model and file hash) so reruns are fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "var" / "bench-cache"
BENCH_DATABASE = os.environ.get("KLEA_BENCH_DATABASE", "klea_bench")


def setup_django(database: str = BENCH_DATABASE) -> None:
    """Point Django at a benchmark database (created + migrated when missing)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")
    os.environ.setdefault("KLEA_LOG_LEVEL", "WARNING")
    from django.conf import settings

    import psycopg

    db = settings.DATABASES["default"]
    params = {
        "dbname": db["NAME"],
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
    }
    # OPTIONS: e.g. host=<socket folder> from DATABASE_URL's query string
    params = {**db.get("OPTIONS", {}), **{k: v for k, v in params.items() if v}}
    with psycopg.connect(**params, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')
    db["NAME"] = database
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def sha8(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:8]


def scifact_dir() -> Path:
    from django.conf import settings

    path = Path(settings.KLEA_CORPORA_DIR) / "beir_scifact"
    if not path.is_dir():
        raise SystemExit(f"SciFact not found at {path}; set KLEA_CORPORA_DIR")
    return path


def load_scifact():
    """(doc_ids, doc_texts, queries {qid: text}) with document = title + " " + text."""
    base = scifact_dir()
    ids, texts = [], []
    with open(base / "corpus.jsonl") as fh:
        for line in fh:
            row = json.loads(line)
            ids.append(row["_id"])
            texts.append((row.get("title", "") + " " + row.get("text", "")).strip())
    queries = {}
    with open(base / "queries.jsonl") as fh:
        for line in fh:
            row = json.loads(line)
            queries[row["_id"]] = row["text"]
    return ids, texts, queries


def load_qrels(split: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(scifact_dir() / "qrels" / f"{split}.tsv") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    return qrels


def cached_embeddings(name: str, texts: list[str], source: Path) -> np.ndarray:
    """Embeddings of ``texts`` (float32, L2-normalised), cached per model and file hash."""
    from django.conf import settings

    from domains import embeddings

    CACHE.mkdir(parents=True, exist_ok=True)
    model = settings.KLEA_EMBEDDING_MODEL.replace("/", "_")
    path = CACHE / f"{name}-{model}-{sha8(source)}-{len(texts)}.npy"
    if path.exists():
        return np.load(path)
    started = time.monotonic()
    print(f"embedding {len(texts)} texts for {name} (cached in {path.relative_to(ROOT)}) ...", flush=True)
    vectors = embeddings.embed_texts(texts)
    np.save(path, vectors)
    print(f"  {time.monotonic() - started:.0f} s", flush=True)
    return vectors


def command_line() -> str:
    return " ".join([Path(sys.executable).name, *sys.argv])


@contextlib.contextmanager
def daphne(root: Path, env: dict, log: Path):
    """A real daphne serving ``root``'s klea_site on a free local port, up once /health
    answers (at most about 2 minutes); terminated on exit.

    :yields: (port, the server's subprocess.Popen).
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "klea_site.asgi:application"], cwd=root, env=env, stdout=log.open("ab"),
                              stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield port, server
    finally:
        server.terminate()
        server.wait(30)
