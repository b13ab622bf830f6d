"""What the browser tests share: Debian's headless Chromium driven by Playwright, signing
in, screenshots in test-artifacts/ (git-ignored).

A missing browser fails the test: ``make test`` installs /usr/bin/chromium first.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from .chat_world import PASSWORD

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(settings.BASE_DIR, "test-artifacts")
TIMEOUT_MS = 60_000
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@contextmanager
def browser_page(viewport: dict | None = None):
    """``with browser_page() as page:`` a fresh Chromium page (DESKTOP unless ``viewport``).

    Any uncaught JavaScript error on the page, and anything the page's
    Content-Security-Policy blocked (klea_site/csp.py), fails the test when the block ends.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make test` (it installs Debian's chromium)", pytrace=False)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport=viewport or DESKTOP)
            page.set_default_timeout(TIMEOUT_MS)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda message: errors.append(message.text)
                    if "Content Security Policy" in message.text else None)
            yield page
        finally:
            browser.close()
    assert errors == [], f"JavaScript errors or blocked content on the page: {errors}"


def sign_in(page, server, user) -> None:
    page.goto(f"{server.url}/accounts/login/?next=/")
    page.get_by_label("User name").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_label("Password").press("Enter")
    page.wait_for_url(f"{server.url}/")


def screenshot(page, name: str) -> None:
    """The whole page as test-artifacts/NAME.png."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
