"""An upload of more files than Django parses in one form (DATA_UPLOAD_MAX_NUMBER_FILES)
is refused with the reason, not a bare "Bad Request (400)" (the CSRF check reads the form
before the upload view can say why)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

pytestmark = pytest.mark.django_db


def test_an_upload_of_too_many_files_says_why(settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("admin", "a@example.org", "x"))
    client.get("/admin/ingestion/ingestionjob/upload/")
    token = client.cookies["csrftoken"].value
    files = [SimpleUploadedFile(f"f{i}.md", b"# T\n\nx\n") for i in range(4)]
    response = client.post("/admin/ingestion/ingestionjob/upload/", {"files": files, "csrfmiddlewaretoken": token})
    assert response.status_code == 400
    assert response.content.decode() == (
        "<!doctype html><title>Too many files</title><h1>Too many files</h1><p>/admin/ingestion/ingestionjob/upload/: "
        "one upload may hold at most 3 files; nothing was saved. Upload them in batches of 3 or fewer.</p>")
    # any other bad request keeps Django's page
    assert Client().get("/", HTTP_HOST="bad host").status_code == 400
