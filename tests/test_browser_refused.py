"""The chat page when the server refuses a query (docs/api.md, "Protocol errors"), in a
real browser against a real daphne server: a refused query runs no turn and gets no
``done``, so the page must stop waiting on the error's ``refused``, say why on the turn
and give the question back in the box; the next question is answered as usual.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from .browser import DESKTOP, browser_page, screenshot, sign_in
from .chat_world import world  # noqa: F401
from .live_daphne import LiveDaphne

pytestmark = pytest.mark.django_db
IZH = "Which neuron model is as cheap to simulate as integrate-and-fire?"
# Bytes: a 4,001-character ASCII question fits in a frame; 3,000 "é" (6,000 bytes) do not.
FRAME_LIMIT = 6000


def expect_ready_again(page, text: str) -> None:
    """Nothing is running any more, and ``text`` is back in the box, focused."""
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    expect(page.locator("#stage")).to_be_hidden()
    expect(page.locator(".message.assistant.streaming")).to_have_count(0)
    expect(page.get_by_label("Your question")).to_have_value(text)
    expect(page.get_by_label("Your question")).to_be_focused()


def test_a_refused_question_comes_back_to_the_box_and_the_next_one_is_answered(world, tmp_path):
    frames: list[dict] = []
    with LiveDaphne(tmp_path / "daphne.log", KLEA_WS_MAX_FRAME_BYTES=str(FRAME_LIMIT)) as server, \
            browser_page() as page:
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(json.loads(payload))))
        sign_in(page, server, world.bob)
        # the note beside the domains says what a question is asked of, as they are ticked
        note = page.locator("#domains-note")
        expect(page.get_by_label("wsarrays")).to_be_visible()
        expect(note).to_have_text("none ticked: chosen for you")
        page.get_by_label("wsarrays").check()
        page.get_by_label("wsneuro").check()
        expect(note).to_have_text("only the 2 ticked domains are asked")
        page.get_by_label("wsarrays").uncheck()
        expect(note).to_have_text("only the ticked domain is asked")
        box = page.get_by_label("Your question")
        errors = page.locator(".message.assistant .error")

        # too long: said while typing (never cut); Send sends nothing (the server would
        # refuse it: a doomed turn was shown), the text stays to be shortened
        long = ("How cheap is the Izhikevich model? " * 120)[:4001]
        box.fill(long)
        expect(page.locator("#question-hint")).to_have_text(
            "4,001 characters: a question may have 4,000 at most; shorten it by 1.")
        expect(box).to_have_attribute("aria-invalid", "true")
        box.press("Enter")
        expect_ready_again(page, long)
        expect(page.locator("#question-hint")).to_have_text(
            "4,001 characters: a question may have 4,000 at most; shorten it by 1.")
        expect(page.locator(".message")).to_have_count(0)
        # the count trims what the server's str.strip() trims: U+001F and U+0085 at an
        # end are not counted, U+FEFF is (String.trim() does the opposite)
        box.fill(long[:3999] + "\x1f\x85")
        expect(page.locator("#question-hint")).to_have_text("")
        box.fill(long[:4000] + "\ufeff")
        expect(page.locator("#question-hint")).to_have_text(
            "4,001 characters: a question may have 4,000 at most; shorten it by 1.")
        box.fill(long)
        page.wait_for_timeout(300)
        assert frames == []  # nothing sent: no error, no session, no turn
        screenshot(page, "chat-refused-too-long")

        # a frame over KLEA_WS_MAX_FRAME_BYTES is refused before it is read ("frame")
        wide = "é" * 3000
        box.fill(wide)
        expect(page.locator("#question-hint")).to_have_text("")
        box.press("Enter")
        size = len(json.dumps({"type": "query", "session": None, "text": wide, "domains": ["wsneuro"]},
                              ensure_ascii=False, separators=(",", ":")).encode())
        expect(errors.first).to_have_text(f"Not asked: frame of {size} bytes; the limit is {FRAME_LIMIT} bytes "
                                           "(too_large).")
        expect_ready_again(page, wide)
        assert [(f["code"], f["refused"]) for f in frames] == [("too_large", "frame")]

        # the question edited: answered
        box.fill(IZH)
        box.press("Enter")
        expect(page.locator(".message.assistant")).to_have_count(2)
        expect(page.locator(".message.assistant.streaming")).to_have_count(0)
        done = next(f for f in frames if f["type"] == "done")
        answer = next(f for f in frames if f["type"] == "answer")
        assert done["status"] == "complete" and answer["domains"] == ["wsneuro"]
        assert page.evaluate("document.querySelectorAll('.message.assistant')[1].kleaText") == answer["text"]
        expect(errors).to_have_count(1)
        expect(box).to_have_value("")
        session = next(f["session"] for f in frames if f["type"] == "session")

        # the conversation deleted in another browser: refused as not_found, the question
        # back; sending it again starts a new conversation
        visit = page.context.browser.new_context(viewport=DESKTOP)
        other = visit.new_page()
        sign_in(other, server, world.bob)
        other.once("dialog", lambda dialog: dialog.accept())
        other.locator("#session-list li").hover()  # its actions show on hover
        other.get_by_role("button", name=f"Delete {IZH}").click()
        expect(other.locator("#session-list li")).to_have_count(0)
        visit.close()
        box.fill(IZH)
        box.press("Enter")
        expect(errors.nth(1)).to_have_text(f"Not asked: no session {session} (not_found). "
                                           "Sending it again starts a new conversation.")
        expect_ready_again(page, IZH)
        box.press("Enter")
        expect(page.locator(".message.assistant")).to_have_count(4)
        expect(page.locator(".message.assistant.streaming")).to_have_count(0)
        sessions = [f["session"] for f in frames if f["type"] == "session"]
        assert len(sessions) == 2 and sessions[1] != session
        assert [f["status"] for f in frames if f["type"] == "done"] == ["complete", "complete"]
        listed = page.evaluate("fetch('/api/sessions').then((r) => r.json())")["sessions"]
        assert [row["id"] for row in listed] == [sessions[1]]
        expect(page.locator("#session-list li.current .open")).to_have_text(listed[0]["title"])
        screenshot(page, "chat-refused-then-answered")
        assert page.evaluate("document.documentElement.scrollHeight") == DESKTOP["height"]  # only the thread scrolls

        # the connection lost before the turn began: the question comes back too; once the
        # page has reconnected it is answered
        dropped: list[str] = []

        def drop_the_first_query(route):
            server_side = route.connect_to_server()

            def from_page(message):
                if not dropped and '"query"' in message:
                    dropped.append(message)
                    route.close()
                    server_side.close()
                else:
                    server_side.send(message)
            route.on_message(from_page)

        page.route_web_socket(re.compile(r"/ws/chat/$"), drop_the_first_query)
        page.reload()  # the page's next socket goes through the route
        expect(page.locator(".message")).to_have_count(2)  # the open conversation
        box.fill("Is the Izhikevich model cheap?")
        box.press("Enter")
        expect(page.locator(".message.assistant .error")).to_have_text(
            ["The connection was lost before the answer began."])
        expect_ready_again(page, "Is the Izhikevich model cheap?")
        expect(page.locator("#connection")).to_have_text("")  # reconnected
        box.press("Enter")
        expect(page.locator(".message.assistant")).to_have_count(3)
        expect(page.locator(".message.assistant.streaming")).to_have_count(0)
        expect(page.locator(".message.assistant").last.locator(".error")).to_have_count(0)
        assert len(dropped) == 1
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()
