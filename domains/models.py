"""Domains (knowledge areas), their filter fields and stores, and the indexed content.

Shape: Domain 1-n FilterField, Domain 1-n Store, Store 1-n Document 1-n Chunk,
Document 1-n MetadataEntry (the metadata map: ``DEFAULT`` + heading chains).
"""

from __future__ import annotations

import re

import pgtrigger
from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models.lookups import GreaterThan
from pgvector.django import HnswIndex, VectorField

from . import bm25_sql
from .bm25_sql import SEARCH_SOURCE
from .names import RESERVED_RULE, STORE_NAME, domain_name_problem

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADING_SEPARATOR = " > "

# HNSW build parameters (Malkov & Yashunin 2018): m = links per node, ef_construction =
# candidate list size while building. Denser than pgvector's defaults (16, 64), which
# stay below recall@10 0.95 at 1M chunks at any ef_search (issue 18; migration 0010;
# docs/benchmarks.md, "HNSW recall against ef_search").
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200


def _validate_domain_name(value: str) -> None:
    """The rule of :func:`domains.names.domain_name_problem` as a field validator."""
    problem = domain_name_problem(value)
    if problem == RESERVED_RULE:
        raise ValidationError(f"'{value}' is {problem}.")
    if problem:
        raise ValidationError(f"Domain name: {problem}.")


class Domain(models.Model):
    """A knowledge area users can ask about, e.g. "NeuroML documentation".

    The classifier reads ``description``; retrieval reads the k knobs and
    ``min_relevance`` (minimum cosine similarity kept from vector search).
    """

    name = models.CharField(max_length=100, unique=True, validators=[_validate_domain_name])
    description = models.TextField(help_text="What the domain covers; the classifier reads this.")
    active = models.BooleanField(default=True)
    # Chunks retrieved per domain. 8, not 5: the extractive answer chooses at passage level,
    # and the answering chunk is often 6th-8th (a long chunk whose fact is past the
    # embedding window, a table of many rows); on the answer bench 5 -> 8 brings the
    # evidence into the references for 4 more of 208 questions (docs/benchmarks.md,
    # "Chunks per domain").
    default_k = models.PositiveIntegerField(default=8, validators=[MinValueValidator(1)])
    k_max = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    k_inc = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    min_relevance = models.FloatField(
        default=0.15,
        validators=[MinValueValidator(-1.0), MaxValueValidator(1.0)],
        help_text="Vector hits below this cosine similarity (1 - distance) are dropped.",
    )
    fusion = models.CharField(
        max_length=10,
        choices=[("rrf", "Weighted RRF (k = 5, BM25 x 1.5)"), ("convex", "Convex combination of normalised scores")],
        default="rrf",
        help_text="How the ranked lists of the domain's stores are fused (docs/retrieval.md).",
    )
    fusion_alpha = models.FloatField(
        default=0.5,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Convex fusion only: weight of the vector lists (1 - alpha for BM25).",
    )
    instructions = models.TextField(blank=True, help_text="Extra instructions for the answer model.")
    examples = models.TextField(
        blank=True,
        db_default="",  # rows inserted by raw SQL (tests, scripts) need no value either
        help_text="Example questions, one per line: the empty chat shows them under the description, to click.",
    )
    allowed_groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="klea_domains",
        help_text="Only members of these groups may query the domain; empty = everyone allowed to chat.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def example_questions(self) -> list[str]:
        """``examples`` as a list: its non-blank lines, stripped."""
        return [line.strip() for line in self.examples.splitlines() if line.strip()]

    def clean(self) -> None:
        if self.k_max is not None and self.default_k is not None and self.k_max < self.default_k:
            raise ValidationError(
                {"k_max": f"k_max ({self.k_max}) must be at least default_k ({self.default_k})."}
            )


class FilterField(models.Model):
    """A metadata field a domain's queries may filter on (e.g. ``year``, ``authors``)."""

    class ValueType(models.TextChoices):
        STRING = "string"
        INT = "int", "Integer"
        FLOAT = "float", "Number (float)"
        LIST = "list"

    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="filter_fields")
    name = models.CharField(
        max_length=64,
        validators=[
            RegexValidator(
                IDENTIFIER,
                "Filter field name must be an identifier: a letter or _ then letters, digits or _.",
            )
        ],
    )
    description = models.TextField(blank=True)
    value_type = models.CharField(max_length=10, choices=ValueType.choices, default=ValueType.STRING)
    person_name = models.BooleanField(
        default=False,
        help_text="Values are person names: a filter on one word of a name ('Sinha') matches.",
    )

    class Meta:
        ordering = ["domain", "name"]
        constraints = [
            models.UniqueConstraint(fields=["domain", "name"], name="unique_filter_field_per_domain")
        ]

    def __str__(self) -> str:
        return f"{self.domain.name}.{self.name} ({self.value_type})"


