"""SQL of the exact BM25 top-k with dynamic pruning: ``klea_bm25_topk`` (PL/pgSQL).

The exhaustive query (domains/retrieval/bm25.py) sums every posting of every query term:
a 19-term claim at 1M chunks reads 2 M postings into 839 k per-chunk sums, although the
top 50 need only the few chunks that match the rare terms or many terms at once.

Design: MaxScore (Turtle & Flood 1995) with a threshold seeded from exact scores.
Each posting stores ``impact`` = floor(32767 f_ref) with f_ref = tf / (tf + k1 (1 - b) +
k1 b dl / avgdl_ref), the BM25 tf factor against the store's reference avgdl
(``domains_bm25stats.impact_avgdl``, domains/bm25_sql.py); the index (term_id, impact
DESC, ...) gives a term's best posting in one probe. At query time (same k1, b; avgdl
now): f_now = tf / (tf + c1 + c2_ref dl / r) with r = avgdl_now / avgdl_ref, so
f_now <= f_ref * max(1, r) < (impact + 1) / 32767 * max(1, r), and no chunk gets more
than ub_t = w_t * (max impact of t + 1) / 32767 * max(1, r) from term t.

1. Read the shortest lists whole (ascending df, together at most ``p_seed`` postings, at
   least one list), summing for each chunk seen lo = its contributions from the read
   terms, in one aggregation.
2. theta = max(theta, the k-th best exact score of the ``max(2 k, 20)`` chunks of best
   lo), scored from their tsvectors: k real chunks score >= theta, so the k-th best
   score of the store is >= theta.
3. A chunk scores at most lo + rest, rest = sum of ub over the unread terms (a chunk in
   no read list: rest). If rest < theta, the survivors (lo + rest >= theta) hold the
   top k, ties included: every other chunk scores < theta <= the k-th best score.
4. Else (rest >= theta: only after step 1) read every list but MaxScore's
   non-essential terms (the smallest ub, as many as sum below theta, so rest < theta
   afterwards) and go back to 2 (one aggregation over all the read lists). With every
   list read, lo is the score: the exhaustive query itself.
5. Survivors: while there are more than ``max(10 k, 500)`` and scanning the next unread
   list costs less than scoring them from their tsvectors (``SCAN_PER_SCORE``), the
   unread list of the highest ub is scanned in a hash semi-join with the survivors (no sum per
   chunk of the list: a scanned posting costs ~1/6 of a summed one), its contributions
   are added to their lo, rest loses its ub, and the survivors with lo + rest < theta
   are dropped: rest falls fastest that way, and the long lists (lowest ub) come last,
   usually never scanned. The remaining survivors are scored exactly from their
   tsvectors; when every list was read, lo is their score and only the chunks within
   rounding of the k-th best lo are re-scored (for the summation order).

Rare terms have the high bounds and short lists, common terms the long lists and low
bounds: once theta is near the k-th score, the common terms are never read, only
looked up in the survivors' tsvectors. Exact scores (steps 2, 5) sum a chunk's terms in
term-id order, as the exhaustive query's hash aggregate does (lists read in id order),
so equal chunks get bit-equal scores and tie by id as there (step 5's partial sums only
choose the survivors). A relative slack of 1e-9 on the bounds covers float rounding (it
can only keep more survivors or read more).

Filters and k1/b other than the impacts' (bm25_sql.IMPACT_K1/IMPACT_B) run the
exhaustive query (domains/retrieval/bm25.py).
"""

from .bm25_sql import IMPACT_SCALE, TF

# Relative slack on the bounds (float rounding; see above).
SLACK = 1e-9
# Chunks scored exactly for theta: the max(THETA_PER_K k, THETA_MIN) of best partial sum.
THETA_PER_K = 2
THETA_MIN = 20
# Step 5 scans the next unread list while more than max(SURVIVORS_PER_K k, SURVIVORS_MIN)
# chunks survive and the list has fewer than SCAN_PER_SCORE postings per survivor:
# scoring a chunk from its tsvector (a random heap read; 0.03 ms cached, 0.2-0.5 ms when
# its page is not in shared buffers, measured at 220k chunks under load) costs about what
# scanning 100-400 postings in the semi-join does (0.3-1.2 us each), and a stage has a
# fixed cost (the survivors' arrays go through SQL).
SURVIVORS_PER_K = 10
SURVIVORS_MIN = 500
SCAN_PER_SCORE = 200

