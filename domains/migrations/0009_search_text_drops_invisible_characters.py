"""klea_search_text drops soft hyphens and zero-width characters (domains/bm25_sql.py)."""

from django.db import migrations

from domains.bm25_sql import IGNORABLE, SEARCH_TEXT_FUNCTION

# The function as 0006 made it, for the reverse.
PREVIOUS_FUNCTION = r"""
CREATE OR REPLACE FUNCTION klea_search_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT regexp_replace(
    regexp_replace(
        translate(normalize(t, NFKC), U&'\2010\2011\2012\2013\2212', '-----'),
        '\m([[:alpha:]]+)-?([0-9]+)\M', '\1 \2 \1\2', 'g'),
    '([[:alnum:]])-(?=[0-9])', '\1 ', 'g')
$$;
"""

# Only chunks holding one of the characters tokenise differently: re-tokenise those (the
# search-vector trigger, then the BM25 update trigger, follow the no-op update).
RETOKENISE = rf"""
UPDATE domains_chunk SET text = text
WHERE (array_to_string(headings, ' ') || ' ' || text) ~ U&'[{IGNORABLE}]'
"""


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0008_bm25_topk_function'),
    ]

    operations = [
        migrations.RunSQL(SEARCH_TEXT_FUNCTION, reverse_sql=PREVIOUS_FUNCTION),
        migrations.RunSQL(RETOKENISE, reverse_sql=RETOKENISE),
    ]