class Store(models.Model):
    """A collection of chunks (the ``--collection`` name), searched by vector, BM25 or both."""

    class Mode(models.TextChoices):
        VECTOR = "vector", "Vector (dense embeddings)"
        BM25 = "bm25", "BM25 (keywords)"
        BOTH = "both", "Both (vector and BM25, fused)"

    name = models.CharField(
        max_length=100,
        unique=True,
        validators=[
            RegexValidator(
                STORE_NAME,
                "Store name: letters, digits, '_', '.', '-', starting with a letter or digit.",
            )
        ],
    )
    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="stores")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.BOTH)
    embedding_model = models.CharField(max_length=200, default="all-MiniLM-L6-v2")
    embedding_dim = models.PositiveIntegerField(default=384)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_vector(self) -> bool:
        return self.mode in (self.Mode.VECTOR, self.Mode.BOTH)

    @property
    def uses_bm25(self) -> bool:
        return self.mode in (self.Mode.BM25, self.Mode.BOTH)


class Document(models.Model):
    """One source file of a store. ``metadata`` is its bibliographic DEFAULT entry."""

    class Status(models.TextChoices):
        PENDING = "pending"
        CONVERTING = "converting"
        CHUNKED = "chunked"
        STORED = "stored"
        FAILED = "failed"
        NEEDS_OCR = "needs_ocr", "Needs OCR"

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="documents")
    file_name = models.CharField(max_length=500, help_text="Path relative to the ingested folder.")
    source_path = models.CharField(max_length=1000, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the file bytes.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    pages = models.PositiveIntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["store", "file_name"]
        constraints = [
            models.UniqueConstraint(fields=["store", "file_name"], name="unique_file_per_store")
        ]

    def __str__(self) -> str:
        return f"{self.store.name}:{self.file_name}"

    @property
    def title(self) -> str:
        return str(self.metadata.get("title") or "")


class MetadataEntry(models.Model):
    """One entry of a document's metadata map: ``DEFAULT`` or a heading chain ``A > B``."""

    DEFAULT = "DEFAULT"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="metadata_entries")
    heading_key = models.CharField(max_length=1000)
    values = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["document", "heading_key"]
        verbose_name_plural = "metadata entries"
        constraints = [
            models.UniqueConstraint(fields=["document", "heading_key"], name="unique_heading_per_document")
        ]

    def __str__(self) -> str:
        return f"{self.document.file_name} [{self.heading_key}]"


# The tsvector covers the heading chain and the text, English stemming and stop words,
# through klea_search_text (domains/bm25_sql.py) like the queries.
# The config is schema-qualified so the trigger does not depend on search_path.
SEARCH_CONFIG = "pg_catalog.english"


