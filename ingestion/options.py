"""How files are ingested: one set of options from the callers (``stores`` command, admin
upload form, ``Knowledge.add``) down to the steps and the Celery tasks.

A new option is a field here, read by the step it concerns, and offered by the callers
that expose it (docs/ingestion.md, "Adding an ingestion option").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings

from .convert import OCR_MODES

MIN_MAX_TOKENS = 32
# What staged chunks hold; a file staged in an older format is chunked again.
# 2: chunks carry their provenance (pages and line boxes, source lines and anchor).
# 3: chunk text is Markdown: fenced code, pipe tables with their header, inline code in
#    backticks (docs/ingestion.md, "Chunk text").
# 4: ordered list items keep their source's numbers ("3.", "1." repeated, "2)").
# 5: PDF list items (bullet glyphs, numbered lines) are one Markdown list block; no
#    control characters from symbol fonts.
# 6: Sphinx markup as Sphinx shows it: roles, admonitions led in bold, tab labels as
#    headings, csv/list tables as tables.
# 7: table rows as wide as the widest, a "|" in a cell escaped, a header's empty first
#    cell kept; Word tables: merged cells in their own columns, a title row a paragraph.
# 8: Word chunks record their lines in the text the document was converted to (the
#    source view shows it).
CHUNK_FORMAT = 8


def default_max_tokens() -> int:
    """The chunk size budget when none is given: ``KLEA_CHUNK_MAX_TOKENS`` (450 unless set;
    docs/configuration.md)."""
    return settings.KLEA_CHUNK_MAX_TOKENS


@dataclass(frozen=True)
class IngestOptions:
    """Options of one run, checked on creation.

    :param max_tokens: chunk size bound, in tokens of the embedding model (>= 32;
        default :func:`default_max_tokens`).
    :param ocr: ``auto`` (PDFs without a text layer) | ``on`` | ``off``.
    :param bm25_only: a new store gets mode ``bm25`` (no embeddings); an existing one
        must have it.
    :param force: redo unchanged files too (re-convert, re-embed).
    :param library: a BibTeX or CSL-JSON file whose records fill the folder's metadata
        map (docs/bibliography.md, "Reference-manager libraries"); remembered for the
        folder. "" = only the libraries in the folder.
    :raises ValueError: ``ocr`` not in auto/on/off, ``max_tokens`` below 32, a
        ``library`` that is not a file.
    """

    max_tokens: int = field(default_factory=default_max_tokens)
    ocr: str = "auto"
    bm25_only: bool = False
    force: bool = False
    library: str = ""

    def __post_init__(self) -> None:
        if self.library and not Path(self.library).expanduser().is_file():
            raise ValueError(f"library {self.library}: no such file")
        if self.ocr not in OCR_MODES:
            raise ValueError(f"ocr must be one of {', '.join(OCR_MODES)}, got {self.ocr!r}")
        if self.max_tokens < MIN_MAX_TOKENS:
            raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, got {self.max_tokens}")

    def chunking(self) -> dict:
        """What a StagedFile records of the options and of the staged chunks' format
        (:data:`CHUNK_FORMAT`): a change re-chunks the file."""
        return {"max_tokens": self.max_tokens, "ocr": self.ocr, "format": CHUNK_FORMAT}

    def as_dict(self) -> dict:
        """Plain JSON values (a job's ``arguments``, a Celery task's ``options``)."""
        return asdict(self)
