"""klea_bm25_topk scans the unread lists one at a time for many survivors, dropping
those that can no longer reach theta (domains/bm25_topk_sql.py), instead of one pass
over every list or the exhaustive sum. Same signature and results."""

from django.db import migrations

from domains.bm25_topk_sql import TOPK_FUNCTION


class Migration(migrations.Migration):

    dependencies = [
        ('domains', '0012_fusion_label'),
    ]

    operations = [
        # reversed: the function stays (0011 installs the current text too; same results)
        migrations.RunSQL(TOPK_FUNCTION, reverse_sql=migrations.RunSQL.noop),
    ]
