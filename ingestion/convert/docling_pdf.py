"""docling's standard PDF pipeline (layout model, table structure, optional OCR), used
only when its models can be loaded; the check runs once per process.

``DOCLING_DEVICE`` (auto, cpu, cuda, mps) and ``DOCLING_NUM_THREADS`` (default 4) set
its accelerator. ``HF_HUB_OFFLINE`` defaults to 1 so a missing model is a fast,
logged fall-back instead of a download attempt; point ``DOCLING_ARTIFACTS_PATH`` at
pre-downloaded models (``docling-tools models download``) in production.
"""

from __future__ import annotations

import os
from pathlib import Path

from .base import ConversionError, ConvertedDocument
from .docling_doc import docling_blocks

PIPELINES = ("auto", "standard", "native")
STANDARD_CONVERTER = "pdf: docling standard pipeline (layout model{ocr})"

_cache: dict[str, object] = {}


def accelerator_options():
    from docling.datamodel.accelerator_options import AcceleratorOptions

    return AcceleratorOptions(
        device=os.environ.get("DOCLING_DEVICE", "auto") or "auto",
        num_threads=int(os.environ.get("DOCLING_NUM_THREADS", "4") or 4),
    )


class StandardPdf:
    """Converters of the standard pipeline, with and without OCR, built on first use."""

    def __init__(self) -> None:
        self._converters: dict[bool, object] = {}

    def converter(self, do_ocr: bool):
        if do_ocr not in self._converters:
            from docling.datamodel.base_models import InputFormat
            from docling.datamodel.pipeline_options import PdfPipelineOptions
            from docling.document_converter import DocumentConverter, PdfFormatOption

            options = PdfPipelineOptions(
                do_ocr=do_ocr, do_table_structure=True, accelerator_options=accelerator_options()
            )
            artifacts = os.environ.get("DOCLING_ARTIFACTS_PATH")
            if artifacts:
                options.artifacts_path = artifacts
            converter = DocumentConverter(format_options={InputFormat.PDF: PdfFormatOption(pipeline_options=options)})
            converter.initialize_pipeline(InputFormat.PDF)  # loads the models or raises
            self._converters[do_ocr] = converter
        return self._converters[do_ocr]

    def convert(self, path: Path, do_ocr: bool) -> ConvertedDocument:
        from docling.datamodel.base_models import ConversionStatus

        result = self.converter(do_ocr).convert(Path(path), raises_on_error=False)
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            raise ConversionError("broken", f"{Path(path).name}: docling could not convert it ({result.status.value})")
        title, blocks = docling_blocks(result.document, title_in_chain=False)
        return ConvertedDocument(
            blocks=blocks, title=title, converter=STANDARD_CONVERTER.format(ocr=", OCR" if do_ocr else "")
        )


def standard_pipeline(mode: str = "auto") -> StandardPdf | None:
    """The standard pipeline when its models load (``auto``/``standard``), else None.

    The load is tried once per process; :func:`unavailable_reason` says why it failed.

    :raises ConversionError: ``mode="standard"`` and the models cannot be loaded.
    """
    if mode not in PIPELINES:
        raise ValueError(f"pipeline must be one of {PIPELINES}, got {mode!r}")
    if mode == "native":
        return None
    if "standard" not in _cache and not _layout_model_present():
        _cache["standard"] = None
        _cache["reason"] = f"no docling layout model in {_hub_cache()} and DOCLING_ARTIFACTS_PATH unset"
    if "standard" not in _cache:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        standard = StandardPdf()
        try:
            standard.converter(do_ocr=False)
            _cache["standard"] = standard
        except Exception as exc:  # any failure to load a model means: not available here
            _cache["standard"] = None
            _cache["reason"] = type(exc).__name__
    standard = _cache["standard"]
    if standard is None and mode == "standard":
        raise ConversionError("no_model", f"docling's standard pipeline is not available ({_cache['reason']})")
    return standard


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    return Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"


def _layout_model_present() -> bool:
    """A cheap look before importing docling (seconds and ~300 MB): is any docling
    layout model on disk? The real answer is loading it, which follows."""
    if os.environ.get("DOCLING_ARTIFACTS_PATH"):
        return True
    cache = _hub_cache()
    return cache.is_dir() and any(p.name.startswith("models--docling-project--docling-layout") for p in cache.iterdir())


def unavailable_reason() -> str:
    """Why the standard pipeline did not load in this process ("" when it did or was not tried)."""
    return str(_cache.get("reason", ""))