# Exact BM25 scores of chunks ``p_ids`` of lengths ``p_dl`` (dl as the postings store it):
# tf of each query lexeme from the chunk's tsvector, terms summed in ``p_lex`` order (term-id
# order). setweight + ts_filter keep the query's lexemes only (C, binary search) instead of
# unnesting all ~100: chunk tsvectors come from to_tsvector, so every lexeme has positions
# (ts_filter drops position-less ones).
SCORES_FUNCTION = f"""
CREATE OR REPLACE FUNCTION klea_bm25_scores(
    p_ids bigint[], p_dl integer[], p_lex text[], p_w float8[], p_c1 float8, p_c2 float8
) RETURNS TABLE (chunk_id bigint, score float8)
LANGUAGE sql STABLE AS $fn$
    SELECT c.id, sum(q.w * x.tf / (x.tf + p_c1 + p_c2 * d.dl) ORDER BY q.ord)
    FROM unnest(p_ids, p_dl) AS d(id, dl)
    JOIN domains_chunk c ON c.id = d.id
    CROSS JOIN LATERAL (
        SELECT u.lexeme, {TF} AS tf
        FROM unnest(ts_filter(setweight(setweight(c.search_vector, 'D'), 'A', p_lex), '{{a}}')) u
    ) x
    JOIN unnest(p_lex, p_w) WITH ORDINALITY AS q(lexeme, w, ord) ON q.lexeme = x.lexeme
    GROUP BY c.id
$fn$;
"""

