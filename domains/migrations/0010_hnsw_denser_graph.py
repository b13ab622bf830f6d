"""The HNSW index rebuilt denser: m = 32, ef_construction = 200 (issue 18).

With m = 16, ef_construction = 64, recall@10 at 1M chunks stayed at 0.92-0.93 even at
pgvector's largest ef_search (docs/benchmarks.md, "HNSW recall against ef_search").

The rebuild reads every vector once and holds the graph in memory: the transaction's
maintenance_work_mem is raised to the graph's estimated size (never lowered, at most
BUILD_MEMORY_CAP_KB), since a graph that outgrows it is built on disk, many times slower.
Parallel workers follow the server's max_parallel_maintenance_workers.
"""

from django.db import migrations
from pgvector.django import HnswIndex

M, EF_CONSTRUCTION = 32, 200
PREVIOUS_M, PREVIOUS_EF_CONSTRUCTION = 16, 64
# In-memory graph per row of 384-dim vectors while building (pgvector 0.6.2): the
# 1,544-byte vector, 2 x m neighbour slots of 16 bytes at layer 0 (fewer above), the
# element header, ~20 % margin. (The 1M m = 16 build peaked at 3.2 GB with shared buffers.)
GRAPH_BYTES_PER_ROW = {16: 2600, 32: 3600}
BUILD_MEMORY_CAP_KB = 8 * 1024 * 1024  # 8 GB: the database server's memory is not known here

INDEX = "chunk_embedding_hnsw"


def build_memory_kb(rows: int, m: int, current_kb: int) -> int:
    """maintenance_work_mem (kB) for building the graph of ``rows`` vectors with ``m``.

    :returns: the estimated graph size, at least ``current_kb`` (the server's setting),
        at most BUILD_MEMORY_CAP_KB (unless the setting is already above it).
    """
    wanted = min(rows * GRAPH_BYTES_PER_ROW[m] // 1024, BUILD_MEMORY_CAP_KB)
    return max(current_kb, wanted)


def rebuild(cursor, m: int, ef_construction: int) -> None:
    """Drop and build the chunks' HNSW index with ``m`` / ``ef_construction`` in this transaction."""
    cursor.execute("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'domains_chunk'::regclass")
    rows = cursor.fetchone()[0]
    cursor.execute("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'")  # kB
    current = cursor.fetchone()[0]
    memory = build_memory_kb(rows, m, current)
    if memory > current:
        cursor.execute(f"SET LOCAL maintenance_work_mem = '{memory}kB'")
    cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")
    cursor.execute(
        f"CREATE INDEX {INDEX} ON domains_chunk USING hnsw (embedding vector_cosine_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )


def forward(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        rebuild(cursor, M, EF_CONSTRUCTION)


def backward(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        rebuild(cursor, PREVIOUS_M, PREVIOUS_EF_CONSTRUCTION)


def _index(m: int, ef_construction: int) -> HnswIndex:
    return HnswIndex(
        ef_construction=ef_construction, fields=["embedding"], m=m, name=INDEX, opclasses=["vector_cosine_ops"]
    )


class Migration(migrations.Migration):

    dependencies = [
        ("domains", "0009_search_text_drops_invisible_characters"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forward, backward)],
            state_operations=[
                migrations.RemoveIndex(model_name="chunk", name=INDEX),
                migrations.AddIndex(model_name="chunk", index=_index(M, EF_CONSTRUCTION)),
            ],
        ),
    ]
