"""Impact-ordered BM25 postings (issue 18): klea_bm25_impact, the stats' reference avgdl,
postings rebuilt as (term_id, chunk_id, dl, tf int2, impact int2) under one index
(term_id, impact DESC, tf, dl, chunk_id), triggers that keep the impacts.

The rebuild copies every posting once (about 1 min per 10 M postings on 2 cores)."""

import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations, models

from domains.bm25_sql import DROP_IMPACT_FUNCTION, IMPACT_FUNCTION, POSTINGS_INDEX, POSTINGS_TABLE

SET_REFERENCE = "UPDATE domains_bm25stats SET impact_avgdl = greatest(total_length::float8 / chunk_count, 1)"

REBUILD = (
    POSTINGS_TABLE.format(name="domains_bm25posting_new")
    + """
INSERT INTO domains_bm25posting_new (term_id, chunk_id, dl, tf, impact)
SELECT p.term_id, p.chunk_id, p.dl, p.tf, klea_bm25_impact(p.tf, p.dl, s.impact_avgdl)
FROM domains_bm25posting p
JOIN domains_bm25term t ON t.id = p.term_id
JOIN domains_bm25stats s ON s.store_id = t.store_id;
DROP TABLE domains_bm25posting;
ALTER TABLE domains_bm25posting_new RENAME TO domains_bm25posting;
"""
    + POSTINGS_INDEX
)

