"""Domain.default_k defaults to 8 (was 5); domains still at the old default move with it.

A domain whose k was left at 5 never chose it, so it takes the new default too, unless
its k_max is below 8 (k_max >= default_k is a model rule; such a domain keeps 5).
Backwards: domains at 8 go back to 5.
"""

from django.core.validators import MinValueValidator
from django.db import migrations, models

OLD_DEFAULT, NEW_DEFAULT = 5, 8


def to_new_default(apps, schema_editor):
    Domain = apps.get_model("domains", "Domain")
    Domain.objects.filter(default_k=OLD_DEFAULT, k_max__gte=NEW_DEFAULT).update(default_k=NEW_DEFAULT)


def to_old_default(apps, schema_editor):
    Domain = apps.get_model("domains", "Domain")
    Domain.objects.filter(default_k=NEW_DEFAULT).update(default_k=OLD_DEFAULT)


class Migration(migrations.Migration):

    dependencies = [
        ("domains", "0013_bm25_topk_staged_survivors"),
    ]

    operations = [
        migrations.AlterField(
            model_name="domain",
            name="default_k",
            field=models.PositiveIntegerField(default=8, validators=[MinValueValidator(1)]),
        ),
        migrations.RunPython(to_new_default, to_old_default),
    ]
