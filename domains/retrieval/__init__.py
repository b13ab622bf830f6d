"""Hybrid retrieval: dense + keyword lists per store, fused by RRF, recency-blended."""

from .engine import retrieve
from .fusion import RRF_K, reciprocal_rank_fusion
from .types import RetrievalResult, RetrievedChunk

__all__ = ["RRF_K", "RetrievalResult", "RetrievedChunk", "reciprocal_rank_fusion", "retrieve"]