# The 0002 layout: primary key (term_id, chunk_id) INCLUDE (tf, dl).
UNBUILD = """
CREATE TABLE domains_bm25posting_old (
    term_id bigint NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    dl integer NOT NULL
);
INSERT INTO domains_bm25posting_old SELECT term_id, chunk_id, tf, dl FROM domains_bm25posting;
DROP TABLE domains_bm25posting;
ALTER TABLE domains_bm25posting_old RENAME TO domains_bm25posting;
ALTER TABLE domains_bm25posting
    ADD CONSTRAINT domains_bm25posting_pkey PRIMARY KEY (term_id, chunk_id) INCLUDE (tf, dl);
"""


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0006_chunk_search_text'),
    ]

    operations = [
        migrations.RunSQL(IMPACT_FUNCTION, reverse_sql=DROP_IMPACT_FUNCTION),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='bm25_insert',
        ),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='bm25_update',
        ),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='bm25_delete',
        ),
        migrations.AddField(
            model_name='bm25stats',
            name='impact_avgdl',
            field=models.FloatField(default=1.0),
        ),
        migrations.RunSQL(SET_REFERENCE, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(REBUILD, reverse_sql=UNBUILD),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='bm25_insert', sql=pgtrigger.compiler.UpsertTriggerSql(func='\nINSERT INTO domains_bm25stats AS s (store_id, chunk_count, total_length, impact_avgdl)\nSELECT c.store_id, count(*), coalesce(sum(l.len), 0), greatest(coalesce(sum(l.len), 0)::float8 / count(*), 1)\nFROM new_rows c LEFT JOIN LATERAL (\n    SELECT sum(coalesce(array_length(u.positions, 1), 1)) AS len FROM unnest(c.search_vector) u\n) l ON true\nGROUP BY c.store_id ORDER BY c.store_id\nON CONFLICT (store_id) DO UPDATE\nSET chunk_count = s.chunk_count + EXCLUDED.chunk_count,\n    total_length = s.total_length + EXCLUDED.total_length;\n\nINSERT INTO domains_bm25term AS t (store_id, lexeme, df)\nSELECT c.store_id, u.lexeme, count(*)\nFROM new_rows c, unnest(c.search_vector) u\nGROUP BY 1, 2 ORDER BY 1, 2\nON CONFLICT (store_id, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;\n\nINSERT INTO domains_bm25posting (term_id, chunk_id, dl, tf, impact)\nSELECT t.id, x.id, x.dl, x.tf, klea_bm25_impact(x.tf, x.dl, s.impact_avgdl)\nFROM (\n    SELECT c.id, c.store_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf, sum(coalesce(array_length(u.positions, 1), 1)) OVER (PARTITION BY c.id) AS dl\n    FROM new_rows c, unnest(c.search_vector) u\n) x\nJOIN domains_bm25term t ON t.store_id = x.store_id AND t.lexeme = x.lexeme\nJOIN domains_bm25stats s ON s.store_id = x.store_id;\nRETURN NULL;', hash='b527d16e2dea3e49bf57e0f7082fa22ef8cfa2ca', level='STATEMENT', operation='INSERT', pgid='pgtrigger_bm25_insert_b1f54', referencing='REFERENCING NEW TABLE AS new_rows ', table='domains_chunk', when='AFTER')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='bm25_update', sql=pgtrigger.compiler.UpsertTriggerSql(func='\nPERFORM 1 FROM domains_bm25stats\nWHERE store_id IN (SELECT store_id FROM (SELECT o.id, o.store_id, o.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c)\nORDER BY store_id FOR UPDATE;\n\nDELETE FROM domains_bm25posting p\nUSING (\n    SELECT c.id, c.store_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf, sum(coalesce(array_length(u.positions, 1), 1)) OVER (PARTITION BY c.id) AS dl\n    FROM (SELECT o.id, o.store_id, o.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c, unnest(c.search_vector) u\n) x, domains_bm25term t, domains_bm25stats s\nWHERE t.store_id = x.store_id AND t.lexeme = x.lexeme AND s.store_id = x.store_id\n  AND p.term_id = t.id AND p.impact = klea_bm25_impact(x.tf, x.dl, s.impact_avgdl)\n  AND p.tf = x.tf AND p.dl = x.dl AND p.chunk_id = x.id;\n\nUPDATE domains_bm25stats s\nSET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len\nFROM (\n    SELECT c.store_id, count(*) AS n, coalesce(sum(l.len), 0) AS len\n    FROM (SELECT o.id, o.store_id, o.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c LEFT JOIN LATERAL (\n        SELECT sum(coalesce(array_length(u.positions, 1), 1)) AS len FROM unnest(c.search_vector) u\n    ) l ON true\n    GROUP BY c.store_id\n) d\nWHERE s.store_id = d.store_id;\n\nDELETE FROM domains_bm25stats WHERE chunk_count <= 0 AND store_id IN (SELECT store_id FROM (SELECT o.id, o.store_id, o.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c);\n\nUPDATE domains_bm25term t SET df = t.df - d.n\nFROM (\n    SELECT c.store_id, u.lexeme, count(*) AS n\n    FROM (SELECT o.id, o.store_id, o.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c, unnest(c.search_vector) u GROUP BY 1, 2\n) d\nWHERE t.store_id = d.store_id AND t.lexeme = d.lexeme;\n\nDELETE FROM domains_bm25term t\nUSING (SELECT DISTINCT c.store_id, u.lexeme FROM (SELECT o.id, o.store_id, o.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c, unnest(c.search_vector) u) d\nWHERE t.store_id = d.store_id AND t.lexeme = d.lexeme AND t.df <= 0;\n\nINSERT INTO domains_bm25stats AS s (store_id, chunk_count, total_length, impact_avgdl)\nSELECT c.store_id, count(*), coalesce(sum(l.len), 0), greatest(coalesce(sum(l.len), 0)::float8 / count(*), 1)\nFROM (SELECT n.id, n.store_id, n.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c LEFT JOIN LATERAL (\n    SELECT sum(coalesce(array_length(u.positions, 1), 1)) AS len FROM unnest(c.search_vector) u\n) l ON true\nGROUP BY c.store_id ORDER BY c.store_id\nON CONFLICT (store_id) DO UPDATE\nSET chunk_count = s.chunk_count + EXCLUDED.chunk_count,\n    total_length = s.total_length + EXCLUDED.total_length;\n\nINSERT INTO domains_bm25term AS t (store_id, lexeme, df)\nSELECT c.store_id, u.lexeme, count(*)\nFROM (SELECT n.id, n.store_id, n.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c, unnest(c.search_vector) u\nGROUP BY 1, 2 ORDER BY 1, 2\nON CONFLICT (store_id, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;\n\nINSERT INTO domains_bm25posting (term_id, chunk_id, dl, tf, impact)\nSELECT t.id, x.id, x.dl, x.tf, klea_bm25_impact(x.tf, x.dl, s.impact_avgdl)\nFROM (\n    SELECT c.id, c.store_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf, sum(coalesce(array_length(u.positions, 1), 1)) OVER (PARTITION BY c.id) AS dl\n    FROM (SELECT n.id, n.store_id, n.search_vector FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.store_id <> n.store_id) c, unnest(c.search_vector) u\n) x\nJOIN domains_bm25term t ON t.store_id = x.store_id AND t.lexeme = x.lexeme\nJOIN domains_bm25stats s ON s.store_id = x.store_id;\nRETURN NULL;', hash='5c63d00beeced9c77ebb2e5f6a7bbcd5ac62dadb', level='STATEMENT', operation='UPDATE', pgid='pgtrigger_bm25_update_d0275', referencing='REFERENCING OLD TABLE AS old_rows  NEW TABLE AS new_rows ', table='domains_chunk', when='AFTER')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='bm25_delete', sql=pgtrigger.compiler.UpsertTriggerSql(func='\nPERFORM 1 FROM domains_bm25stats\nWHERE store_id IN (SELECT store_id FROM old_rows c)\nORDER BY store_id FOR UPDATE;\n\nDELETE FROM domains_bm25posting p\nUSING (\n    SELECT c.id, c.store_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf, sum(coalesce(array_length(u.positions, 1), 1)) OVER (PARTITION BY c.id) AS dl\n    FROM old_rows c, unnest(c.search_vector) u\n) x, domains_bm25term t, domains_bm25stats s\nWHERE t.store_id = x.store_id AND t.lexeme = x.lexeme AND s.store_id = x.store_id\n  AND p.term_id = t.id AND p.impact = klea_bm25_impact(x.tf, x.dl, s.impact_avgdl)\n  AND p.tf = x.tf AND p.dl = x.dl AND p.chunk_id = x.id;\n\nUPDATE domains_bm25stats s\nSET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len\nFROM (\n    SELECT c.store_id, count(*) AS n, coalesce(sum(l.len), 0) AS len\n    FROM old_rows c LEFT JOIN LATERAL (\n        SELECT sum(coalesce(array_length(u.positions, 1), 1)) AS len FROM unnest(c.search_vector) u\n    ) l ON true\n    GROUP BY c.store_id\n) d\nWHERE s.store_id = d.store_id;\n\nDELETE FROM domains_bm25stats WHERE chunk_count <= 0 AND store_id IN (SELECT store_id FROM old_rows c);\n\nUPDATE domains_bm25term t SET df = t.df - d.n\nFROM (\n    SELECT c.store_id, u.lexeme, count(*) AS n\n    FROM old_rows c, unnest(c.search_vector) u GROUP BY 1, 2\n) d\nWHERE t.store_id = d.store_id AND t.lexeme = d.lexeme;\n\nDELETE FROM domains_bm25term t\nUSING (SELECT DISTINCT c.store_id, u.lexeme FROM old_rows c, unnest(c.search_vector) u) d\nWHERE t.store_id = d.store_id AND t.lexeme = d.lexeme AND t.df <= 0;\nRETURN NULL;', hash='dcccb16d3b1a3f3d64bf9301755fe0fe18cc0e88', level='STATEMENT', operation='DELETE', pgid='pgtrigger_bm25_delete_3cfcc', referencing='REFERENCING OLD TABLE AS old_rows ', table='domains_chunk', when='AFTER')),
        ),
    ]
