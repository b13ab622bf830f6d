"""SQL of the BM25 index upkeep: statement-level triggers on ``domains_chunk``.

Tokens are the lexemes of the chunk's ``search_vector``: PostgreSQL's tokeniser
(``pg_catalog.english``: stemming, stop words removed) over the text as rewritten by
``klea_search_text`` (:data:`SEARCH_TEXT_FUNCTION`), which chunks and queries share so
their lexemes agree on scientific tokens (docs/retrieval.md, "Tokens"). For a chunk and a lexeme,
tf = number of positions of the lexeme; dl = sum of tf over the chunk's lexemes.
tsvector limits (PostgreSQL): at most 256 positions are kept per lexeme and positions
above 16,383 are clamped, so tf is exact only for chunks under ~16,000 words (chunks
are at most ~450 tokens).

Tables kept exact in the same transaction as the chunk writes:

- ``domains_bm25stats(store_id, chunk_count, total_length)``: N and sum of dl; the row
  exists while the store has chunks.
- ``domains_bm25term(id, store_id, lexeme, df)``: per-store term dictionary; a term
  exists while df > 0.
- ``domains_bm25posting(term_id, chunk_id, tf, dl)``: one row per (lexeme, chunk);
  primary key (term_id, chunk_id) INCLUDE (tf, dl) so a query reads postings from the
  index alone.

Concurrency: every trigger first locks the stats rows of the stores it touches, in
store-id order (upsert or ``FOR UPDATE``). Writers of one store therefore serialise on
that row until commit and never interleave on term rows; writers of different stores
touch disjoint rows. Deadlock-free for single statements; a transaction that writes
store A then, in a later statement, store B while another does B then A can still
deadlock (PostgreSQL detects it and aborts one).

Each template takes ``{src}``: a relation with columns (id, store_id, search_vector).
"""

# The text both chunks and queries are tokenised from. PostgreSQL's parser reads the
# digits after a hyphen as a signed number ("COVID-19" -> covid, -19; "IL-6" -> il, -6),
# keeps "covid19" whole and leaves ligatures (U+FB01 "fi") unfolded, so "COVID 19", "covid19"
# and "COVID-19" shared no lexeme. The rewrite, in order:
# 1. NFKC (ligatures, full-width and superscript digits) and Unicode hyphens/minus -> "-";
# 2. word delimiting with catenation (as Lucene's WordDelimiterGraphFilter): a letter run
#    joined to a digit run, with or without a hyphen, gives the parts and the joined form
#    ("COVID-19" and "covid19" -> "COVID 19 COVID19", "IL-6" -> "IL 6 IL6");
# 3. a hyphen between a letter or digit and a digit joins, it is no sign ("10-20" -> "10 20").
# A free-standing signed number ("at -5 C") keeps its sign. Changing the function needs a
# migration that re-runs it and re-tokenises the chunks (as domains/migrations/0006).
SEARCH_TEXT_FUNCTION = r"""
CREATE OR REPLACE FUNCTION klea_search_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT regexp_replace(
    regexp_replace(
        translate(normalize(t, NFKC), U&'\2010\2011\2012\2013\2212', '-----'),
        '\m([[:alpha:]]+)-?([0-9]+)\M', '\1 \2 \1\2', 'g'),
    '([[:alnum:]])-(?=[0-9])', '\1 ', 'g')
$$;
"""

# tf of one unnest(tsvector) row; a stripped lexeme (no positions) counts once.
TF = "coalesce(array_length(u.positions, 1), 1)"

