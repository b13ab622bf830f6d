"""A heading-less chunk is searched by its document's title cut to TITLE_CHARS
(domains/bm25_sql.py, SEARCH_SOURCE): with the whole title, a title of some 150,000 words
(a 1.5 MB heading as a Markdown file's title) took the chunk's tsvector over PostgreSQL's
1 MB limit, and every such chunk's write failed. Only heading-less chunks of documents
whose title is longer than that can tokenise differently: they are re-tokenised.
"""

import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations

from domains.bm25_sql import TITLE_CHARS

RETOKENISE = f"""
UPDATE domains_chunk c SET text = c.text
FROM domains_document d
WHERE d.id = c.document_id AND cardinality(c.headings) = 0 AND length(d.metadata ->> 'title') > {TITLE_CHARS}
"""


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0021_heading_less_chunks_searched_by_title'),
    ]

    operations = [
        migrations.RunSQL(migrations.RunSQL.noop, reverse_sql=RETOKENISE),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='chunk_search_vector',
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='chunk_search_vector', sql=pgtrigger.compiler.UpsertTriggerSql(func="NEW.search_vector := to_tsvector('pg_catalog.english'::regconfig, klea_search_text(array_to_string(NEW.headings, ' ') || ' ' || NEW.text || CASE WHEN coalesce(cardinality(NEW.headings), 0) = 0 THEN ' ' || coalesce((SELECT left(d.metadata ->> 'title', 5000) FROM domains_document d WHERE d.id = NEW.document_id), '') ELSE '' END)); RETURN NEW;", hash='104e199a45a7898cc90f501c62f6a19da7234558', operation='INSERT OR UPDATE OF "text", "headings"', pgid='pgtrigger_chunk_search_vector_05066', table='domains_chunk', when='BEFORE')),
        ),
        migrations.RunSQL(RETOKENISE, reverse_sql=migrations.RunSQL.noop),
    ]
