"""klea_search_text splits dotted names into their parts: "DataArray.ffill" is found by
"ffill" (domains/bm25_sql.py, step 4)."""

from django.db import migrations

from domains.bm25_sql import IGNORABLE, SEARCH_TEXT_FUNCTION

# The function as 0009 made it, for the reverse.
PREVIOUS_FUNCTION = r"""
CREATE OR REPLACE FUNCTION klea_search_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT regexp_replace(
    regexp_replace(
        translate(normalize(t, NFKC), U&'\2010\2011\2012\2013\2212{IGNORABLE}', '-----'),
        '\m([[:alpha:]]+)-?([0-9]+)\M', '\1 \2 \1\2', 'g'),
    '([[:alnum:]])-(?=[0-9])', '\1 ', 'g')
$$;
""".replace("{IGNORABLE}", IGNORABLE)

# Only chunks with a dot before a letter and a name character can tokenise differently
# (that cheap pattern first); of those, only the ones whose lexemes change are rewritten (the search-vector
# trigger, then the BM25 update trigger, follow the no-op update).
RETOKENISE = rf"""
UPDATE domains_chunk SET text = text
WHERE (array_to_string(headings, ' ') || ' ' || text) ~ '\.[[:alpha:]][[:alnum:]_]'
  AND search_vector IS DISTINCT FROM to_tsvector(
      'pg_catalog.english'::regconfig, klea_search_text(array_to_string(headings, ' ') || ' ' || text))
"""


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0015_choice_labels'),
    ]

    operations = [
        # One operation, so that either way the chunks are re-tokenised by the function
        # just installed.
        migrations.RunSQL([SEARCH_TEXT_FUNCTION, RETOKENISE], reverse_sql=[PREVIOUS_FUNCTION, RETOKENISE]),
    ]