ADD = f"""
INSERT INTO domains_bm25stats AS s (store_id, chunk_count, total_length)
SELECT c.store_id, count(*), coalesce(sum(l.len), 0)
FROM {{src}} c LEFT JOIN LATERAL (
    SELECT sum({TF}) AS len FROM unnest(c.search_vector) u
) l ON true
GROUP BY c.store_id ORDER BY c.store_id
ON CONFLICT (store_id) DO UPDATE
SET chunk_count = s.chunk_count + EXCLUDED.chunk_count,
    total_length = s.total_length + EXCLUDED.total_length;

INSERT INTO domains_bm25term AS t (store_id, lexeme, df)
SELECT c.store_id, u.lexeme, count(*)
FROM {{src}} c, unnest(c.search_vector) u
GROUP BY 1, 2 ORDER BY 1, 2
ON CONFLICT (store_id, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;

INSERT INTO domains_bm25posting (term_id, chunk_id, tf, dl)
SELECT t.id, x.id, x.tf, x.dl
FROM (
    SELECT c.id, c.store_id, u.lexeme, {TF} AS tf,
           sum({TF}) OVER (PARTITION BY c.id) AS dl
    FROM {{src}} c, unnest(c.search_vector) u
) x
JOIN domains_bm25term t ON t.store_id = x.store_id AND t.lexeme = x.lexeme;
"""

REMOVE = f"""
PERFORM 1 FROM domains_bm25stats
WHERE store_id IN (SELECT store_id FROM {{src}} c)
ORDER BY store_id FOR UPDATE;

UPDATE domains_bm25stats s
SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
FROM (
    SELECT c.store_id, count(*) AS n, coalesce(sum(l.len), 0) AS len
    FROM {{src}} c LEFT JOIN LATERAL (
        SELECT sum({TF}) AS len FROM unnest(c.search_vector) u
    ) l ON true
    GROUP BY c.store_id
) d
WHERE s.store_id = d.store_id;

DELETE FROM domains_bm25stats WHERE chunk_count <= 0 AND store_id IN (SELECT store_id FROM {{src}} c);

DELETE FROM domains_bm25posting p
USING {{src}} c, unnest(c.search_vector) u, domains_bm25term t
WHERE t.store_id = c.store_id AND t.lexeme = u.lexeme
  AND p.term_id = t.id AND p.chunk_id = c.id;

UPDATE domains_bm25term t SET df = t.df - d.n
FROM (
    SELECT c.store_id, u.lexeme, count(*) AS n
    FROM {{src}} c, unnest(c.search_vector) u GROUP BY 1, 2
) d
WHERE t.store_id = d.store_id AND t.lexeme = d.lexeme;

DELETE FROM domains_bm25term t
USING (SELECT DISTINCT c.store_id, u.lexeme FROM {{src}} c, unnest(c.search_vector) u) d
WHERE t.store_id = d.store_id AND t.lexeme = d.lexeme AND t.df <= 0;
"""

# Only rows whose tokens or store changed take part in an UPDATE.
_CHANGED = (
    "(SELECT {side}.id, {side}.store_id, {side}.search_vector FROM old_rows o "
    "JOIN new_rows n ON n.id = o.id "
    "WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id)"
)

ON_INSERT = ADD.format(src="new_rows") + "RETURN NULL;"
ON_DELETE = REMOVE.format(src="old_rows") + "RETURN NULL;"
ON_UPDATE = (
    REMOVE.format(src=_CHANGED.format(side="o")) + ADD.format(src=_CHANGED.format(side="n")) + "RETURN NULL;"
)

# The postings table: created by SQL because Django cannot declare a primary key with
# INCLUDE columns (index-only scans need tf and dl in the index). No foreign keys: the
# triggers above are the only writers, and FK checks would cost one lookup per posting.
CREATE_POSTINGS = """
CREATE TABLE domains_bm25posting (
    term_id bigint NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    dl integer NOT NULL,
    CONSTRAINT domains_bm25posting_pkey PRIMARY KEY (term_id, chunk_id) INCLUDE (tf, dl)
);
"""
DROP_POSTINGS = "DROP TABLE domains_bm25posting;"

# Builds the index of chunks that existed before the triggers (the migration).
BACKFILL = ADD.format(src="(SELECT id, store_id, search_vector FROM domains_chunk)")
