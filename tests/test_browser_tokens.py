"""The API tokens page in a real browser (tests/browser.py) against a live daphne: reach it
from the header, create a token (shown once), use it on /v1/, revoke it; on a phone the
header and the page fit the screen."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from chat.models import ApiToken

from .browser import PHONE, browser_page, screenshot, sign_in, unreadable_buttons
from .chat_world import in_thread, world  # noqa: F401
from .live_daphne import LiveDaphne

pytestmark = pytest.mark.django_db


def ws_models(server, token: str) -> tuple[int, list[str]]:
    response = httpx.get(f"{server.url}/v1/models", headers={"Authorization": f"Bearer {token}"})
    if response.status_code != 200:
        return response.status_code, []
    return 200, [m["id"] for m in response.json()["data"] if m["id"].startswith("klea/ws")]


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desktop", "phone"])
def test_create_use_and_revoke_a_token(world, tmp_path, viewport):
    # no question is answered here: the server loads no model
    with LiveDaphne(tmp_path / "daphne.log", KLEA_WARM_START="false") as server, browser_page(viewport) as page:
        sign_in(page, server, world.bob)
        page.get_by_role("link", name="API tokens").click()
        expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
        expect(page.get_by_text("You have no tokens yet.")).to_be_visible()

        page.get_by_label("Name").fill("my editor")
        page.get_by_role("button", name="Create token").click()
        expect(page.get_by_text("Copy your new token now: it is shown only once.")).to_be_visible()
        token = page.get_by_label("New token").input_value()
        assert token.startswith("klea_") and len(token) == 48
        # a Copy button beside it puts the token on the clipboard
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        page.get_by_role("button", name="Copy").click()
        expect(page.locator(".new-token .copy-result")).to_have_text("Copied to the clipboard.")
        assert page.evaluate("navigator.clipboard.readText()") == token
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"tokens-created-{'phone' if viewport else 'desktop'}")
        assert unreadable_buttons(page) == {}
        assert ws_models(server, token) == (200, ["klea/wsarrays", "klea/wsneuro"])

        page.reload()  # shown once: a reload lists the prefix only
        expect(page.get_by_label("New token")).to_have_count(0)
        row = page.get_by_role("row", name="my editor")
        expect(row).to_contain_text(token[:12] + "…")
        row.get_by_role("button", name="Revoke my editor").click()
        expect(page.get_by_role("row", name="my editor")).to_contain_text("revoked")
        assert ws_models(server, token) == (401, [])

        # a link leads back to the chat (the logo was the only way)
        page.get_by_role("link", name="Back to the chat").click()
        expect(page).to_have_url(f"{server.url}/")
        # signing out lands on the sign-in page, which says so (once)
        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(f"{server.url}/accounts/login/")
        expect(page.get_by_role("status")).to_have_text("You are signed out.")
        page.reload()
        expect(page.get_by_role("status")).to_have_count(0)
    in_thread(lambda: ApiToken.objects.filter(user=world.bob).delete())


def test_where_the_clipboard_is_blocked_copy_selects_the_token(world, tmp_path):
    """Over plain HTTP on another host name, or with the permission refused, the Clipboard
    API fails: the token is selected for Ctrl+C and the page says so."""
    with LiveDaphne(tmp_path / "daphne.log", KLEA_WARM_START="false") as server, browser_page() as page:
        sign_in(page, server, world.bob)
        page.goto(f"{server.url}/tokens/")
        page.get_by_label("Name").fill("blocked")
        page.get_by_role("button", name="Create token").click()
        page.evaluate("Object.defineProperty(navigator, 'clipboard', {value: undefined})")
        page.get_by_role("button", name="Copy").click()
        expect(page.locator(".new-token .copy-result")).to_have_text(
            "Copying is blocked here: the token is selected, press Ctrl+C (Cmd+C on a Mac).")
        token = page.get_by_label("New token").input_value()
        assert page.evaluate("window.getSelection().toString() || document.activeElement.value.substring("
                             "document.activeElement.selectionStart, document.activeElement.selectionEnd)") == token
    in_thread(lambda: ApiToken.objects.filter(user=world.bob).delete())
