"""klea_bm25_topk: exact BM25 top-k over the impact-ordered postings, first version (iterative
deepening, Fagin's threshold algorithm; replaced by 0011). Its SQL is kept here as created, so
this migration and the reverse of 0011 recreate it whatever domains/bm25_topk_sql.py holds now."""

from django.db import migrations

from domains.bm25_sql import IMPACT_SCALE, TF

# Relative slack on the stopping and survivor tests (float rounding).
SLACK = 1e-9
# The bound met, survivors are scored from their tsvectors (~100 lexemes each): with more
# than max(4 k, 200) of them, one more round (which shrinks their bounds) is cheaper.
SURVIVORS_PER_K = 4
SURVIVORS_MIN = 200

TOPK_FUNCTION = f"""
CREATE OR REPLACE FUNCTION klea_bm25_topk(
    p_store bigint, p_terms text[], p_k integer, p_depth integer, p_k1 float8, p_b float8
) RETURNS TABLE (chunk_id bigint, score float8)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
DECLARE
    v_n float8; v_c1 float8; v_c2 float8; v_factor float8;
    v_ids bigint[]; v_w float8[]; v_lex text[];
    v_depth integer[]; v_ub float8[];
    v_total float8; v_theta float8; v_survivors bigint[]; v_active integer;
BEGIN
    SELECT s.chunk_count::float8, p_k1 * (1 - p_b), p_k1 * p_b * s.chunk_count / s.total_length::float8,
           greatest(1::float8, s.total_length::float8 / s.chunk_count / s.impact_avgdl)
    INTO v_n, v_c1, v_c2, v_factor
    FROM domains_bm25stats s WHERE s.store_id = p_store AND s.total_length > 0;
    IF NOT FOUND OR p_k <= 0 THEN
        RETURN;
    END IF;
    -- the exhaustive query's w, term order = id order
    SELECT array_agg(t.id ORDER BY t.id),
           array_agg(ln(1 + (v_n - t.df + 0.5::float8) / (t.df + 0.5::float8)) * (p_k1 + 1) ORDER BY t.id),
           array_agg(t.lexeme ORDER BY t.id)
    INTO v_ids, v_w, v_lex
    FROM domains_bm25term t WHERE t.store_id = p_store AND t.lexeme = ANY(p_terms);
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    v_depth := array_fill(greatest(p_depth, p_k, 1), ARRAY[cardinality(v_ids)]);
    LOOP
        WITH q AS (
            SELECT u.id, u.w, u.m, u.ord FROM unnest(v_ids, v_w, v_depth) WITH ORDINALITY AS u(id, w, m, ord)
        ), top AS MATERIALIZED (
            SELECT q.id AS term, q.w, p.chunk_id, p.tf, p.dl, p.impact
            FROM q CROSS JOIN LATERAL (
                SELECT p.chunk_id, p.tf, p.dl, p.impact FROM domains_bm25posting p
                WHERE p.term_id = q.id ORDER BY p.impact DESC LIMIT q.m
            ) p
        ), lists AS MATERIALIZED (
            SELECT q.id, q.ord, CASE WHEN count(top.term) < q.m THEN 0::float8
                              ELSE q.w * (min(top.impact) + 1) / {IMPACT_SCALE}::float8 * v_factor * (1 + {SLACK})
                         END AS ub
            FROM q LEFT JOIN top ON top.term = q.id GROUP BY q.id, q.ord, q.w, q.m
        ), cand AS (
            SELECT top.chunk_id, sum(top.w * top.tf / (top.tf + v_c1 + v_c2 * top.dl)) AS lo, sum(l.ub) AS seen_ub
            FROM top JOIN lists l ON l.id = top.term GROUP BY top.chunk_id
        ), bounds AS (
            SELECT (SELECT sum(ub) FROM lists) AS total,
                   coalesce((SELECT lo FROM cand ORDER BY lo DESC OFFSET p_k - 1 LIMIT 1), 0) AS theta
        )
        SELECT b.total, b.theta,
               ARRAY(SELECT c.chunk_id FROM cand c WHERE c.lo + (b.total - c.seen_ub) >= b.theta * (1 - {SLACK})),
               ARRAY(SELECT l.ub FROM lists l ORDER BY l.ord)
        INTO v_total, v_theta, v_survivors, v_ub
        FROM bounds b;
        EXIT WHEN v_total = 0
            OR (v_total < v_theta * (1 - {SLACK}) AND cardinality(v_survivors) <= greatest({SURVIVORS_PER_K} * p_k, {SURVIVORS_MIN}));
        -- Deepen (x4) the lists whose bound is at least the average reduction still needed
        -- (always the largest); when the bound is met but too many chunks survive, all.
        SELECT count(*) INTO v_active FROM unnest(v_ub) AS u(ub) WHERE u.ub > 0;
        SELECT array_agg(CASE WHEN u.ub > 0 AND (v_total < v_theta * (1 - {SLACK})
                                 OR u.ub * v_active >= v_total - v_theta * (1 - {SLACK}))
                              THEN u.m * 4 ELSE u.m END ORDER BY u.ord)
        INTO v_depth
        FROM unnest(v_ub, v_depth) WITH ORDINALITY AS u(ub, m, ord);
    END LOOP;
    RETURN QUERY
    SELECT c.id, sum(q.w * x.tf / (x.tf + v_c1 + v_c2 * x.dl) ORDER BY q.ord) AS score
    FROM domains_chunk c
    CROSS JOIN LATERAL (
        SELECT u.lexeme, {TF} AS tf, sum({TF}) OVER () AS dl FROM unnest(c.search_vector) u
    ) x
    JOIN unnest(v_lex, v_w) WITH ORDINALITY AS q(lexeme, w, ord) ON q.lexeme = x.lexeme
    WHERE c.id = ANY(v_survivors)
    GROUP BY c.id
    ORDER BY 2 DESC, 1
    LIMIT p_k;
END
$fn$;
"""

DROP_TOPK_FUNCTION = "DROP FUNCTION klea_bm25_topk(bigint, text[], integer, integer, float8, float8);"


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0007_bm25_impacts'),
    ]

    operations = [
        migrations.RunSQL(TOPK_FUNCTION, reverse_sql=DROP_TOPK_FUNCTION),
    ]
