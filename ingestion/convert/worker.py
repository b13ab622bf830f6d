"""Conversion in a separate process with bounded memory (docling and pdfium leak), and
the source view's pdfium work on a PDF (:mod:`domains.pdf_pages`: a page drawn, the
text layer of a page) under a time limit.

:class:`ConversionWorker` keeps one child process (``python -m
ingestion.convert.worker``) and sends it one file at a time over a pipe. While a file
converts, the parent polls the resident memory of the child and its own children (the
OCR engine's processes): above ``memory_limit_mb`` the child is killed and the file is retried once in a fresh process; a second overrun, a
crash or a timeout fails that file alone with a one-line reason. After a file, a child
above ``recycle_fraction`` of the limit is replaced before the next one, so leaks never
accumulate. The child imports no Django: it only converts.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from .base import ConversionError, ConvertedDocument

logger = logging.getLogger("klea.ingestion")

_HEADER = struct.Struct("!Q")
POLL_SECONDS = 0.2
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_PROJECT_DIR = Path(__file__).resolve().parents[2]


def _send(stream, payload) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:  # a raw pipe may take part of it
        written = stream.write(view)
        view = view[written if written is not None else 0:]
    stream.flush()


def _read_exact(stream, size: int) -> bytes:
    """``size`` bytes (a raw pipe returns short reads), fewer only at end of stream."""
    data = b""
    while len(data) < size:
        block = stream.read(size - len(data))
        if not block:
            break
        data += block
    return data


def _receive(stream):
    header = _read_exact(stream, _HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("conversion worker closed its pipe")
    (size,) = _HEADER.unpack(header)
    data = _read_exact(stream, size)
    if len(data) < size:
        raise EOFError("conversion worker closed its pipe")
    return pickle.loads(data)


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MiB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE_SIZE / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(child) for child in fh.read().split()]
    except (OSError, ValueError):
        pass
    return out


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, in MiB."""
    total, todo, seen = 0.0, [pid], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        total += rss_mb(current)
        todo += _children(current)
    return total


class ConversionWorker:
    """Convert files in a child process with a memory bound.

    ``with ConversionWorker(memory_limit_mb=3072) as worker: doc = worker.convert(path)``

    ``timeout`` counts seconds without a reply or a page of progress; ``file_timeout``
    (None: none) the seconds of a whole file, however many pages report progress.
    ``peak_rss_mb`` is the highest child RSS seen; ``processes`` counts children started.
    """

    def __init__(
        self, memory_limit_mb: int = 3072, timeout: float = 1800.0, recycle_fraction: float = 0.75,
        file_timeout: float | None = None,
    ):
        if memory_limit_mb < 64:
            raise ValueError(f"memory_limit_mb must be at least 64, got {memory_limit_mb}")
        self.memory_limit_mb = memory_limit_mb
        self.timeout = timeout
        self.file_timeout = file_timeout
        self.recycle_fraction = recycle_fraction
        self.peak_rss_mb = 0.0
        self.processes = 0
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> ConversionWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process and self._process.poll() is None else None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PROJECT_DIR), env.get("PYTHONPATH", "")]))
        env.setdefault("HF_HUB_OFFLINE", "1")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "ingestion.convert.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # unbuffered replies: select() then sees every progress message
            cwd=str(_PROJECT_DIR),
            env=env,
        )
        self.processes += 1
        return self._process

    def _stop(self, kill: bool = False) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            if kill:
                process.kill()
            else:
                try:
                    _send(process.stdin, None)
                except OSError:
                    process.kill()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def close(self) -> None:
        """Stop the child process (it exits after its current file)."""
        with self._lock:
            self._stop()

    def convert(self, path: Path, on_progress=None, **options) -> ConvertedDocument:
        """Convert ``path`` in the child (options as :func:`ingestion.convert.convert_file`).

        :param on_progress: called with (pages OCRed, pages to OCR) as the child reports them.

        :raises ConversionError: the converter's own errors; ``memory`` when the file
            needs more than the limit twice; ``crashed``; ``timeout``; ``file_timeout``
            after ``file_timeout`` seconds in all (the memory retry included).
        """
        path = Path(path)
        deadline = time.monotonic() + self.file_timeout if self.file_timeout is not None else None
        with self._lock:
            outcome = self._attempt(path, options, on_progress, deadline)
            if outcome == "memory":
                logger.warning("%s: over %d MB, retrying in a fresh process", path.name, self.memory_limit_mb)
                outcome = self._attempt(path, options, on_progress, deadline)
            if isinstance(outcome, ConvertedDocument):
                return outcome
            if isinstance(outcome, ConversionError):
                raise outcome
            raise ConversionError(outcome, _MESSAGES[outcome].format(
                name=path.name, limit=self.memory_limit_mb, seconds=self.file_timeout))

    def run(self, task: str, path: Path, **options):
        """The result of ``task`` (a function of :data:`TASKS`) on ``path`` with ``options``,
        run in the child within ``timeout`` seconds and the memory limit (no retry).

        :raises ConversionError: reason ``value`` with the task's ValueError's message,
            ``memory``, ``crashed``, ``timeout`` (the child is stopped and replaced).
        """
        path = Path(path)
        with self._lock:
            outcome = self._attempt(path, {**options, "task": task})
        if isinstance(outcome, ConversionError):
            raise outcome
        if isinstance(outcome, str):  # a task's result is never a str: the child was stopped
            raise ConversionError(outcome, _TASK_MESSAGES[outcome].format(
                name=path.name, task=task, limit=self.memory_limit_mb, seconds=self.timeout))
        return outcome

    def _attempt(self, path: Path, options: dict, on_progress=None, deadline: float | None = None):
        process = self._process if self._process and self._process.poll() is None else self._start()
        try:
            _send(process.stdin, (str(path), options))
        except OSError:
            self._stop(kill=True)
            return "crashed"
        started = time.monotonic()
        while True:
            ready, _, _ = select.select([process.stdout], [], [], POLL_SECONDS)
            rss = tree_rss_mb(process.pid)
            self.peak_rss_mb = max(self.peak_rss_mb, rss)
            if ready:
                try:
                    status, payload = _receive(process.stdout)
                except (EOFError, pickle.UnpicklingError):
                    self._stop(kill=True)
                    return "crashed"
                if status != "progress":
                    break
                if deadline is not None and time.monotonic() > deadline:
                    self._stop(kill=True)
                    return "file_timeout"
                started = time.monotonic()
                if on_progress:
                    on_progress(*payload)
                continue
            if rss > self.memory_limit_mb:
                self._stop(kill=True)
                return "memory"
            if process.poll() is not None:
                self._stop(kill=True)
                return "crashed"
            if time.monotonic() - started > self.timeout:
                self._stop(kill=True)
                return "timeout"
            if deadline is not None and time.monotonic() > deadline:
                self._stop(kill=True)
                return "file_timeout"
        if rss_mb(process.pid) > self.recycle_fraction * self.memory_limit_mb:
            self._stop()  # a fresh process for the next file
        if status == "ok":
            return payload
        reason, message = payload
        return ConversionError(reason, message)


