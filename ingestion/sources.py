"""The source files of an ingested folder: listing, checks, names and content hashes."""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pathspec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from .convert import SUPPORTED_EXTENSIONS
from .outcomes import FileOutcome, IngestError

# Our own files in an ingested folder: never sources, never "unsupported".
OWN_FILES = {"metadata-map.template.json", "metadata-map.json"}
# Reference-manager libraries (ingestion.metadata.library): metadata, not sources.
LIBRARY_SUFFIXES = (".bib", ".json")
# The reason of a symbolic link out of the ingested folder (skipped, never read).
OUTSIDE_FOLDER = "outside_folder"
# A folder's list of paths that are not sources (gitignore patterns, relative to the
# folder; docs/ingestion.md, "Leaving files out"). Only the ingested folder's own file is read.
IGNORE_FILE = ".kleaignore"


def checked_path(raw, what: str = "path") -> str | Path:
    """``raw`` when it can name a file or folder.

    :raises TypeError: not a str or Path.
    :raises IngestError: an empty or blank string (``Path("")`` would be the current directory),
        or one with a NUL character.
    """
    if not isinstance(raw, (str, Path)):
        raise TypeError(f"a {what} must be a str or pathlib.Path, got {type(raw).__name__} ({raw!r})")
    if isinstance(raw, str) and not raw.strip():
        raise IngestError(f"empty {what} ({raw!r}); name it explicitly ('.' for the current directory)")
    if "\0" in str(raw):  # the OS cannot name such a file; os.stat would raise ValueError
        raise IngestError(f"{what} contains a NUL character ({str(raw)!r})")
    if not utf8_name(str(raw)):
        raise IngestError(f"{what} {shown_name(str(raw))!r} is not valid UTF-8 (shown with U+FFFD); rename it")
    return raw


