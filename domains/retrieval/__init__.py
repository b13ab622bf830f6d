"""Hybrid retrieval: dense + keyword lists per store, fused by RRF, recency-blended."""

from .engine import retrieve
from .fusion import RRF_K, reciprocal_rank_fusion
from .references import ReferenceMaterial, Source, serialize_reference_material
from .types import RetrievalResult, RetrievedChunk

__all__ = [
    "RRF_K",
    "ReferenceMaterial",
    "RetrievalResult",
    "RetrievedChunk",
    "Source",
    "reciprocal_rank_fusion",
    "retrieve",
    "serialize_reference_material",
]
