"""Why a .docx file cannot be read, in one line (docling's own failure says only
"failure"). A .docx is a ZIP package whose main part is ``word/document.xml``;
:func:`check_package` runs before docling (cheap, and a file that is not a Word package
never loads docling's models), :func:`explain_failure` after docling failed.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from xml.parsers import expat

from .base import ConversionError

MAIN_PART = "word/document.xml"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the compound file of Word 97-2003 and of encrypted Office files
_ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
# The main part of the other Office formats: a file of one of them renamed .docx.
_OTHER_FORMATS = {"xl/workbook.xml": "an Excel workbook", "ppt/presentation.xml": "a PowerPoint presentation"}
_BLOCK = 1 << 16


def check_package(path: Path) -> None:
    """:raises ConversionError: ``encrypted`` (a password-protected Word file), ``broken``
    (not a ZIP package, a damaged one, another Office format, no ``word/document.xml``),
    each naming what is wrong."""
    name = path.name
    with path.open("rb") as fh:
        head = fh.read(len(_OLE_MAGIC))
        if head == _OLE_MAGIC:
            if _ENCRYPTION_INFO in fh.read(1 << 20):  # the directory names its streams in UTF-16
                raise ConversionError("encrypted", f"{name}: the Word file is protected with a password; "
                                                   "save it without one")
            raise ConversionError("broken", f"{name}: a Word 97-2003 (.doc) file, not .docx; save it as .docx")
    try:
        with zipfile.ZipFile(path) as package:
            names = set(package.namelist())
    except zipfile.BadZipFile as exc:
        what = "not a ZIP package (a .docx is one)" if not head.startswith(b"PK") else f"a damaged ZIP package ({exc})"
        raise ConversionError("broken", f"{name}: not a readable Word file: {what}") from None
    if MAIN_PART not in names:
        other = next((label for part, label in _OTHER_FORMATS.items() if part in names), None)
        what = f"{other} renamed .docx" if other else f"the package has no {MAIN_PART}"
        raise ConversionError("broken", f"{name}: not a Word document: {what}")


def explain_failure(path: Path) -> str | None:
    """What is wrong with a package :func:`check_package` accepted and docling could not
    read: a damaged or malformed main part (``"word/document.xml is not well-formed XML
    (line 3, column 14: mismatched tag)"``); None when nothing is found."""
    parser = expat.ParserCreate()
    try:
        with zipfile.ZipFile(path) as package, package.open(MAIN_PART) as part:
            while block := part.read(_BLOCK):
                parser.Parse(block, False)
            parser.Parse(b"", True)
    except expat.ExpatError as exc:
        detail = expat.ErrorString(exc.code)
        return f"{MAIN_PART} is not well-formed XML (line {exc.lineno}, column {exc.offset + 1}: {detail})"
    except (zipfile.BadZipFile, OSError, EOFError) as exc:  # a bad CRC, a truncated member
        return f"{MAIN_PART} is damaged ({(str(exc).splitlines() or [type(exc).__name__])[0][:200]})"
    return None