def utf8_name(name: str) -> bool:
    """Whether a path name as Python lists it can be stored: a name whose bytes are not
    UTF-8 reads with lone surrogates (os.fsdecode), which PostgreSQL's text and JSON refuse
    (one such file in a folder failed the whole run and left its job running)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """``name`` with each byte that is not UTF-8 made U+FFFD: what can be stored and shown."""
    return os.fsencode(name).decode("utf-8", "replace")


def bad_name(file_name: str) -> FileOutcome:
    """The outcome of a source file whose name is not UTF-8 (``file_name``: its
    :func:`shown_name`): it alone fails, the others are ingested."""
    error = f"{file_name}: the file name is not valid UTF-8 (shown with U+FFFD); rename the file"
    return FileOutcome(file_name, "failed", error=error, reason="bad_name")


def resolve_directory(directory: Path | str) -> Path:
    """The folder as an absolute path. :raises IngestError: empty, or not a directory."""
    path = Path(checked_path(directory, "folder")).expanduser()
    if not path.is_dir():
        raise IngestError(f"{directory}: no such directory")
    return path.resolve()


def writable(directory: Path) -> bool:
    """Whether we may write into ``directory``: permitted, and not marked read-only by
    its mode bits (root may write anywhere; a folder without write bits, such as the
    shared corpora, is still left alone)."""
    try:
        mode = directory.stat().st_mode
    except OSError:
        return False
    return os.access(directory, os.W_OK) and bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


# Bounds on a .kleaignore, which may come with a third-party folder (a cloned docs
# repository): its patterns are matched against every path of the folder.
IGNORE_MAX_BYTES = 64 * 1024
IGNORE_MAX_PATTERNS = 1000
# '**' parts of one pattern (a pattern without '/' starts with an implicit one): each can
# match any number of folders, and two of them try a deep path at every pair of depths
# (a 2,000-folder path: 1 s a pattern).
IGNORE_MAX_ANY_DEPTH = 1
_ANY_DEPTH = ("(?:.+/)?", "(?:/.+)?")  # what pathspec makes of a leading and an inner '**'
_STAR_GROUPS = itertools.count()


def _star_chunks(glob: str) -> list[str]:
    """``glob`` (one path part) split at its ``*`` wildcards; a ``*`` escaped (``\\*``) or
    in a bracket expression (``[*]``) is no wildcard (pathspec's own bracket rules)."""
    chunks, start, i, end = [], 0, 0, len(glob)
    while i < end:
        char = glob[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            j = i + 1
            j += j < end and glob[j] in "!^"
            j += j < end and glob[j] == "]"
            while j < end and glob[j] != "]":
                j += 1
            i = j + 1 if j < end else i + 1
            continue
        if char == "*":
            chunks.append(glob[start:i])
            start = i + 1
        i += 1
    chunks.append(glob[start:])
    return chunks


class _IgnorePattern(GitIgnoreSpecPattern):
    """A gitignore pattern whose ``*`` wildcards match in linear time.

    pathspec makes each ``*`` a ``[^/]*``: Python's regex engine tries every way to share a
    name between them, so ``a*a*a*a*a*a*a*a*ab`` took 290 s on one 60-letter name (hours on
    longer ones). As in :func:`fnmatch.translate`, each ``*`` but the last in a part matches
    up to the first place the text after it fits, and never backtracks (a lookahead and a
    backreference make an atomic group): the same matches, since that text has a fixed length.
    """

    @staticmethod
    def _translate_segment_glob(pattern: str, range_error) -> str:
        translate = GitIgnoreSpecPattern._translate_segment_glob
        chunks = _star_chunks(pattern)
        if len(chunks) < 3:  # one "*" at most: nothing to share out
            return translate(pattern, range_error)
        head, *middle, tail = chunks
        regex = translate(head, range_error)
        for chunk in filter(None, middle):  # "**" inside a part is one "*"
            group = f"klea_star{next(_STAR_GROUPS)}"
            regex += f"(?=(?P<{group}>[^/]*?{translate(chunk, range_error)}))(?P={group})"
        return regex + "[^/]*" + translate(tail, range_error)


@lru_cache(maxsize=32)
def _ignore_spec(ignore_file: Path, mtime_ns: int, size: int) -> pathspec.GitIgnoreSpec:
    """The file's patterns (keyed on its mtime and size too, so an edited file is read again).

    :raises IngestError: over :data:`IGNORE_MAX_BYTES` or :data:`IGNORE_MAX_PATTERNS`, a
        pattern pathspec refuses, or one with over :data:`IGNORE_MAX_ANY_DEPTH` ``**`` parts."""
    if size > IGNORE_MAX_BYTES:
        raise IngestError(f"{ignore_file}: {size:,} bytes, over the {IGNORE_MAX_BYTES:,} a {IGNORE_FILE} may hold")
    with open(ignore_file, encoding="utf-8", errors="replace") as fh:
        lines = fh.read(IGNORE_MAX_BYTES + 1).splitlines()
    patterns = []
    for number, line in enumerate(lines, start=1):
        try:
            pattern = _IgnorePattern(line)
        except ValueError as exc:  # pathspec's GitIgnorePatternError
            raise IngestError(f"{ignore_file}, line {number}: not a gitignore pattern ({line!r}: {exc})") from None
        if pattern.include is None:  # blank or comment
            continue
        if sum(pattern.regex.pattern.count(part) for part in _ANY_DEPTH) > IGNORE_MAX_ANY_DEPTH:
            raise IngestError(f"{ignore_file}, line {number}: {line!r} has over {IGNORE_MAX_ANY_DEPTH} '**' parts "
                              "(a pattern without '/' counts one)")
        patterns.append(pattern)
    if len(patterns) > IGNORE_MAX_PATTERNS:
        raise IngestError(f"{ignore_file}: {len(patterns):,} patterns, over the {IGNORE_MAX_PATTERNS:,} "
                          f"a {IGNORE_FILE} may hold")
    # The "simple" backend is Python's re, which the atomic groups need (re2 has none).
    return pathspec.GitIgnoreSpec(patterns, backend="simple")


def _ignored(root: Path) -> pathspec.GitIgnoreSpec | None:
    """The patterns of ``root``'s :data:`IGNORE_FILE`, or None when it has none.

    :raises IngestError: the file is a link out of ``root``, or as :func:`_ignore_spec`."""
    ignore_file = root / IGNORE_FILE
    try:
        status = ignore_file.stat()
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    if not inside(ignore_file, root):
        raise IngestError(f"{ignore_file}: symbolic link to a path outside the folder; not followed")
    return _ignore_spec(ignore_file, status.st_mtime_ns, status.st_size)


def folder_paths(directory: Path) -> Iterator[Path]:
    """Every path under ``directory`` (an absolute folder), recursively, except hidden ones
    (a part starting with "."), those its :data:`IGNORE_FILE` names and those whose name
    is not UTF-8 (:func:`list_bad_names` reports them). Links are not checked here (see
    :func:`inside`)."""
    return (p for p in _visible_paths(directory) if utf8_name(relative_name(p, directory)))


def _visible_paths(directory: Path) -> Iterator[Path]:
    spec = _ignored(directory)
    for path in directory.rglob("*"):
        relative = path.relative_to(directory)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if spec is not None and spec.match_file(relative.as_posix()):
            continue
        yield path


def _target(path: Path) -> Path | None:
    """Where ``path`` leads once every link is followed; None for a link loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11)
        return None


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves inside ``root`` (an absolute, resolved folder): a symbolic
    link out of the folder (to /etc/passwd, or a folder elsewhere) is never followed."""
    target = _target(path)
    return target is not None and target.is_relative_to(root)


def _files(directory: Path) -> Iterator[Path]:
    """:func:`folder_paths` that are files inside the folder."""
    return (p for p in folder_paths(directory) if p.is_file() and inside(p, directory))


def list_source_files(directory: Path) -> list[Path]:
    """Supported files under ``directory``, recursively, sorted; hidden paths and those
    named by its :data:`IGNORE_FILE` skipped."""
    return sorted(p for p in _files(directory) if p.suffix.lower() in SUPPORTED_EXTENSIONS)


def require_files(directory: Path) -> list[Path]:
    """:func:`list_source_files`. :raises IngestError: there are none."""
    files = list_source_files(directory)
    if not files:
        bad = list_bad_names(directory)
        unnamed = f"; {len(bad)} whose name is not valid UTF-8: {', '.join(bad[:5])}" if bad else ""
        raise IngestError(
            f"{shown_name(str(directory))}: no files to ingest (supported: {', '.join(sorted(SUPPORTED_EXTENSIONS))}){unnamed}"
        )
    return files


def list_unsupported(directory: Path) -> list[Path]:
    """Visible files of other types (images, archives, JSON that is not CSL-JSON...),
    reported but never ingested. Libraries and our map files are not listed: they are metadata."""
    return sorted(
        p
        for p in _files(directory)
        if p.suffix.lower() not in SUPPORTED_EXTENSIONS and not is_library(p) and p.name not in OWN_FILES
    )


def list_bad_names(directory: Path) -> list[str]:
    """The :func:`shown_name` (relative to ``directory``) of each file of a supported type
    whose name is not UTF-8: never read, reported as :func:`bad_name` outcomes."""
    return sorted(
        shown_name(relative_name(p, directory))
        for p in _visible_paths(directory)
        if not utf8_name(relative_name(p, directory)) and Path(shown_name(p.name)).suffix.lower() in SUPPORTED_EXTENSIONS
        and p.is_file() and inside(p, directory)
    )


def list_outside_links(directory: Path) -> list[Path]:
    """Visible symbolic links under ``directory`` (to files or folders) that lead outside it:
    not followed, reported as :func:`outside_link` outcomes. Broken links and loops are left out."""
    return sorted(
        p
        for p in folder_paths(directory)
        if p.is_symlink() and _target(p) is not None and p.exists() and not inside(p, directory)
    )


def outside_link(file_name: str) -> FileOutcome:
    """The outcome of a link out of the ingested folder: skipped, never read."""
    error = f"{file_name}: symbolic link to a path outside the folder; not followed"
    return FileOutcome(file_name, "skipped", error=error, reason=OUTSIDE_FOLDER)


def is_library(path: Path) -> bool:
    """A reference-manager export: ``*.bib``, or ``*.json`` holding a JSON array (CSL-JSON;
    other JSON files, such as a ground-truth table, are not libraries)."""
    suffix = path.suffix.lower()
    if suffix == ".bib":
        return True
    if suffix != ".json":
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return head.startswith(b"[")


def unreadable(file_name: str, exc: OSError) -> FileOutcome:
    """The outcome of a file that vanished or could not be read mid-run: it alone fails."""
    if isinstance(exc, FileNotFoundError):
        return FileOutcome(file_name, "failed", error=f"{file_name}: vanished during the run", reason="missing")
    detail = exc.strerror or str(exc)
    return FileOutcome(file_name, "failed", error=f"{file_name}: cannot be read ({detail})", reason="unreadable")


def relative_name(path: Path, directory: Path) -> str:
    return path.relative_to(directory).as_posix()


def sha256(path: Path) -> str:
    """Hex sha256 of the file bytes: a document's ``content_hash``."""
    with Path(path).open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
