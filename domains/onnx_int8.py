"""A faster all-MiniLM-L6-v2: ONNX Runtime with SmoothQuant'ed dynamic int8.

Built once from the packaged PyTorch weights and cached on disk (``build``):

1. export to ONNX (eager attention, so ONNX Runtime fuses it) and fuse the BERT
   graph (Attention, SkipLayerNormalization, BiasGelu);
2. SmoothQuant (Xiao et al. 2023, alpha = 0.6): per input channel j of every int8
   matmul, s_j = max|X_j|^a / max|W_j|^(1-a) from calibration activations; an explicit
   ``Mul(X, 1/s)`` before the matmul and ``diag(s) W`` keep the product exact while
   taming BERT's outlier channels. The calibration text is the model card shipped with
   the model, so the build is deterministic;
3. dynamic int8 (per-channel weights, per-tensor activations) for the attention and
   every linear layer except the feed-forward output, whose GELU activations are too
   skewed for per-tensor scales: it gets 8-bit block-quantised weights (block 32) with
   block-wise int8 activations (MatMulNBits, accuracy level 4).

Measured in bench/ingest.py: every vector at cosine >= 0.997 to sentence-transformers'
fp32 vector on SciFact documents and queries, about 2x the chunks per CPU second.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

logger = logging.getLogger("klea.embeddings")

RECIPE = "smoothquant0.6-int8-ffnout-nbits8b32-v1"
ALPHA = 0.6
_FFN_OUT = re.compile(r"/layer\.\d+/output/dense/MatMul$")


def _export(model_dir: Path, out: Path) -> None:
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.ones(2, 16, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 10:] = 0  # a padded row, so the mask path is traced
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "sequence"} for name in names + ["last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(
            Wrapper(bert), (ids, mask, torch.zeros_like(ids)), str(out), input_names=names,
            output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )


def _fuse(model_dir: Path, src: Path, out: Path) -> None:
    from onnxruntime.transformers import optimizer

    config = json.loads((model_dir / "config.json").read_text())
    fused = optimizer.optimize_model(
        str(src), model_type="bert", num_heads=config["num_attention_heads"], hidden_size=config["hidden_size"],
        opt_level=1,
    )
    fused.save_model_to_file(str(out))


def calibration_texts(model_dir: Path) -> list[str]:
    """Paragraphs of the model card (README.md) shipped with the model."""
    text = (model_dir / "README.md").read_text(encoding="utf-8")
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 4]


def _smooth(model, model_dir: Path, tokenizer) -> list[str]:
    """Insert SmoothQuant scales in place. :returns: names of the feed-forward output
    matmuls, which stay out of dynamic int8."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    ffn_out = [n.name for n in graph.node if n.op_type == "MatMul" and _FFN_OUT.search(n.name) and "attention" not in n.name]
    targets = [
        n for n in graph.node
        if (n.op_type == "MatMul" and n.input[1] in weights and n.name not in ffn_out) or n.op_type == "Attention"
    ]
    activations = sorted({n.input[0] for n in targets})
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in activations:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    act_max: dict[str, np.ndarray] = {}
    for text in calibration_texts(model_dir):
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        for name, value in zip(activations, session.run(activations, {k: v for k, v in feed.items() if k in inputs})):
            current = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            act_max[name] = np.maximum(act_max[name], current) if name in act_max else current
    muls = {}
    for name in activations:
        consumers = [n for n in targets if n.input[0] == name]
        w_max = np.max([np.abs(numpy_helper.to_array(weights[n.input[1]])).max(axis=1) for n in consumers], axis=0)
        scale = (np.maximum(act_max[name], 1e-5) ** ALPHA / np.maximum(w_max, 1e-5) ** (1 - ALPHA)).astype(np.float32)
        graph.initializer.append(numpy_helper.from_array((1.0 / scale).astype(np.float32), f"{name}_smooth_inv"))
        muls[f"{name}_smoothed"] = helper.make_node("Mul", [name, f"{name}_smooth_inv"], [f"{name}_smoothed"])
        for node in consumers:
            weight = weights[node.input[1]]
            weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * scale[:, None], weight.name))
            node.input[0] = f"{name}_smoothed"
    nodes = list(graph.node)
    del graph.node[:]
    for node in nodes:  # each Mul right before its first consumer keeps the order topological
        for name in node.input:
            if name in muls:
                graph.node.append(muls.pop(name))
        graph.node.append(node)
    return ffn_out


