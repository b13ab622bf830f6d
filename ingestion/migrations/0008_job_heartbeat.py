from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ingestion', '0007_job_pages'),
    ]

    operations = [
        migrations.AddField(
            model_name='ingestionjob',
            name='heartbeat_at',
            field=models.DateTimeField(blank=True, help_text="Last sign of life of the process running the job's files on its background thread (empty for Celery and command runs); see ingestion/runs/lease.py.", null=True),
        ),
    ]
