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

- ``domains_bm25stats(store_id, chunk_count, total_length, impact_avgdl)``: N and sum
  of dl; the row exists while the store has chunks. ``impact_avgdl`` is the reference
  avgdl of the stored impacts: the store's avgdl when the row was created (its first
  statement of chunks), changed only by :data:`REREFERENCE` (``rereference_impacts``, which rewrites the impacts).
- ``domains_bm25term(id, store_id, lexeme, df)``: per-store term dictionary; a term
  exists while df > 0.
- ``domains_bm25posting(term_id, chunk_id, dl, tf, impact)``: one row per (lexeme,
  chunk); ``impact`` = ``klea_bm25_impact(tf, dl, impact_avgdl)``, the BM25 tf factor
  quantised to int2 (:data:`IMPACT_FUNCTION`). One unique index (term_id, impact DESC,
  tf, dl, chunk_id) serves all reads from the index alone: a term's postings best
  impact first (the pruned top-k, domains/retrieval/bm25.py), all of a term's postings
  (the exhaustive query), and one posting by all its columns (the triggers' deletes,
  which recompute the impact from the old tsvector).

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
# and "COVID-19" shared no lexeme; and it keeps a dotted name as one lexeme
# ("DataArray.ffill" -> dataarray.ffill, "xarray.open_dataset" -> xarray.open, dataset),
# so "ffill" or "open_dataset" missed it. The rewrite, in order:
# 1. NFKC (ligatures, full-width and superscript digits), Unicode hyphens/minus -> "-", and
#    the invisible characters that split a word without showing (soft hyphen U+00AD,
#    zero-width space/non-joiner/joiner U+200B-U+200D, word joiner U+2060, BOM U+FEFF)
#    removed, so "infor<U+00AD>mation" is "information";
# 2. word delimiting with catenation (as Lucene's WordDelimiterGraphFilter): a letter run
#    joined to a digit run, with or without a hyphen, gives the parts and the joined form
#    ("COVID-19" and "covid19" -> "COVID 19 COVID19", "IL-6" -> "IL 6 IL6");
# 3. a hyphen between a letter or digit and a digit joins, it is no sign ("10-20" -> "10 20");
# 4. a dot between a name and a name of two or more characters separates them
#    ("DataArray.ffill" -> "DataArray ffill", "xarray.open_dataset" -> "xarray open_dataset",
#    "ds.sel(...)" -> "ds sel(...)"), except inside a URL, path or e-mail address (after
#    "/", ":" or "@" with no space between) and in numbers and abbreviations ("3.14",
#    "v1.2.3", "e.g.", "U.S.A.", "Fig.2"), which stay as PostgreSQL reads them. Only the
#    parts are indexed: the whole name as well ranked the answering chunks of the answer
#    bench lower (docs/benchmarks.md, "Dotted names").
# A free-standing signed number ("at -5 C") keeps its sign. Changing the function needs a
# migration that re-runs it and re-tokenises the chunks (as domains/migrations/0006, 0009, 0016)
# and rebuilds the index of documents' bibliographic lexemes (REINDEX INDEX domains_document_bibliographic, 0019).
IGNORABLE = r"\00AD\200B\200C\200D\2060\FEFF"
# Two words of two or more letters joined by a slash ("safety/guard", "encode/decode"):
# PostgreSQL reads them as one file-path lexeme that neither word finds. A query adds the
# two words to that lexeme (domains/retrieval/bm25.py, :func:`query_lexemes`); chunks keep
# it whole: split in the index too ("NeuroML/LEMS" in some hundred NeuroML chunks), the
# answer bench ranked its answering files and evidence lower (docs/benchmarks.md, "Slashed
# words"). A longer path, a file name, a URL and one-letter pairs ("I/O") are no such pair.
SLASHED_WORDS = r"(?<![/:@.[:alnum:]_-])([[:alpha:]]{2,})/([[:alpha:]]{2,})(?![[:alnum:]_/]|\.[[:alnum:]])"
# Step 4's dot: after a name character, before a letter and a second name character, and
# not in a run of name characters (and dots, hyphens) that follows "/", ":" or "@".
NAME_DOT = r"(?<![/:@][[:alnum:]_.-]*)(?<=[[:alnum:]_])\.(?=[[:alpha:]][[:alnum:]_])"
SEARCH_TEXT_FUNCTION = r"""
CREATE OR REPLACE FUNCTION klea_search_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT regexp_replace(
    regexp_replace(
        regexp_replace(
            translate(normalize(t, NFKC), U&'\2010\2011\2012\2013\2212{IGNORABLE}', '-----'),
            '\m([[:alpha:]]+)-?([0-9]+)\M', '\1 \2 \1\2', 'g'),
        '([[:alnum:]])-(?=[0-9])', '\1 ', 'g'),
    '{NAME_DOT}', ' ', 'g')
$$;
""".replace("{IGNORABLE}", IGNORABLE).replace("{NAME_DOT}", NAME_DOT)

