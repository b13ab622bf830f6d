"""System checks for the ingestion settings (stable ids ingestion.E001...)."""

from django.conf import settings
from django.core.checks import Error, register

from domains.embeddings import BACKENDS
from ingestion.convert.docling_pdf import PIPELINES

E001_MSG = "KLEA_PDF_PIPELINE is {value!r}; expected one of {allowed}."
E001_HINT = "Set KLEA_PDF_PIPELINE to auto (default), standard or native."
E002_MSG = "KLEA_CONVERT_MEMORY_MB is {value}; the conversion process needs at least 64."
E002_HINT = "Raise KLEA_CONVERT_MEMORY_MB (default 3072)."
E003_MSG = "KLEA_EMBEDDING_BACKEND is {value!r}; expected one of {allowed}."
E003_HINT = "Set KLEA_EMBEDDING_BACKEND to onnx-int8 (default) or torch."


@register()
def check_ingestion_settings(app_configs=None, **kwargs):
    errors = []
    if settings.KLEA_PDF_PIPELINE not in PIPELINES:
        errors.append(Error(E001_MSG.format(value=settings.KLEA_PDF_PIPELINE, allowed=", ".join(PIPELINES)),
                            hint=E001_HINT, id="ingestion.E001"))
    if settings.KLEA_CONVERT_MEMORY_MB < 64:
        errors.append(Error(E002_MSG.format(value=settings.KLEA_CONVERT_MEMORY_MB), hint=E002_HINT,
                            id="ingestion.E002"))
    if settings.KLEA_EMBEDDING_BACKEND not in BACKENDS:
        errors.append(Error(E003_MSG.format(value=settings.KLEA_EMBEDDING_BACKEND, allowed=", ".join(BACKENDS)),
                            hint=E003_HINT, id="ingestion.E003"))
    return errors
