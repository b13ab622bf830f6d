"""Hybrid retrieval: BM25 + dense lists per store, fused by RRF, recency-blended."""

from .acronyms import acronym_definitions, asked_acronym, expansion
from .bm25 import (Bm25Params, bm25_search, content_words, lexemes_and_language, query_lexemes, question_language,
                   shared_results)
from .engine import retrieve
from .filters import CompiledFilter, FieldSpec, compile_filter
from .fusion import RRF_K, RRF_WEIGHTS, convex_fusion, fuse, reciprocal_rank_fusion
from .neighbours import neighbour_chunks
from .probe import document_coverage, lexemes_in_use, lexical_coverage, nearest_chunk_similarity
from .references import ReferenceMaterial, Source, page_label, page_span, serialize_reference_material
from .types import RetrievalResult, RetrievedChunk
from .vector import VectorHits, vector_search

__all__ = [
    "RRF_K",
    "RRF_WEIGHTS",
    "Bm25Params",
    "CompiledFilter",
    "FieldSpec",
    "ReferenceMaterial",
    "RetrievalResult",
    "RetrievedChunk",
    "Source",
    "VectorHits",
    "acronym_definitions",
    "asked_acronym",
    "bm25_search",
    "compile_filter",
    "convex_fusion",
    "document_coverage",
    "expansion",
    "fuse",
    "lexical_coverage",
    "nearest_chunk_similarity",
    "neighbour_chunks",
    "page_label",
    "page_span",
    "query_lexemes",
    "question_language",
    "reciprocal_rank_fusion",
    "retrieve",
    "serialize_reference_material",
    "shared_results",
    "vector_search",
]
