from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ingestion', '0003_staged_files_and_job_outcomes'),
    ]

    operations = [
        migrations.AddField(
            model_name='stagedfile',
            name='sources',
            field=models.JSONField(blank=True, default=dict, help_text='What each source of the map said when last applied.'),
        ),
    ]
