"""``stores pre-check DIR [--organise]``: which PDFs need OCR (docs/ingestion.md, "Steps").

A page is an image page when its text layer has fewer than 50 non-space characters; a
PDF needs OCR when at least half of its pages are image pages; an unreadable or
zero-page file needs OCR too. ``--organise`` copies (never moves) each PDF into
``DIR/ocr/`` or ``DIR/no-ocr/``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ingestion.outcomes import IngestError
from ingestion.sources import folder_paths, inside, resolve_directory, writable

from . import ConversionError
from .pdf import inspect_pdf

ORGANISED = ("ocr", "no-ocr")


@dataclass(frozen=True)
class PrecheckRow:
    """One PDF's verdict. ``note`` says why an unreadable file needs OCR."""

    file_name: str
    needs_ocr: bool
    pages: int
    image_pages: int
    characters: int
    note: str = ""

    @property
    def verdict(self) -> str:
        return "OCR" if self.needs_ocr else "no-OCR"


def list_pdfs(directory: Path) -> list[Path]:
    """PDFs under ``directory`` (recursively), skipping hidden, ignored and organised folders."""
    return sorted(
        p
        for p in folder_paths(directory)
        if p.is_file()
        and p.suffix.lower() == ".pdf"
        and p.relative_to(directory).parts[0] not in ORGANISED
        and inside(p, directory)  # a link out of the folder is never read
    )


def check_file(path: Path, directory: Path) -> PrecheckRow:
    name = path.relative_to(directory).as_posix()
    try:
        check = inspect_pdf(path)
    except ConversionError as exc:
        return PrecheckRow(name, True, 0, 0, 0, note=f"unreadable ({exc.reason})")
    except FileNotFoundError:
        return PrecheckRow(name, True, 0, 0, 0, note="unreadable (vanished during the run)")
    except OSError as exc:
        return PrecheckRow(name, True, 0, 0, 0, note=f"unreadable ({exc.strerror or exc})")
    return PrecheckRow(name, check.needs_ocr, check.pages, check.image_pages, check.characters)


def precheck_directory(directory: Path | str, organise: bool = False, on_file=None) -> list[PrecheckRow]:
    """Check every PDF of ``directory``.

    :param organise: copy each PDF into ``DIR/ocr`` or ``DIR/no-ocr``.
    :returns: one PrecheckRow per PDF, sorted by name (none for a folder without PDFs:
        nothing needs OCR there).
    :raises IngestError: not a directory; ``organise`` on a read-only folder.
    """
    directory = resolve_directory(directory)
    pdfs = list_pdfs(directory)
    rows = []
    for path in pdfs:
        row = check_file(path, directory)
        rows.append(row)
        if on_file:
            on_file(row)
    if organise and pdfs and not writable(directory):
        raise IngestError(f"{directory}: read-only folder; --organise copies into DIR/ocr and DIR/no-ocr")
    if organise:
        for path, row in zip(pdfs, rows):
            target = directory / ("ocr" if row.needs_ocr else "no-ocr") / row.file_name
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            except OSError as exc:
                raise IngestError(f"{target.parent}: cannot copy into it ({exc.strerror})") from None
    return rows
