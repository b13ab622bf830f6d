"""A chunk without headings is searched by its document's title too (domains/bm25_sql.py,
SEARCH_SOURCE): "LICENSE.md", titled "LICENSE", is found by "license"."""

import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations

# Only heading-less chunks of titled documents can tokenise differently. The no-op update
# fires the search-vector trigger, then the BM25 update trigger (the index and its
# statistics follow), by the trigger installed last.
RETOKENISE = """
UPDATE domains_chunk c SET text = c.text
FROM domains_document d
WHERE d.id = c.document_id AND cardinality(c.headings) = 0 AND coalesce(d.metadata ->> 'title', '') <> ''
"""


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0020_bibliographic_text_bounded'),
    ]

    operations = [
        # (reversed, this runs last: by the trigger put back)
        migrations.RunSQL(migrations.RunSQL.noop, reverse_sql=RETOKENISE),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='chunk_search_vector',
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='chunk_search_vector', sql=pgtrigger.compiler.UpsertTriggerSql(func="NEW.search_vector := to_tsvector('pg_catalog.english'::regconfig, klea_search_text(array_to_string(NEW.headings, ' ') || ' ' || NEW.text || CASE WHEN coalesce(cardinality(NEW.headings), 0) = 0 THEN ' ' || coalesce((SELECT d.metadata ->> 'title' FROM domains_document d WHERE d.id = NEW.document_id), '') ELSE '' END)); RETURN NEW;", hash='5cc14d722136dec3c3fe103d23efd6a16b82ccec', operation='INSERT OR UPDATE OF "text", "headings"', pgid='pgtrigger_chunk_search_vector_05066', table='domains_chunk', when='BEFORE')),
        ),
        migrations.RunSQL(RETOKENISE, reverse_sql=migrations.RunSQL.noop),
    ]
