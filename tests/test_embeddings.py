"""The embedding contract for both backends: float32 (n, 384), L2-normalised; the int8
ONNX vectors stay at cosine >= 0.99 to the plain sentence-transformers ones. Warm start:
the models load before the first request and /health says so."""

from __future__ import annotations

import logging
import re
import threading
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client, override_settings

from domains import embeddings

from .pipeline_helpers import count_model_runs

TEXTS = [
    "Ion channels open.",
    "Neurons communicate through synapses.",
    "pip install pyneuroml",
    "What is the resting membrane potential of a cortical pyramidal cell?",
    "Getting started > Install\nUse pip to install the package, then validate your NeuroML files "
    "with `pynml -validate` before simulating them with jNeuroML or NEURON.",
    "x",
]


def test_default_backend_is_int8_onnx_and_keeps_the_contract():
    assert embeddings.backend() == "onnx-int8"
    vectors = embeddings.embed_texts(TEXTS)
    assert (vectors.shape, vectors.dtype) == ((6, 384), np.float32)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embeddings.embed_query(TEXTS[0])  # queries: the same backend as passages
    assert query.shape == (384,) and np.array_equal(query, vectors[0])
    reference = embeddings.embed_texts_torch(TEXTS)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= 0.99, cosines
    assert embeddings.embed_texts([]).shape == (0, 384)


def test_a_vector_does_not_depend_on_the_rest_of_the_batch():
    together = embeddings.embed_texts(TEXTS)
    one_by_one = np.vstack([embeddings.embed_texts([t]) for t in TEXTS])
    assert np.array_equal(together, one_by_one)


def test_torch_backend_and_bad_backend_setting():
    with override_settings(KLEA_EMBEDDING_BACKEND="torch"):
        assert embeddings.backend() == "torch"
        vectors = embeddings.embed_texts(TEXTS[:2])
        assert np.allclose(vectors, embeddings.embed_texts_torch(TEXTS[:2]))
    with override_settings(KLEA_EMBEDDING_BACKEND="gpu-magic"):
        with pytest.raises(embeddings.EmbeddingError, match=r"^KLEA_EMBEDDING_BACKEND='gpu-magic'; expected one of"):
            embeddings.embed_texts(["x"])


def test_warm_up_loads_the_model_and_makes_health_say_ready(monkeypatch, db):
    monkeypatch.setattr(embeddings, "_ready", threading.Event())  # as in a process that just started
    assert Client().get("/health").json()["ready"] is False
    embeddings.warm_up()
    assert embeddings.is_ready()
    assert Client().get("/health").json()["ready"] is True
    # the int8 model is now held by its per-process loader: queries and passages load nothing
    assert embeddings._onnx.cache_info().currsize >= 1
    hits = embeddings._onnx.cache_info().hits
    embeddings.embed_query("x")
    embeddings.embed_texts(["x"])
    assert embeddings._onnx.cache_info().hits == hits + 2


def test_warm_up_runs_its_follow_up_before_ready_and_survives_its_failure(monkeypatch, caplog):
    monkeypatch.setattr(embeddings, "_ready", threading.Event())
    seen = []
    embeddings.warm_up(then=lambda: seen.append(embeddings.is_ready()))
    assert seen == [False] and embeddings.is_ready()

    monkeypatch.setattr(embeddings, "_ready", threading.Event())
    with caplog.at_level(logging.ERROR, "klea.embeddings"):
        embeddings.start_warm_up(then=lambda: 1 / 0).join(timeout=60)
    assert embeddings.is_ready()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "warming up after the model load failed")]
    assert caplog.records[0].exc_info[0] is ZeroDivisionError


def test_the_vector_cache_embeds_each_text_once_and_keeps_at_most_maxsize(monkeypatch):
    runs = count_model_runs(monkeypatch)
    cache = embeddings.VectorCache(maxsize=2)
    first = cache.embed(TEXTS[:2], embeddings.embed_texts)
    assert len(runs) == 2 and np.array_equal(first, embeddings.embed_texts(TEXTS[:2]))
    runs.clear()
    # a repeated text and the cached ones: no model run; the result is the same rows
    again = cache.embed([TEXTS[1], TEXTS[0], TEXTS[1]], embeddings.embed_texts)
    assert runs == [] and np.array_equal(again, first[[1, 0, 1]])
    assert (cache.hits, cache.misses, len(cache)) == (3, 2, 2)
    # each kept row owns its 384 floats, so it does not keep the model's batch array alive
    assert [(row.base is None, row.nbytes) for row in cache._rows.values()] == [(True, 1536)] * 2
    # a third text evicts the least recently used one (TEXTS[1] was used last)
    cache.embed([TEXTS[2], TEXTS[2]], embeddings.embed_texts)
    assert (len(runs), len(cache)) == (1, 2)
    runs.clear()
    cache.embed([TEXTS[1]], embeddings.embed_texts)
    assert runs == []
    cache.embed([TEXTS[0]], embeddings.embed_texts)
    assert len(runs) == 1
    assert cache.embed([], embeddings.embed_texts).shape == (0, 384)
    assert embeddings.cache.maxsize == embeddings.CACHE_SIZE == 4096


def test_a_failed_warm_up_is_logged_and_leaves_the_process_not_ready(monkeypatch, caplog):
    monkeypatch.setattr(embeddings, "_ready", threading.Event())
    with override_settings(KLEA_EMBEDDING_BACKEND="gpu-magic"), caplog.at_level(logging.ERROR, "klea.embeddings"):
        embeddings.start_warm_up().join(timeout=60)
    assert not embeddings.is_ready()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "loading the embedding models failed")]
    assert caplog.records[0].exc_info[0] is embeddings.EmbeddingError


def test_prepare_models_reports_the_int8_model_and_the_load(db, monkeypatch):
    from domains.onnx_int8 import model_file

    monkeypatch.setattr(embeddings, "_ready", threading.Event())  # this process stays "not ready"

    embeddings.get_onnx_embedder()  # built by now (the first test run builds it once)
    path = model_file(Path(embeddings.model_path()), Path(settings.KLEA_EMBEDDING_CACHE_DIR))
    out = StringIO()
    call_command("prepare_models", stdout=out)
    assert out.getvalue().splitlines() == [f"passage model: {path} (already built)"]
    out = StringIO()
    call_command("prepare_models", "--check", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"passage model: {path} (already built)" and len(lines) == 2
    assert re.fullmatch(r"the embedding model loads in \d+\.\d s", lines[1])
    with override_settings(KLEA_EMBEDDING_BACKEND="torch"):
        out = StringIO()
        call_command("prepare_models", stdout=out)
    assert out.getvalue().splitlines()[0] == "passage model: all-MiniLM-L6-v2 (torch), nothing to build"
