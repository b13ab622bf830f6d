"""Reading text files safely: binary and non-UTF-8 files are refused with a clear reason."""

from __future__ import annotations

from pathlib import Path

from .base import ConversionError

SNIFF_BYTES = 8192


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 (a BOM is dropped).

    :raises ConversionError: ``empty`` for a zero-byte file, ``binary`` when the first
        8 KiB hold a NUL byte, ``not_utf8`` with the offset of the first bad byte.
    """
    data = Path(path).read_bytes()
    if not data.strip():
        raise ConversionError("empty", f"{path.name}: the file is empty")
    if b"\x00" in data[:SNIFF_BYTES]:
        raise ConversionError("binary", f"{path.name}: binary content in a text file (NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConversionError(
            "not_utf8",
            f"{path.name}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
        ) from None
