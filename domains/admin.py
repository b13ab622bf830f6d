"""Admin of domains, stores, documents, chunks and the metadata map. Editing a map entry
(inline on a document or on its own page) or the "re-apply" action sends
:data:`domains.signals.metadata_map_edited`, so the app that owns the map (ingestion)
updates the chunks without this app importing it."""

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q

from .access import managed_domains
from .models import Chunk, Document, Domain, FilterField, MetadataEntry, Store
from .signals import map_edited
from .text import page_label

REAPPLIED = "Metadata map re-applied: {changed} chunk(s) changed (no re-embedding)."


class ManagedDomainsOnly:
    """A staff user's rows are those of the domains they may manage
    (:func:`domains.access.managed_domains`: open to everyone or to one of their groups;
    superusers all), as for ingestion jobs and uploads: a view permission on chunks let
    anyone on the staff read every restricted domain's texts. ``domain_path`` leads from
    the model to its domain; list filters on a relation offer only the rows' own values
    (``admin.RelatedOnlyFieldListFilter``), so no other domain is named either."""

    domain_path = "store__domain"

    def get_queryset(self, request):
        return _managed(super().get_queryset(request), self.domain_path, request.user)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """A choice of domain, store or document (a map entry's document) among the managed."""
        path = _DOMAIN_PATHS.get(db_field.related_model)
        if path is not None:
            kwargs["queryset"] = _managed(db_field.related_model._default_manager.all(), path, request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


_DOMAIN_PATHS = {Domain: "pk", Store: "domain", Document: "store__domain"}


def _managed(rows, domain_path: str, user):
    return rows if user.is_superuser else rows.filter(**{f"{domain_path}__in": managed_domains(user)})


class FilterFieldInline(admin.TabularInline):
    model = FilterField
    extra = 0
    fields = ["name", "value_type", "person_name", "description"]


def with_counts(stores):
    """Stores annotated with ``n_documents`` (stored documents only: a file that failed,
    needs OCR or is in progress is no document of the store's totals), ``n_not_stored``
    (those others, counted apart) and ``n_chunks``."""
    stored = Q(documents__status=Document.Status.STORED)
    return stores.annotate(
        n_documents=Count("documents", filter=stored, distinct=True),
        n_not_stored=Count("documents", filter=~stored, distinct=True),
        n_chunks=Count("chunks", distinct=True),
    )


class StoreInline(admin.TabularInline):
    model = Store
    extra = 0
    fields = ["name", "mode", "embedding_model", "embedding_dim", "document_count", "not_stored_count", "chunk_count"]
    readonly_fields = ["embedding_model", "embedding_dim", "document_count", "not_stored_count", "chunk_count"]
    show_change_link = True

    def get_queryset(self, request):
        return with_counts(super().get_queryset(request))

    @admin.display(description="documents")
    def document_count(self, obj):
        return getattr(obj, "n_documents", "-")

    @admin.display(description="not stored")
    def not_stored_count(self, obj):
        return getattr(obj, "n_not_stored", "-")

    @admin.display(description="chunks")
    def chunk_count(self, obj):
        return getattr(obj, "n_chunks", "-")


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    list_display = ["name", "active", "store_count", "filter_field_count", "default_k", "k_max"]
    list_filter = ["active"]
    search_fields = ["name", "description"]
    filter_horizontal = ["allowed_groups"]
    inlines = [FilterFieldInline, StoreInline]
    fieldsets = [
        (None, {"fields": ["name", "description", "active", "examples", "instructions"]}),
        ("Retrieval", {"fields": ["default_k", "k_max", "k_inc", "min_relevance", "fusion", "fusion_alpha"]}),
        ("Access", {"fields": ["allowed_groups"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            n_stores=Count("stores", distinct=True), n_fields=Count("filter_fields", distinct=True)
        )

    @admin.display(description="stores", ordering="n_stores")
    def store_count(self, obj):
        return obj.n_stores

    @admin.display(description="filter fields", ordering="n_fields")
    def filter_field_count(self, obj):
        return obj.n_fields


@admin.register(Store)
class StoreAdmin(ManagedDomainsOnly, admin.ModelAdmin):
    list_display = ["name", "domain", "mode", "document_count", "not_stored_count", "chunk_count", "embedding_model"]
    list_filter = ["mode", ("domain", admin.RelatedOnlyFieldListFilter)]
    domain_path = "domain"
    search_fields = ["name", "domain__name"]
    readonly_fields = ["embedding_model", "embedding_dim", "created_at"]

    def get_queryset(self, request):
        return with_counts(super().get_queryset(request).select_related("domain"))

    @admin.display(description="documents", ordering="n_documents")
    def document_count(self, obj):
        return obj.n_documents

    @admin.display(description="not stored", ordering="n_not_stored")
    def not_stored_count(self, obj):
        """Failed, needing OCR or in progress: listed under Documents with their status."""
        return obj.n_not_stored

    @admin.display(description="chunks", ordering="n_chunks")
    def chunk_count(self, obj):
        return obj.n_chunks


class MetadataEntryInline(admin.TabularInline):
    model = MetadataEntry
    extra = 0
    fields = ["heading_key", "values"]


@admin.action(description="Re-apply the metadata map to the chunks (no re-embedding)", permissions=["change"])
def reapply_map(modeladmin, request, queryset):
    documents = queryset if queryset.model is Document else Document.objects.filter(
        id__in=queryset.values_list("document_id", flat=True)
    )
    changed = sum(map_edited(document) for document in documents.select_related("store"))
    messages.success(request, f"Re-applied the map of {documents.count()} document(s); {changed} chunk(s) changed.")


METADATA_HELP = ("A copy of the DEFAULT entry of the metadata map below, read-only here: "
                 "edit that entry (or add one) and save to change the title, authors or year; "
                 "saving re-applies the map to the chunks.")


class DocumentForm(forms.ModelForm):
    class Meta:
        # the admin shows this help under the read-only field too
        help_texts = {"metadata": METADATA_HELP}


@admin.register(Document)
class DocumentAdmin(ManagedDomainsOnly, admin.ModelAdmin):
    """Documents with their map entries inline: saving edited entries re-applies them.
    ``Document.metadata`` mirrors the DEFAULT entry (re-applying the map rewrites it), so
    it is read-only: an edit there would be saved and then silently overwritten."""

    list_display = ["file_name", "store", "status", "pages", "chunk_count", "updated_at"]
    list_filter = ["status", ("store__domain", admin.RelatedOnlyFieldListFilter),
                   ("store", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["file_name", "metadata__title"]
    form = DocumentForm
    readonly_fields = ["content_hash", "source_path", "created_at", "updated_at", "metadata"]
    inlines = [MetadataEntryInline]
    actions = [reapply_map]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("store").annotate(n_chunks=Count("chunks"))

    @admin.display(description="chunks", ordering="n_chunks")
    def chunk_count(self, obj):
        return obj.n_chunks

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if change and any(f.has_changed() for f in formsets):
            messages.info(request, REAPPLIED.format(changed=map_edited(form.instance)))


@admin.register(MetadataEntry)
class MetadataEntryAdmin(ManagedDomainsOnly, admin.ModelAdmin):
    list_display = ["document", "heading_key", "values"]
    list_filter = [("document__store", admin.RelatedOnlyFieldListFilter)]
    domain_path = "document__store__domain"
    search_fields = ["document__file_name", "heading_key"]
    list_select_related = ["document"]
    actions = [reapply_map]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        messages.info(request, REAPPLIED.format(changed=map_edited(obj.document)))


@admin.register(Chunk)
class ChunkAdmin(ManagedDomainsOnly, admin.ModelAdmin):
    list_display = ["__str__", "store", "heading_chain", "where", "year", "token_count"]
    list_filter = [("store__domain", admin.RelatedOnlyFieldListFilter), ("store", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["text", "document__file_name"]
    list_select_related = ["document", "store"]
    # provenance is where ingestion found the text: edited, the source view would lie
    readonly_fields = ["store", "document", "ordinal", "token_count", "year", "provenance"]

    @admin.display(description="where")
    def where(self, chunk) -> str:
        """``p. 4–5`` for a PDF chunk, ``lines 12–30`` for a text source, else empty."""
        provenance = chunk.provenance or {}
        if provenance.get("pages"):
            return page_label(provenance["pages"])
        lines = provenance.get("lines")
        return f"lines {lines[0]}–{lines[1]}" if lines else ""
    exclude = ["embedding"]