class Chunk(models.Model):
    """A piece of a document, at most ~450 tokens, with its heading chain.

    ``text`` is what a reader sees; what is embedded and indexed is the heading chain
    followed by the text (:func:`domains.text.indexed_text`).
    ``embedding``: 384 floats (KLEA_EMBEDDING_DIM), L2-normalised, never all zero.
    ``search_vector``: tsvector of headings + text, kept by a database trigger (a chunk
    without headings: its text + its document's title, :data:`domains.bm25_sql.SEARCH_SOURCE`).
    ``provenance``: where the text is in its source (docs/ingestion.md, "Provenance"):
    ``{"pages": [first, last], "boxes": [[page, left, top, right, bottom], ...]}`` for
    PDFs (pages 1-based, boxes as fractions of the page, origin top-left);
    ``{"lines": [first, last], "offset": int, "anchor": str}`` for Markdown, reST and
    HTML (1-based lines, character offset, heading anchor); ``{}`` when unknown.
    """

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="chunks")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField(help_text="Position within the document, from 0.")
    text = models.TextField()
    headings = ArrayField(models.TextField(), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    year = models.IntegerField(null=True, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    provenance = models.JSONField(default=dict, blank=True)
    embedding = VectorField(dimensions=settings.KLEA_EMBEDDING_DIM, null=True, blank=True)
    search_vector = SearchVectorField(null=True, editable=False)

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="unique_chunk_ordinal"),
            # A zero vector has no direction: its cosine distance is NaN. (pgvector itself
            # refuses NaN and infinite components.)
            models.CheckConstraint(
                condition=models.Q(embedding__isnull=True)
                | GreaterThan(models.Func(models.F("embedding"), function="vector_norm"), 0),
                name="chunk_embedding_not_zero",
            ),
        ]
        indexes = [
            models.Index(fields=["store", "year"], name="chunk_store_year"),
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION,
                opclasses=["vector_cosine_ops"],
            ),
        ]
        triggers = [
            pgtrigger.Trigger(
                name="chunk_search_vector",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert | pgtrigger.UpdateOf("text", "headings"),
                func=(
                    "NEW.search_vector := to_tsvector("
                    f"'{SEARCH_CONFIG}'::regconfig, "
                    f"klea_search_text({SEARCH_SOURCE.format(chunk='NEW')})); RETURN NEW;"
                ),
            ),
            # BM25 upkeep (domains/bm25_sql.py): one call per statement, set-based.
            pgtrigger.Trigger(
                name="bm25_insert",
                level=pgtrigger.Statement,
                when=pgtrigger.After,
                operation=pgtrigger.Insert,
                referencing=pgtrigger.Referencing(new="new_rows"),
                func=bm25_sql.ON_INSERT,
            ),
            pgtrigger.Trigger(
                name="bm25_update",
                level=pgtrigger.Statement,
                when=pgtrigger.After,
                operation=pgtrigger.Update,
                referencing=pgtrigger.Referencing(old="old_rows", new="new_rows"),
                func=bm25_sql.ON_UPDATE,
            ),
            pgtrigger.Trigger(
                name="bm25_delete",
                level=pgtrigger.Statement,
                when=pgtrigger.After,
                operation=pgtrigger.Delete,
                referencing=pgtrigger.Referencing(old="old_rows"),
                func=bm25_sql.ON_DELETE,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document.file_name} #{self.ordinal}"

    @property
    def heading_chain(self) -> str:
        return HEADING_SEPARATOR.join(self.headings)

    @property
    def pages(self) -> list[int] | None:
        """[first, last] 1-based page of a PDF chunk, None for other sources."""
        return self.provenance.get("pages") if self.provenance else None


class Bm25Stats(models.Model):
    """Per-store BM25 corpus statistics: N (chunks) and the sum of chunk lengths.

    Kept by the triggers on Chunk (domains/bm25_sql.py); the row exists while the store
    has chunks. avgdl = total_length / chunk_count.
    """

    store = models.OneToOneField(Store, on_delete=models.DO_NOTHING, primary_key=True, related_name="bm25_stats")
    chunk_count = models.BigIntegerField(default=0)
    total_length = models.BigIntegerField(default=0)
    # Reference avgdl of the postings' impacts (bm25_sql.IMPACT_FUNCTION).
    impact_avgdl = models.FloatField(default=1.0)

    class Meta:
        verbose_name_plural = "BM25 statistics"

    @property
    def average_length(self) -> float:
        return self.total_length / self.chunk_count if self.chunk_count else 0.0


class Bm25Term(models.Model):
    """A lexeme of a store and its document frequency df (chunks containing it, > 0)."""

    store = models.ForeignKey(Store, on_delete=models.DO_NOTHING, related_name="+")
    lexeme = models.TextField()
    df = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["store", "lexeme"], name="unique_bm25_term_per_store")]


class Bm25Posting(models.Model):
    """tf of a term in a chunk, the chunk's length dl (both in lexeme positions) and the
    quantised tf factor ``impact`` (bm25_sql.IMPACT_FUNCTION).

    The table is created by SQL (bm25_sql.CREATE_POSTINGS) with one unique index
    (term_id, impact DESC, tf, dl, chunk_id) and no primary key constraint; (term_id,
    chunk_id) is unique in fact. No foreign keys (the triggers keep it exact).
    """

    pk = models.CompositePrimaryKey("term_id", "chunk_id")
    term_id = models.BigIntegerField()
    chunk_id = models.BigIntegerField()
    dl = models.IntegerField()
    tf = models.SmallIntegerField()
    impact = models.SmallIntegerField()

    class Meta:
        managed = False
        db_table = "domains_bm25posting"