_MESSAGES = {
    "memory": "{name}: conversion needs more than {limit} MB of memory (tried twice, each in a fresh process)",
    "crashed": "{name}: the converter crashed on this file",
    "timeout": "{name}: conversion took too long and was stopped",
    "file_timeout": "{name}: conversion (OCR) took longer than {seconds:g} s and was stopped; "
    "raise KLEA_CONVERT_FILE_TIMEOUT or split the file",
}


_TASK_MESSAGES = {
    "memory": "{name}: {task} needs more than {limit} MB of memory and was stopped",
    "crashed": "{name}: pdfium crashed on this file ({task})",
    "timeout": "{name}: {task} took longer than {seconds:g} s and was stopped",
}
# The work besides conversion the child does (:meth:`ConversionWorker.run`).
TASKS = {"draw_page": "domains.pdf_pages:draw_page", "text_layer": "domains.pdf_pages:text_layer"}


def _task(name: str):
    import importlib

    module, function = TASKS[name].split(":")
    return getattr(importlib.import_module(module), function)


def _serve() -> None:
    """Child loop: read (path, options), convert, reply ("ok", doc) or ("error", (reason,
    message)), after any number of ("progress", (pages done, pages to do)); with a
    ``task`` in the options, reply ("ok", that task's result) instead."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the pipe
    requests = sys.stdin.buffer
    from . import convert_file

    while True:
        try:
            request = _receive(requests)
        except EOFError:
            return
        if request is None:
            return
        path, options = request

        def progress(done: int, total: int) -> None:
            _send(replies, ("progress", (done, total)))

        task = options.pop("task", None)
        if task is not None:
            try:
                reply = ("ok", _task(task)(Path(path), **options))
            except ValueError as exc:
                reply = ("error", ("value", str(exc)))
            except Exception as exc:  # one bad file must not end the worker
                detail = (str(exc).splitlines() or [""])[0][:200]
                reply = ("error", ("crashed", f"{Path(path).name}: {task} failed ({type(exc).__name__}: {detail})"))
            _send(replies, reply)
            continue
        try:
            bibliography = options.pop("bibliography", False)
            document = convert_file(Path(path), on_page=progress, **options)
            if bibliography and Path(path).suffix.lower() == ".pdf":
                document.metadata["bibliography_tiers"] = _offline_tiers(Path(path), document)
            reply = ("ok", document)
        except ConversionError as exc:
            reply = ("error", (exc.reason, str(exc)))
        except MemoryError:
            reply = ("error", ("memory", f"{Path(path).name}: out of memory while converting"))
        except Exception as exc:  # one bad file must not end the worker
            detail = (str(exc).splitlines() or [""])[0][:200]
            reply = ("error", ("crashed", f"{Path(path).name}: conversion failed ({type(exc).__name__}: {detail})"))
        _send(replies, reply)


def _offline_tiers(path: Path, document: ConvertedDocument) -> tuple[list, bool]:
    """The bibliographic tiers that read the file alone, here under the child's time and
    memory limits (a hostile PDF's text must not stall the parent); for a scan they read
    its OCR output."""
    from ingestion.metadata.biblio.cascade import offline_tiers

    ocr = document.metadata.get("ocr") or {}
    if ocr.get("page_one"):
        return offline_tiers(path, first_pages_text=ocr.get("first_pages_text"), ocr_page_one=ocr["page_one"])
    return offline_tiers(path)


if __name__ == "__main__":
    _serve()
