"""klea_bm25_topk: MaxScore with a threshold seeded from exact scores (domains/bm25_topk_sql.py)
instead of iterative deepening; klea_bm25_scores scores chunks from their tsvectors."""

import importlib

from django.db import migrations

from domains.bm25_topk_sql import DROP_SCORES_FUNCTION, DROP_TOPK_FUNCTION, SCORES_FUNCTION, TOPK_FUNCTION

first = importlib.import_module("domains.migrations.0008_bm25_topk_function")


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0010_hnsw_denser_graph'),
    ]

    operations = [
        # dropped first: a parameter changes its name (p_depth -> p_seed)
        migrations.RunSQL(
            [SCORES_FUNCTION, DROP_TOPK_FUNCTION, TOPK_FUNCTION],
            reverse_sql=[DROP_TOPK_FUNCTION, first.TOPK_FUNCTION, DROP_SCORES_FUNCTION],
        ),
    ]