def build(model_dir: Path, out: Path) -> None:
    """Build the int8 model of ``model_dir`` (a BERT sentence-transformers folder) at ``out``.

    :raises ImportError: onnx, onnxruntime or onnx_ir missing.
    """
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    root = logging.getLogger()
    level = root.level
    # The exporter and quantizers warn about things that do not apply here (tracing a
    # fixed-depth BERT, "consider pre-processing"); the result is checked in bench/.
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _build(model_dir, out)
    finally:
        root.setLevel(level)


def _build(model_dir: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    for noisy in ("onnxruntime.quantization", "onnxruntime.transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="klea-onnx-") as tmp:
        tmp_dir = Path(tmp)
        _export(model_dir, tmp_dir / "fp32.onnx")
        _fuse(model_dir, tmp_dir / "fp32.onnx", tmp_dir / "fused.onnx")
        model = onnx.load(str(tmp_dir / "fused.onnx"))
        ffn_out = _smooth(model, model_dir, tokenizer(model_dir))
        onnx.save(model, str(tmp_dir / "smoothed.onnx"))
        quantize_dynamic(
            str(tmp_dir / "smoothed.onnx"), str(tmp_dir / "int8.onnx"), weight_type=QuantType.QInt8,
            per_channel=True, op_types_to_quantize=["MatMul", "Attention"], nodes_to_exclude=ffn_out,
            extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        config = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True, accuracy_level=4, bits=8)
        blocks = MatMulNBitsQuantizer(
            onnx.load(str(tmp_dir / "int8.onnx")), bits=8, block_size=32, is_symmetric=True, accuracy_level=4,
            algo_config=config,
        )
        blocks.process()
        blocks.model.save_model_to_file(str(tmp_dir / "final.onnx"), use_external_data_format=False)
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp_dir / "final.onnx", out)


def model_file(model_dir: Path, cache_dir: Path) -> Path:
    """Where the built model for ``model_dir`` lives in ``cache_dir`` (built or not): the
    name changes with the weights (a digest of their bytes, not their file time, so that a
    fresh install of the same weights finds the model another install built), the recipe
    and the ONNX Runtime version."""
    import onnxruntime

    return cache_dir / f"{model_dir.name}-{_weights_digest(model_dir / 'model.safetensors')}-{RECIPE}-ort{onnxruntime.__version__}.onnx"


@functools.lru_cache(maxsize=4)
def _weights_digest(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of ``path`` (about 0.1 s for the 90 MB
    weights; once per process)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()[:16]


def cached_model(model_dir: Path, cache_dir: Path) -> Path:
    """The built model for ``model_dir`` in ``cache_dir``, building it once (file lock,
    so concurrent processes build it only once)."""
    out = model_file(model_dir, cache_dir)
    if out.is_file():
        return out
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.is_file():
            logger.info("building the int8 ONNX embedding model (once) at %s", out)
            build(model_dir, out)
    return out


def tokenizer(model_dir: Path):
    """The model's word-piece tokenizer, truncating like sentence-transformers."""
    from tokenizers import Tokenizer

    config = json.loads((model_dir / "sentence_bert_config.json").read_text())
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(int(config.get("max_seq_length", 256)))
    tok.no_padding()
    return tok


class OnnxEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings from the int8 model.

    ``OnnxEmbedder(model_dir, cache_dir).encode(["text"])`` -> float32 array (n, hidden size).

    One sequence per call, several calls in parallel threads (ONNX Runtime releases the
    GIL): dynamic quantisation scales are per tensor, so a batch would make a text's
    vector depend on its neighbours and padding; alone, it is the same every time.
    """

    def __init__(self, model_dir: Path, cache_dir: Path, threads: int | None = None):
        import onnxruntime as ort

        self.model_dir = Path(model_dir)
        self.path = cached_model(self.model_dir, Path(cache_dir))
        self.threads = threads or min(os.cpu_count() or 1, 4)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        # Spinning threads burn CPU that the other workers of a shared machine need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = tokenizer(self.model_dir)
        self.dimension = json.loads((self.model_dir / "config.json").read_text())["hidden_size"]
        self.pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="klea-embed")

    def _one(self, ids: list[int]) -> np.ndarray:
        row = np.array([ids], dtype=np.int64)
        feed = {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}
        hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0][0]
        pooled = hidden.mean(axis=0)
        norm = np.linalg.norm(pooled)
        return pooled / norm if norm else pooled

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; longest first so the threads finish together. One text (a
        question) runs on the calling thread: a hand-off to the pool would only add a
        wait for a core on a busy machine."""
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(encodings), self.dimension), dtype=np.float32)
        if len(encodings) == 1:
            out[0] = self._one(encodings[0].ids)
            return out
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        for index, vector in zip(order, self.pool.map(lambda i: self._one(encodings[i].ids), order)):
            out[index] = vector
        return out
