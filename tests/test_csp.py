"""The Content-Security-Policy header (klea_site/csp.py): on every HTML page, never on
JSON or files. That the pages still work under it is what the browser tests check
(tests/browser.py fails a test on any blocked content)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from klea_site.csp import POLICY

pytestmark = pytest.mark.django_db


def test_the_policy_allows_scripts_from_the_site_only():
    assert POLICY == ("default-src 'self'; script-src 'self'; style-src 'self'; "
                      "style-src-elem 'self' 'unsafe-inline'; style-src-attr 'unsafe-inline'; "
                      "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
                      "form-action 'self'; frame-ancestors 'none'")


def test_html_pages_carry_the_policy_and_json_does_not():
    staff = User.objects.create_user("erin", password="pw-erin-123", is_staff=True, is_superuser=True)
    client = Client()
    for path in ("/accounts/login/", "/admin/login/"):
        response = client.get(path)
        assert (response.status_code, response["Content-Security-Policy"]) == (200, POLICY), path
    client.force_login(staff)
    for path in ("/", "/tokens/", "/admin/", "/admin/domains/domain/", "/admin/ingestion/ingestionjob/"):
        response = client.get(path)
        assert (response.status_code, response["Content-Security-Policy"]) == (200, POLICY), path
    for path in ("/api/domains", "/health", "/api/nothing"):
        response = client.get(path)
        assert response["Content-Type"] == "application/json"
        assert "Content-Security-Policy" not in response, path