# The characters of a document's title that it is searched by (its bibliographic line,
# domains/retrieval/probe.py, and its heading-less chunks, SEARCH_SOURCE): a title is
# far shorter; cut, a longer one keeps a tsvector under PostgreSQL's 1 MB limit (up to
# ~7 bytes a character).
TITLE_CHARS = 5_000

# What a chunk is searched by (``{chunk}``: the row, NEW in the trigger): its heading chain,
# then its text; for a chunk without headings (a LICENSE file, a plain-text note, a page of
# a PDF: nothing names its subject), then its document's title (``metadata.title``, which
# ingestion sets before it stores the chunks: the converted title, else the file's name,
# docs/ingestion.md), so that it is found by what it is called. The title comes last: the
# text's lexemes keep their positions. A document without a title (BEIR's corpora) gains
# nothing. Changed in domains/migrations/0021, which re-tokenises only heading-less chunks
# of titled documents; a title edited in the metadata map re-tokenises them
# (ingestion/metadata/map.py).
# The title is cut to TITLE_CHARS: a chunk's tsvector must stay under PostgreSQL's 1 MB
# (a 1.5 MB heading as a Markdown file's title made every heading-less chunk's write fail,
# and with it the document; migration 0022).
SEARCH_SOURCE = (
    "array_to_string({chunk}.headings, ' ') || ' ' || {chunk}.text"
    " || CASE WHEN coalesce(cardinality({chunk}.headings), 0) = 0 THEN ' ' || coalesce(("
    "SELECT left(d.metadata ->> 'title', %d) FROM domains_document d WHERE d.id = {chunk}.document_id), '') ELSE '' END"
) % TITLE_CHARS

# tf of one unnest(tsvector) row; a stripped lexeme (no positions) counts once.
TF = "coalesce(array_length(u.positions, 1), 1)"

# One row per (chunk, lexeme) of ``{src}`` with its tf and the chunk's dl.
LEXEMES = f"""(
    SELECT c.id, c.store_id, u.lexeme, {TF} AS tf, sum({TF}) OVER (PARTITION BY c.id) AS dl
    FROM {{src}} c, unnest(c.search_vector) u
)"""

# The impact's fixed BM25 parameters: a query with other k1 or b cannot bound its scores
# by the stored impacts and runs exhaustively (domains/retrieval/bm25.py).
IMPACT_K1 = 1.2
IMPACT_B = 0.75
# Impacts are floor(IMPACT_SCALE * f) with f = tf / (tf + k1 (1 - b) + k1 b dl / avgdl_ref)
# in (0, 1), so f < (impact + 1) / IMPACT_SCALE: 2 bytes, and an exact integer to find a
# posting by (deletes recompute it from the same tf, dl and reference).
IMPACT_SCALE = 32767
IMPACT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION klea_bm25_impact(tf bigint, dl bigint, avgdl float8) RETURNS smallint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT floor({IMPACT_SCALE}::float8 * tf / (tf + {IMPACT_K1 * (1 - IMPACT_B):.12g}::float8
       + {IMPACT_K1 * IMPACT_B:.12g}::float8 * dl / avgdl))::smallint
