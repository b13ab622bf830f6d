from django.contrib import admin
from django.db.models import Count

from .models import Chunk, Document, Domain, FilterField, MetadataEntry, Store


class FilterFieldInline(admin.TabularInline):
    model = FilterField
    extra = 0
    fields = ["name", "value_type", "person_name", "description"]


class StoreInline(admin.TabularInline):
    model = Store
    extra = 0
    fields = ["name", "mode", "embedding_model", "embedding_dim", "document_count", "chunk_count"]
    readonly_fields = ["embedding_model", "embedding_dim", "document_count", "chunk_count"]
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            n_documents=Count("documents", distinct=True), n_chunks=Count("chunks", distinct=True)
        )

    @admin.display(description="documents")
    def document_count(self, obj):
        return getattr(obj, "n_documents", "-")

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
        (None, {"fields": ["name", "description", "active", "instructions"]}),
        ("Retrieval", {"fields": ["default_k", "k_max", "k_inc", "min_relevance"]}),
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
class StoreAdmin(admin.ModelAdmin):
    list_display = ["name", "domain", "mode", "document_count", "chunk_count", "embedding_model"]
    list_filter = ["mode", "domain"]
    search_fields = ["name", "domain__name"]
    readonly_fields = ["embedding_model", "embedding_dim", "created_at"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("domain")
            .annotate(n_documents=Count("documents", distinct=True), n_chunks=Count("chunks", distinct=True))
        )

    @admin.display(description="documents", ordering="n_documents")
    def document_count(self, obj):
        return obj.n_documents

    @admin.display(description="chunks", ordering="n_chunks")
    def chunk_count(self, obj):
        return obj.n_chunks


class MetadataEntryInline(admin.TabularInline):
    model = MetadataEntry
    extra = 0
    fields = ["heading_key", "values"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["file_name", "store", "status", "pages", "chunk_count", "updated_at"]
    list_filter = ["status", "store__domain", "store"]
    search_fields = ["file_name", "metadata__title"]
    readonly_fields = ["content_hash", "source_path", "created_at", "updated_at"]
    inlines = [MetadataEntryInline]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("store").annotate(n_chunks=Count("chunks"))

    @admin.display(description="chunks", ordering="n_chunks")
    def chunk_count(self, obj):
        return obj.n_chunks


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["__str__", "store", "heading_chain", "year", "token_count"]
    list_filter = ["store__domain", "store"]
    search_fields = ["text", "document__file_name"]
    list_select_related = ["document", "store"]
    readonly_fields = ["store", "document", "ordinal", "token_count", "year"]
    exclude = ["embedding"]
