"""The admin upload form: one or many files into a store."""

from __future__ import annotations

from pathlib import Path

from django import forms
from django.conf import settings
from django.urls import reverse
from django.utils.html import format_html

from domains.access import managed_domains
from domains.models import Store

from .convert import SUPPORTED_EXTENSIONS
from .metadata.library import LIBRARY_SUFFIXES, LibraryError, parse_library
from .options import MIN_MAX_TOKENS, default_max_tokens
from .runs.uploads import MAX_NAME_BYTES, stored_name
from .sources import OWN_FILES


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field that accepts several files and returns them as a list."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


def upload_too_large(size: int, limit: int) -> str:
    return f"The upload is {size:,} bytes; the limit is {limit:,} bytes (KLEA_UPLOAD_MAX_BYTES)."


class UploadForm(forms.Form):
    """Files into one store. ``user``: only stores of the domains the user may manage
    (domains.access.managed_domains) are offered; the files together may take at most
    KLEA_UPLOAD_MAX_BYTES."""

    store = forms.ModelChoiceField(queryset=Store.objects.none())
    files = MultipleFileField(help_text="PDF, DOCX, Markdown/MyST, reStructuredText, HTML or plain text; and a "
                                        "reference-manager library (BibTeX .bib or CSL-JSON .json) whose records "
                                        "fill the metadata of the files they match.")
    max_tokens = forms.IntegerField(
        label="Chunk size", initial=default_max_tokens, min_value=MIN_MAX_TOKENS, max_value=2048,
        help_text="At most this many tokens of the embedding model per chunk.",
    )
    ocr = forms.ChoiceField(
        label="OCR", choices=[("auto", "auto: only PDFs without a text layer"), ("on", "always"), ("off", "never")],
        initial="auto", help_text="Text recognition for scanned pages that have no text layer.",
    )
    force = forms.BooleanField(required=False, help_text="Re-convert and re-embed files that did not change.")

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["store"].queryset = (
            Store.objects.filter(domain__in=managed_domains(user)).select_related("domain").order_by("name")
        )
        # a new user meets this form before any store of theirs exists (a new-user trial)
        self.fields["store"].help_text = format_html(
            'The store the files go into. A store belongs to a domain: to add one, open a domain under '
            '<a href="{}">Domains</a> and fill a row of its Stores at the bottom of the page.',
            reverse("admin:domains_domain_changelist"))

    def clean_files(self):
        """The files that can be saved and ingested; each other one goes to ``self.refused``
        as (name as sent, reason naming it), so that one bad file never stops the others
        (ingestion/runs/uploads.py reports them on the job). Refused whole only when the
        files together are too large, or when no file is left.

        :raises ValidationError: the size, or every file's reason (one message each).
        """
        files = self.cleaned_data["files"]
        size = sum(f.size or 0 for f in files)
        if size > settings.KLEA_UPLOAD_MAX_BYTES:
            raise forms.ValidationError(upload_too_large(size, settings.KLEA_UPLOAD_MAX_BYTES))
        allowed = SUPPORTED_EXTENSIONS | set(LIBRARY_SUFFIXES)
        accepted, first = [], {}
        self.refused = []
        for upload in files:
            reason = self._refusal(upload, allowed, first)
            if reason:
                self.refused.append((upload.name, reason))
            else:
                first[stored_name(upload.name)] = upload.name
                accepted.append(upload)
        if not accepted:
            raise forms.ValidationError([reason for _name, reason in self.refused])
        return accepted

    @staticmethod
    def _refusal(upload, allowed: set[str], first: dict[str, str]) -> str:
        """Why ``upload`` cannot be saved ("" when it can). Its stored name (runs/uploads.py
        ``stored_name``) must keep its type, fit the file system, not be the folder's own
        metadata map (saved, it broke every later upload to the store) nor an earlier
        accepted file's (``first``: one would silently replace the other, and the job would
        wait for it forever); a library must parse (else it would be applied half)."""
        if Path(upload.name).suffix.lower() not in allowed:
            return f"unsupported file type: {upload.name} (supported: {', '.join(sorted(allowed))})"
        name = stored_name(upload.name)
        if Path(name).suffix.lower() not in allowed:
            return (f"file name {upload.name!r} keeps no name before its extension once unsafe characters are "
                    f"removed ({name!r}); rename the file")
        if len(name.encode()) > MAX_NAME_BYTES:
            return f"file name {name[:40]}... is {len(name.encode())} bytes long; the limit is {MAX_NAME_BYTES} bytes"
        if name in OWN_FILES:
            return (f"{name!r} is the name of the store folder's own metadata map, not a document or a "
                    "library; edit a document's metadata in the admin (docs/ingestion.md, \"Where a "
                    "file's map comes from\")")
        if name in first:
            same = "have the same name" if first[name] == upload.name else f"would both be saved as {name!r}"
            return f"two files {same}: {first[name]!r} and {upload.name!r}"
        if Path(name).suffix.lower() in LIBRARY_SUFFIXES:
            try:
                parse_library(Path(upload.name).name, upload.read())
            except LibraryError as exc:
                return str(exc)
            finally:
                upload.seek(0)
        return ""