$$;
"""
DROP_IMPACT_FUNCTION = "DROP FUNCTION klea_bm25_impact(bigint, bigint, float8);"

# The reference avgdl of a new stats row: the avgdl of its first chunks (at least 1, so a
# store of empty chunks divides by no zero).
REFERENCE_AVGDL = "greatest(coalesce(sum(l.len), 0)::float8 / count(*), 1)"

ADD = f"""
INSERT INTO domains_bm25stats AS s (store_id, chunk_count, total_length, impact_avgdl)
SELECT c.store_id, count(*), coalesce(sum(l.len), 0), {REFERENCE_AVGDL}
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

INSERT INTO domains_bm25posting (term_id, chunk_id, dl, tf, impact)
SELECT t.id, x.id, x.dl, x.tf, klea_bm25_impact(x.tf, x.dl, s.impact_avgdl)
FROM {LEXEMES.format(src="{src}")} x
JOIN domains_bm25term t ON t.store_id = x.store_id AND t.lexeme = x.lexeme
JOIN domains_bm25stats s ON s.store_id = x.store_id;
"""

REMOVE = f"""
PERFORM 1 FROM domains_bm25stats
WHERE store_id IN (SELECT store_id FROM {{src}} c)
ORDER BY store_id FOR UPDATE;

DELETE FROM domains_bm25posting p
USING {LEXEMES.format(src="{src}")} x, domains_bm25term t, domains_bm25stats s
WHERE t.store_id = x.store_id AND t.lexeme = x.lexeme AND s.store_id = x.store_id
  AND p.term_id = t.id AND p.impact = klea_bm25_impact(x.tf, x.dl, s.impact_avgdl)
  AND p.tf = x.tf AND p.dl = x.dl AND p.chunk_id = x.id;

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

# The postings table: created by SQL because Django cannot declare a descending index
# key. Columns in alignment order (a 48-byte heap tuple, a 32-byte index tuple). All
# columns are index keys, so every read is index-only and a delete finds its row by a
# single descent. No foreign keys: the triggers above are the only writers, and FK
# checks would cost one lookup per posting.
POSTINGS_TABLE = """
CREATE TABLE {name} (
    term_id bigint NOT NULL,
    chunk_id bigint NOT NULL,
    dl integer NOT NULL,
    tf smallint NOT NULL,
    impact smallint NOT NULL
);
"""
POSTINGS_INDEX = """
CREATE UNIQUE INDEX domains_bm25posting_impact ON domains_bm25posting
    (term_id, impact DESC, tf, dl, chunk_id);
"""
CREATE_POSTINGS = POSTINGS_TABLE.format(name="domains_bm25posting") + POSTINGS_INDEX
DROP_POSTINGS = "DROP TABLE domains_bm25posting;"

# Rewrite a store's impacts against its current avgdl (%(store)s), in this order in one
# transaction (the first statement takes the stats row lock, as the triggers do): after
# the store grew far from its reference, the pruned query's bound factor
# max(1, avgdl / impact_avgdl) weakens (docs/retrieval.md).
REREFERENCE = (
    """UPDATE domains_bm25stats SET impact_avgdl = greatest(total_length::float8 / chunk_count, 1)
    WHERE store_id = %(store)s""",
    """UPDATE domains_bm25posting p SET impact = klea_bm25_impact(p.tf, p.dl, s.impact_avgdl)
    FROM domains_bm25term t, domains_bm25stats s
    WHERE t.store_id = %(store)s AND s.store_id = t.store_id AND p.term_id = t.id
      AND p.impact <> klea_bm25_impact(p.tf, p.dl, s.impact_avgdl)""",
)

# Builds the index of chunks that existed before the triggers (the migration).
BACKFILL = ADD.format(src="(SELECT id, store_id, search_vector FROM domains_chunk)")
