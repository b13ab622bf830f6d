"""File conversion: one entry point, :func:`convert_file`, dispatching on the extension."""

from __future__ import annotations

from pathlib import Path

from .base import Block, ConversionError, ConvertedDocument
from .html import convert_html
from .markdown import convert_markdown
from .plain import convert_plain
from .rst import convert_rst
from .text_input import read_text

TEXT_CONVERTERS = {
    ".md": convert_markdown,
    ".markdown": convert_markdown,
    ".myst": convert_markdown,
    ".rst": convert_rst,
    ".rest": convert_rst,
    ".html": convert_html,
    ".htm": convert_html,
    ".txt": convert_plain,
    ".text": convert_plain,
}
SUPPORTED_EXTENSIONS = frozenset(TEXT_CONVERTERS)

__all__ = ["Block", "ConversionError", "ConvertedDocument", "SUPPORTED_EXTENSIONS", "convert_file"]


def convert_file(path: Path) -> ConvertedDocument:
    """Convert one file to blocks under heading chains.

    :raises ConversionError: unsupported extension, empty, binary or non-UTF-8 content,
        or a document with no text at all.
    """
    path = Path(path)
    converter = TEXT_CONVERTERS.get(path.suffix.lower())
    if converter is None:
        raise ConversionError("unsupported", f"{path.name}: unsupported file type '{path.suffix}'")
    text = read_text(path)
    document = convert_rst(text, str(path)) if converter is convert_rst else converter(text)
    if not document.blocks:
        raise ConversionError("no_text", f"{path.name}: no text left after conversion (only markup)")
    if not document.title:
        document.title = document.first_heading() or path.stem
    return document
