"""klea_bibliographic_text cuts each part of a document's bibliographic line to a length
(domains/retrieval/probe.py, BIBLIOGRAPHIC_LIMITS), so that its tsvector stays under
PostgreSQL's 1 MB limit: a longer title failed the document's write.

The index of migration 0019 is rebuilt only when some document's metadata is long
enough for a part to be cut (for every other row the function's value is unchanged).
"""

from django.db import migrations

from domains.retrieval.probe import BIBLIOGRAPHIC_FUNCTION, BIBLIOGRAPHIC_LIMITS

OLD_FUNCTION = r"""
CREATE OR REPLACE FUNCTION klea_bibliographic_text(metadata jsonb, file_name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT concat_ws(' ', metadata->>'title',
    CASE WHEN jsonb_typeof(metadata->'authors') = 'array'
         THEN (SELECT string_agg(a, ' ') FROM jsonb_array_elements_text(metadata->'authors') a)
         ELSE metadata->>'authors' END,
    metadata->>'journal', metadata->>'year', translate(file_name, '_./-', '    '))
$$;
"""
# (An authors list's JSON text is longer than the names joined: at worst a needless rebuild.)
_CUT = " OR ".join(f"length(metadata->>'{key}') > {limit}" for key, limit in BIBLIOGRAPHIC_LIMITS.items())
REINDEX_IF_CUT = f"""
DO $$ BEGIN
IF EXISTS (SELECT 1 FROM domains_document WHERE {_CUT}) THEN
    REINDEX INDEX domains_document_bibliographic;
END IF;
END $$;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("domains", "0019_document_bibliographic_index"),
    ]

    operations = [
        migrations.RunSQL([BIBLIOGRAPHIC_FUNCTION, REINDEX_IF_CUT], reverse_sql=[OLD_FUNCTION, REINDEX_IF_CUT]),
    ]
