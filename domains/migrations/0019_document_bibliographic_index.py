"""A GIN index over each document's bibliographic lexemes, so that routing finds the
documents whose metadata names a question's words without reading every document
(domains/retrieval/probe.py, :func:`document_coverage`).

The index expression calls ``klea_search_text``: a migration that replaces that function
must rebuild this index (``REINDEX INDEX domains_document_bibliographic``), as it
re-tokenises the chunks.
"""

from django.db import migrations

from domains.retrieval.probe import BIBLIOGRAPHIC_FUNCTION, BIBLIOGRAPHIC_VECTOR

INDEX = f"CREATE INDEX domains_document_bibliographic ON domains_document USING gin (({BIBLIOGRAPHIC_VECTOR.format(d='')}))"


class Migration(migrations.Migration):

    dependencies = [
        ("domains", "0018_domain_examples_db_default"),
    ]

    operations = [
        migrations.RunSQL(
            [BIBLIOGRAPHIC_FUNCTION, INDEX],
            reverse_sql=["DROP INDEX domains_document_bibliographic", "DROP FUNCTION klea_bibliographic_text(jsonb, text)"],
        ),
    ]
