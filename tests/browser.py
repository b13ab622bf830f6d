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
def browser_page(viewport: dict | None = None, touch: bool = False):
    """``with browser_page() as page:`` a fresh Chromium page (DESKTOP unless ``viewport``;
    ``touch``: a phone's touch screen, a coarse pointer without hover).

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
            page = browser.new_page(viewport=viewport or DESKTOP, has_touch=touch, is_mobile=touch)
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


# WCAG 2 contrast of each visible button's text against the first opaque background
# behind it (the button's own, else an ancestor's); the fallback is the canvas, white.
BUTTON_CONTRASTS = """() => {
  const rgba = (color) => color.match(/[\\d.]+/g).map(Number);
  const channel = (v) => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const behind = (node) => {
    for (let e = node; e; e = e.parentElement) {
      const color = rgba(getComputedStyle(e).backgroundColor);
      if (color.length < 4 || color[3] > 0) return color;
    }
    return [255, 255, 255];
  };
  return [...document.querySelectorAll("button")].filter((b) => b.checkVisibility() && b.innerText.trim())
    .map((b) => {
      const [high, low] = [luminance(rgba(getComputedStyle(b).color)), luminance(behind(b))].sort((x, y) => y - x);
      return [b.innerText.trim(), Math.round((high + 0.05) / (low + 0.05) * 10) / 10];
    });
}"""


def unreadable_buttons(page, minimum: float = 4.5) -> dict[str, list[tuple[str, float]]]:
    """The visible buttons whose text has less than ``minimum`` contrast (WCAG AA for
    text is 4.5) in the light and the dark colour scheme: ``{scheme: [(text, ratio)]}``
    with the schemes that have any; empty when all are readable. The page is left light."""
    found = {}
    for scheme in ("dark", "light"):
        page.emulate_media(color_scheme=scheme)
        low = [(text, ratio) for text, ratio in page.evaluate(BUTTON_CONTRASTS) if ratio < minimum]
        if low:
            found[scheme] = low
    return found
