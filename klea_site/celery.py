"""The Celery app. Broker = REDIS_URL; without it tasks run eagerly in-process.

Each worker process loads the passage embedding model as it starts (tasks embed passages,
never questions), so the first document does not wait for it.
"""

import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")

app = Celery("klea")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect(dispatch_uid="klea.warm_up")
def warm_up_worker(**kwargs):
    """In each pool process (prefork children; the solo pool's one process), after Django
    is set up. A thread: prefork waits only a few seconds for a child to come up."""
    from django.conf import settings

    from domains.embeddings import start_warm_up

    if settings.KLEA_WARM_START:
        start_warm_up()