TOPK_FUNCTION = f"""
CREATE OR REPLACE FUNCTION klea_bm25_topk(
    p_store bigint, p_terms text[], p_k integer, p_seed integer, p_k1 float8, p_b float8
) RETURNS TABLE (chunk_id bigint, score float8)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
DECLARE
    v_n float8; v_c1 float8; v_c2 float8; v_factor float8;
    v_ids bigint[]; v_w float8[]; v_lex text[]; v_df bigint[]; v_ub float8[];
    v_read boolean[];
    v_theta float8 := 0; v_rest float8; v_sum float8;
    v_survivors bigint[]; v_lo float8[]; v_dl integer[]; v_kth float8;
    v_top integer := greatest({THETA_PER_K} * p_k, {THETA_MIN});
    v_cap integer := greatest({SURVIVORS_PER_K} * p_k, {SURVIVORS_MIN});
    v_i bigint;
BEGIN
    SELECT s.chunk_count::float8, p_k1 * (1 - p_b), p_k1 * p_b * s.chunk_count / s.total_length::float8,
           greatest(1::float8, s.total_length::float8 / s.chunk_count / s.impact_avgdl)
    INTO v_n, v_c1, v_c2, v_factor
    FROM domains_bm25stats s WHERE s.store_id = p_store AND s.total_length > 0;
    IF NOT FOUND OR p_k <= 0 THEN
        RETURN;
    END IF;
    -- the exhaustive query's w, term order = id order; ub from the best posting
    SELECT array_agg(t.id ORDER BY t.id), array_agg(x.w ORDER BY t.id), array_agg(t.lexeme ORDER BY t.id),
           array_agg(t.df ORDER BY t.id),
           array_agg(x.w * (m.impact + 1) / {IMPACT_SCALE}::float8 * v_factor * (1 + {SLACK}) ORDER BY t.id)
    INTO v_ids, v_w, v_lex, v_df, v_ub
    FROM domains_bm25term t
    CROSS JOIN LATERAL (
        SELECT ln(1 + (v_n - t.df + 0.5::float8) / (t.df + 0.5::float8)) * (p_k1 + 1) AS w
    ) x
    CROSS JOIN LATERAL (
        SELECT p.impact FROM domains_bm25posting p WHERE p.term_id = t.id ORDER BY p.impact DESC LIMIT 1
    ) m
    WHERE t.store_id = p_store AND t.lexeme = ANY(p_terms);
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    -- 1. the shortest lists, at most p_seed postings together (at least one list)
    v_read := array_fill(false, ARRAY[cardinality(v_ids)]);
    v_sum := 0;
    FOR v_i IN SELECT u.ord FROM unnest(v_df) WITH ORDINALITY AS u(df, ord) ORDER BY u.df, u.ord LOOP
        EXIT WHEN v_sum > 0 AND v_sum + v_df[v_i] > p_seed;
        v_read[v_i] := true;
        v_sum := v_sum + v_df[v_i];
    END LOOP;
    LOOP
        SELECT coalesce(sum(u.ub), 0) INTO v_rest FROM unnest(v_ub, v_read) AS u(ub, r) WHERE NOT u.r;
        IF v_rest = 0 THEN
            -- every list read: the exhaustive query
            RETURN QUERY
            WITH q AS MATERIALIZED (SELECT u.id, u.w FROM unnest(v_ids, v_w) AS u(id, w))
            SELECT p.chunk_id, sum(q.w * p.tf / (p.tf + v_c1 + v_c2 * p.dl)) AS score
            FROM q CROSS JOIN LATERAL (
                SELECT p.chunk_id, p.tf, p.dl FROM domains_bm25posting p WHERE p.term_id = q.id
            ) p
            GROUP BY p.chunk_id
            ORDER BY 2 DESC, 1
            LIMIT p_k;
            RETURN;
        END IF;
        -- 2., 3. one aggregation of the read lists; theta from the best partial sums
        WITH q AS MATERIALIZED (
            SELECT u.id, u.w FROM unnest(v_ids, v_w, v_read) AS u(id, w, r) WHERE u.r
        ), cand AS MATERIALIZED (
            SELECT p.chunk_id, sum(q.w * p.tf / (p.tf + v_c1 + v_c2 * p.dl)) AS lo, min(p.dl) AS dl
            FROM q CROSS JOIN LATERAL (
                SELECT p.chunk_id, p.tf, p.dl FROM domains_bm25posting p WHERE p.term_id = q.id
            ) p
            GROUP BY p.chunk_id
        ), best AS MATERIALIZED (
            SELECT c.chunk_id, c.dl FROM cand c ORDER BY c.lo DESC LIMIT v_top
        ), th AS (
            SELECT greatest(v_theta, coalesce((
                SELECT e.score FROM klea_bm25_scores(
                    ARRAY(SELECT b.chunk_id FROM best b), ARRAY(SELECT b.dl FROM best b),
                    v_lex, v_w, v_c1, v_c2) e
                ORDER BY e.score DESC OFFSET p_k - 1 LIMIT 1), 0)) AS theta
        ), surv AS MATERIALIZED (  -- none while the unread bound reaches theta (step 4 next)
            SELECT c.chunk_id, c.lo, c.dl FROM cand c, th
            WHERE v_rest < th.theta * (1 - {SLACK}) AND c.lo + v_rest >= th.theta * (1 - {SLACK})
        )
        SELECT th.theta, ARRAY(SELECT s.chunk_id FROM surv s), ARRAY(SELECT s.lo FROM surv s),
               ARRAY(SELECT s.dl FROM surv s)
        INTO v_theta, v_survivors, v_lo, v_dl
        FROM th;
        EXIT WHEN v_rest < v_theta * (1 - {SLACK});
        -- 4. read every list but MaxScore's non-essential ones (smallest ub, summing below
        -- theta): then the unread bound is below theta
        v_sum := 0;
        FOR v_i IN SELECT u.ord FROM unnest(v_ub) WITH ORDINALITY AS u(ub, ord) ORDER BY u.ub, u.ord LOOP
            IF v_sum + v_ub[v_i] < v_theta * (1 - {SLACK}) THEN
                v_sum := v_sum + v_ub[v_i];
            ELSE
                v_read[v_i] := true;
            END IF;
        END LOOP;
    END LOOP;
    -- 5. the unread lists one at a time, best bound first, while scanning them costs less
    -- than scoring the survivors from their tsvectors: each adds its contributions to the
    -- survivors' partial sums (a hash semi-join) and drops the chunks that can no longer
    -- reach theta
    FOR v_i IN SELECT u.ord FROM unnest(v_ub, v_read) WITH ORDINALITY AS u(ub, r, ord)
               WHERE NOT u.r ORDER BY u.ub DESC, u.ord LOOP
        EXIT WHEN cardinality(v_survivors) <= v_cap
            OR cardinality(v_survivors)::bigint * {SCAN_PER_SCORE} <= v_df[v_i];
        v_read[v_i] := true;
        SELECT coalesce(sum(u.ub), 0) INTO v_rest FROM unnest(v_ub, v_read) AS u(ub, r) WHERE NOT u.r;
        SELECT coalesce(array_agg(x.id), '{{}}'), coalesce(array_agg(x.lo), '{{}}'), coalesce(array_agg(x.dl), '{{}}')
        INTO v_survivors, v_lo, v_dl
        FROM (
            SELECT s.id, s.lo + coalesce(p.c, 0) AS lo, s.dl
            FROM unnest(v_survivors, v_lo, v_dl) AS s(id, lo, dl)
            LEFT JOIN (
                SELECT p.chunk_id, v_w[v_i] * p.tf / (p.tf + v_c1 + v_c2 * p.dl) AS c
                FROM domains_bm25posting p WHERE p.term_id = v_ids[v_i]
            ) p ON p.chunk_id = s.id
        ) x
        WHERE x.lo + v_rest >= v_theta * (1 - {SLACK});
    END LOOP;
    IF v_rest = 0 AND cardinality(v_survivors) > v_cap THEN
        -- every list read: the partial sums are the scores (summed in another order, so
        -- to the last bits): keep the chunks that tie with the k-th or beat it
        SELECT u.lo INTO v_kth FROM unnest(v_lo) AS u(lo) ORDER BY u.lo DESC OFFSET p_k - 1 LIMIT 1;
        SELECT array_agg(u.id), array_agg(u.dl) INTO v_survivors, v_dl
        FROM unnest(v_survivors, v_lo, v_dl) AS u(id, lo, dl)
        WHERE v_kth IS NULL OR u.lo >= v_kth * (1 - {SLACK});
    END IF;
    -- exact scores (terms summed in id order) of the survivors
    RETURN QUERY
    SELECT e.chunk_id, e.score FROM klea_bm25_scores(v_survivors, v_dl, v_lex, v_w, v_c1, v_c2) e
    ORDER BY 2 DESC, 1
    LIMIT p_k;
END
$fn$;
"""
DROP_TOPK_FUNCTION = "DROP FUNCTION klea_bm25_topk(bigint, text[], integer, integer, float8, float8);"
DROP_SCORES_FUNCTION = "DROP FUNCTION klea_bm25_scores(bigint[], integer[], text[], float8[], float8, float8);"
