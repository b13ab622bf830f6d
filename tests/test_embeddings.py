"""The embedding contract for both backends: float32 (n, 384), L2-normalised; the int8
ONNX vectors stay at cosine >= 0.99 to the plain sentence-transformers ones."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from domains import embeddings

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
    query = embeddings.embed_query(TEXTS[0])  # queries: the fp32 reference model
    assert query.shape == (384,) and np.array_equal(query, embeddings.embed_texts_torch(TEXTS[:1])[0])
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
