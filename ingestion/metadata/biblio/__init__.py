"""Bibliographic metadata of PDFs: the five-tier cascade (docs/bibliography.md).

Entry point: :func:`extract_bibliography` (``ingestion.metadata.biblio.extract_bibliography``).
"""

from .cascade import extract_bibliography
from .doi import doi_key, normalize_doi

__all__ = ["extract_bibliography", "normalize_doi", "doi_key"]
