"""Chunks and queries tokenised through klea_search_text (domains/bm25_sql.py)."""

import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations

from domains.bm25_sql import SEARCH_TEXT_FUNCTION

# Re-tokenise the chunks whose lexemes change (the BM25 update trigger follows).
RETOKENISE = """
UPDATE domains_chunk SET text = text
WHERE search_vector IS DISTINCT FROM to_tsvector(
    'pg_catalog.english'::regconfig, klea_search_text(array_to_string(headings, ' ') || ' ' || text))
"""


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0005_chunk_provenance'),
    ]

    operations = [
        migrations.RunSQL(SEARCH_TEXT_FUNCTION, reverse_sql="DROP FUNCTION klea_search_text(text)"),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='chunk_search_vector',
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='chunk_search_vector', sql=pgtrigger.compiler.UpsertTriggerSql(func="NEW.search_vector := to_tsvector('pg_catalog.english'::regconfig, klea_search_text(array_to_string(NEW.headings, ' ') || ' ' || NEW.text)); RETURN NEW;", hash='b0bfe5fc3cd20011943b5b0af24bae2d07b3e0b9', operation='INSERT OR UPDATE OF "text", "headings"', pgid='pgtrigger_chunk_search_vector_05066', table='domains_chunk', when='BEFORE')),
        ),
        migrations.RunSQL(RETOKENISE, reverse_sql=migrations.RunSQL.noop),
    ]
