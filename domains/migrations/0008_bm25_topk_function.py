"""klea_bm25_topk: exact BM25 top-k over the impact-ordered postings (domains/bm25_topk_sql.py)."""

from django.db import migrations

from domains.bm25_topk_sql import DROP_TOPK_FUNCTION, TOPK_FUNCTION


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0007_bm25_impacts'),
    ]

    operations = [
        migrations.RunSQL(TOPK_FUNCTION, reverse_sql=DROP_TOPK_FUNCTION),
    ]
