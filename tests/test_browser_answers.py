"""Answers as Markdown in a real browser, safely, and the chat layout on a laptop and a phone.

A fake Ollama (tests/fake_ollama.py) streams chosen answers through the real pipeline and
a real daphne; Chromium renders them (tests/browser.py). Screenshots: test-artifacts/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from playwright.sync_api import expect

from chat.models import ChatSession
from domains.models import Domain

from .browser import DESKTOP, PHONE, browser_page, screenshot, sign_in
from .chat_world import in_thread, world  # noqa: F401
from .fake_ollama import FakeOllama, Reply
from .live_daphne import LiveDaphne
from .pipeline_data import make_domain, material_files

pytestmark = pytest.mark.django_db
HOSTILE_SOURCE = 'Rendering notes: <img src=x onerror="window.pwned=1"> and [run](javascript:window.pwned=2) stay text.'
LIST = ("Klea renders answers as **Markdown** [{n}]:\n\n- lists stay lists\n- with `inline code`\n\n"
        "3. a quoted step keeps its number\n4. and so does the next\n\n")
REST = (
    "| Format | Extension |\n| --- | --- |\n| Markdown | `.md` |\n| PDF | `.pdf` |\n\n"
    "```python\nprint(\"<b>not bold</b>\")  # [{n}] in code is text\n```\n\n"
    'Raw HTML stays text: <img src=x onerror="window.pwned=1">\n\n'
    "Links: [docs](https://example.org/docs), [bad](javascript:window.pwned=2), "
    "[data](data:text/html,hi) and <mailto:team@example.org>."
)
WHITESPACE_HINT = "Type a question first: there is nothing to send."
# Classic script injections, each rendered by the page's own KleaMarkdown.render.
PAYLOADS = [
    "<script>window.pwned=1</script>", '<a href="javascript:window.pwned=1">x</a>', "<svg onload=window.pwned=1>",
    "<iframe src=javascript:window.pwned=1>", "<details open ontoggle=window.pwned=1>x</details>",
    "[x](javascript:window.pwned=1)", "[x](JaVaScRiPt:window.pwned=1)", "[x](&#106;avascript:window.pwned=1)",
    "[x](java\tscript:window.pwned=1)", "[x]( javascript:window.pwned=1 )", "<javascript:window.pwned=1>",
    "![x](javascript:window.pwned=1)", "[x](vbscript:msgbox(1))", "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](file:///etc/passwd)", "[x](//evil.example/x)", "[x]: javascript:window.pwned=1\n\n[x]",
    '[a](http://example.org "t\\" onmouseover=\\"window.pwned=1")', "`<b>` <b>bold</b> &lt;i&gt;",
]
AUDIT = """(payloads) => {
  const allowed = /^(https?:|mailto:)/i, found = [];
  for (const text of payloads) {
    const box = document.createElement("div");
    box.append(KleaMarkdown.render(text, null));
    document.body.append(box);  // in the document, so that any handler could fire
    for (const node of box.querySelectorAll("*")) {
      if (!["P", "A", "CODE", "STRONG", "EM"].includes(node.nodeName)) found.push(`${text}: <${node.nodeName}>`);
      for (const attr of node.attributes) {
        if (attr.name.startsWith("on") || (attr.name === "href" && !allowed.test(attr.value))) {
          found.push(`${text}: ${attr.name}=${attr.value}`);
        }
      }
    }
  }
  return found;
}"""


@pytest.fixture
def hostile(world):
    """A domain whose only source carries raw HTML and a javascript: link."""
    source = {"hostile.md": ({"title": "Rendering notes"}, [(["Rendering"], HOSTILE_SOURCE)])}
    in_thread(make_domain, "wshtml", "Notes on how answers are rendered in the browser.", source)
    try:
        yield
    finally:
        in_thread(lambda: Domain.objects.filter(name="wshtml").delete())


def cited(template: str, pieces: int = 9, hang: bool = False) -> Reply:
    """An answer citing hostile.md as [n] (its number in the request), streamed in pieces."""

    def compute(body):
        number = {name: n for n, name in material_files(body["messages"][0]["content"]).items()}["hostile.md"]
        text = template.format(n=number)
        split = [text[i:i + pieces] for i in range(0, len(text), pieces)]
        return Reply.hang(split) if hang else Reply.text("", pieces=split)

    return Reply.using(compute)


def scores() -> Reply:
    values = dict.fromkeys(("confidence", "coverage", "relevance", "groundedness", "coherence", "conciseness"), 0.9)
    return Reply.json({**values, "next_step": "continue", "summary": "Fine."})


def queries() -> Reply:
    return Reply.json({"queries": ["rendering answers"], "filters": {}})


def expect_rendered(answer) -> None:
    """The Markdown of LIST + REST as HTML: list, table, code, links; no raw HTML."""
    expect(answer.locator("ul > li")).to_have_text(["lists stay lists", "with inline code"])
    expect(answer.locator("li code")).to_have_text("inline code")
    expect(answer.locator("ol > li")).to_have_text(["a quoted step keeps its number", "and so does the next"])
    expect(answer.locator("ol")).to_have_attribute("start", "3")  # steps 3-4 of a recipe, not 1-2
    expect(answer.locator("strong")).to_have_text("Markdown")
    expect(answer.locator(".table-scroll > table th")).to_have_text(["Format", "Extension"])
    expect(answer.locator("table td")).to_have_text(["Markdown", ".md", "PDF", ".pdf"])
    expect(answer.locator("pre > code.language-python")).to_have_text(
        'print("<b>not bold</b>")  # [1] in code is text\n')
    expect(answer.locator("pre b")).to_have_count(0)
    expect(answer.locator("button.cite")).to_have_text(["[1]"])  # not the [1] in the code block
    # only http(s) and mailto links, opened in a new tab without access to this page
    links = answer.locator("a")
    expect(links).to_have_text(["docs", "mailto:team@example.org"])
    assert [links.nth(i).get_attribute("href") for i in range(2)] == ["https://example.org/docs",
                                                                      "mailto:team@example.org"]
    expect(links.first).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(links.first).to_have_attribute("target", "_blank")
    expect(answer).to_contain_text('Raw HTML stays text: <img src=x onerror="window.pwned=1">')
    expect(answer).to_contain_text("[bad](javascript:window.pwned=2), [data](data:text/html,hi)")
    expect(answer.locator("img, script, iframe")).to_have_count(0)


def test_markdown_answers_render_safely_stream_progressively_and_cite(world, hostile, tmp_path):
    sent: list[dict] = []
    with FakeOllama() as fake:
        fake.script(queries(), cited(LIST, hang=True), queries(), cited(LIST + REST), scores())
        env = {"KLEA_LLM_BACKEND": "ollama", "OLLAMA_HOST": fake.url}
        with LiveDaphne(tmp_path / "daphne.log", **env) as server, browser_page() as page:
            page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))))
            sign_in(page, server, world.bob)
            page.get_by_label("wshtml").check()

            # while the answer streams, what has arrived is already rendered
            page.get_by_label("Your question").fill("How are answers rendered?")
            page.get_by_label("Your question").press("Enter")
            streaming = page.locator(".message.assistant.streaming .text")
            expect(streaming.locator("ul > li")).to_have_text(["lists stay lists", "with inline code"])
            expect(streaming.locator("strong")).to_have_text("Markdown")
            page.get_by_role("button", name="Stop").click()
            expect(page.locator(".message.assistant .error")).to_have_text("Stopped: the answer is incomplete.")

            # the whole answer: list, table, code, safe links; [1] opens reference 1
            page.get_by_label("Your question").fill("And tables and code?")
            page.get_by_label("Your question").press("Enter")
            expect(page.locator(".message.assistant.streaming")).to_have_count(0)
            answer = page.locator(".message.assistant .text").nth(1)
            expect_rendered(answer)
            reference = page.locator(".message.assistant").nth(1).locator(".reference").first
            chunk = reference.locator(".chunk-text")
            expect(chunk).to_be_hidden()
            answer.locator("button.cite").click()
            expect(chunk).to_be_visible()
            expect(chunk).to_have_text(HOSTILE_SOURCE)  # the source's HTML is text too
            expect(reference).to_be_focused()
            screenshot(page, "chat-markdown")

            # known injections: no element, attribute or URL that could run script
            assert page.evaluate(AUDIT, PAYLOADS) == []
            page.wait_for_timeout(200)

            # the same rendering when the conversation is reloaded from history
            page.reload()
            answer = page.locator(".message.assistant .text").nth(1)
            expect_rendered(answer)
            answer.locator("button.cite").click()
            expect(page.locator(".message.assistant").nth(1).locator(".reference").first).to_be_focused()
            assert page.evaluate("window.pwned === undefined")
            assert page.locator("img").count() == 0
        assert [(frame["type"], frame.get("text")) for frame in sent] == [
            ("query", "How are answers rendered?"), ("cancel", None), ("query", "And tables and code?")]
        assert fake.unexpected == [] and fake.pending == 0
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()

# The header's items shown (menu button, brand, user name, links, the sign-out button): their
# text, how many lines the account items take, whether the name is cut short, whether all
# are on screen.
HEADER_LINE = """(header) => {
  const shown = (items) => items.filter((item) => item.getBoundingClientRect().width > 0);
  const items = shown([...header.querySelectorAll(".top-start > *, nav > span, nav > a, nav button")]);
  const account = shown([...header.querySelectorAll("nav > span, nav > a, nav button")]);
  const who = header.querySelector(".who");
  return {
    items: items.map((item) => item.textContent.trim()),
    lines: new Set(account.map((item) => Math.round(item.getBoundingClientRect().top))).size,
    nameCut: who.scrollWidth > who.clientWidth,
    inside: items.every((item) => item.getBoundingClientRect().left >= 0
      && item.getBoundingClientRect().right <= innerWidth),
  };
}"""


def test_phone_layout_keeps_the_question_box_and_collapses_the_conversation_list(world, hostile, tmp_path):
    wide = "| " + " | ".join(f"column{i}" for i in range(1, 13)) + " |\n" + "| --- " * 12 + "|\n| " + " | ".join(
        f"value{i}" for i in range(1, 13)) + " |"
    long_answer = "Everything the notes say [{n}]:\n\n" + "\n".join(f"- point {i}" for i in range(1, 61)) + "\n\n" + wide
    sent: list[dict] = []
    with FakeOllama() as fake:
        fake.script(queries(), cited(long_answer, pieces=40), scores())
        env = {"KLEA_LLM_BACKEND": "ollama", "OLLAMA_HOST": fake.url}
        with LiveDaphne(tmp_path / "daphne.log", **env) as server, browser_page(PHONE, touch=True) as page:
            page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))))
            in_thread(lambda: User.objects.filter(pk=world.bob.pk).update(is_staff=True))  # all four header items
            in_thread(lambda: ChatSession.objects.create(owner=world.bob, title="Earlier notes"))
            sign_in(page, server, world.bob)
            # the header is one line: the menu button, the brand, the name and the three links
            header = page.locator(".top").evaluate(HEADER_LINE)
            assert header == {"items": ["Conversations", "Klea", "ws-bob", "API tokens", "Admin", "Sign out"],
                              "lines": 1, "nameCut": False, "inside": True}
            page.set_viewport_size({"width": 320, "height": 640})  # the smallest phones: the name gives way
            assert page.locator(".top").evaluate(HEADER_LINE) == {
                "items": ["Conversations", "Klea", "API tokens", "Admin", "Sign out"], "lines": 1, "nameCut": False,
                "inside": True}
            assert page.evaluate("document.documentElement.scrollWidth") == 320
            page.set_viewport_size(PHONE)
            toggle = page.get_by_role("button", name="Conversations", exact=True)
            expect(toggle).to_have_attribute("aria-expanded", "false")
            expect(page.locator("#sessions")).to_be_hidden()  # collapsed behind the toggle

            # a question of spaces and new lines is refused with a hint, and nothing is sent
            box = page.get_by_label("Your question")
            expect(box).to_be_in_viewport()
            box.fill("  \n\t  ")
            page.get_by_role("button", name="Send").click()
            expect(page.locator("#question-hint")).to_have_text(WHITESPACE_HINT)
            expect(box).to_have_attribute("aria-invalid", "true")
            box.press("Enter")
            expect(page.locator(".message")).to_have_count(0)
            box.fill("\u200b\u200d\ufeff")  # zero-width characters show nothing either
            expect(page.locator("#question-hint")).to_have_text("")
            box.press("Enter")
            expect(page.locator("#question-hint")).to_have_text(WHITESPACE_HINT)
            expect(page.locator(".message")).to_have_count(0)
            box.fill("What do the rendering notes say?")
            expect(page.locator("#question-hint")).to_have_text("")  # typing clears it
            page.get_by_label("wshtml").check()

            # a long answer scrolls inside the thread; the question box stays on screen
            box.press("Enter")
            expect(page.locator(".message.assistant.streaming")).to_have_count(0)
            expect(page.locator(".message.assistant .text li")).to_have_count(60)
            thread = page.locator("#thread")
            assert thread.evaluate("(t) => t.scrollHeight > 2 * t.clientHeight")
            thread.evaluate("(t) => { t.scrollTop = 0; }")
            expect(box).to_be_in_viewport()
            expect(page.get_by_role("button", name="Send")).to_be_in_viewport()
            assert page.evaluate("document.documentElement.scrollHeight") <= PHONE["height"]
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            screenshot(page, "chat-phone-long")

            # a table wider than the bubble scrolls inside it; its far edge fades (the cue)
            table = page.locator(".message.assistant .table-scroll")
            table.scroll_into_view_if_needed()
            expect(table).to_have_class("table-scroll more-right")
            expect(table).to_have_attribute("aria-label", "Table, scrolls sideways")
            assert table.evaluate("(s) => s.scrollWidth > s.clientWidth && s.getBoundingClientRect().right <= innerWidth")
            assert table.evaluate("(s) => getComputedStyle(s).maskImage").startswith("linear-gradient(to right")
            screenshot(page, "chat-phone-wide-table")
            table.evaluate("(s) => { s.scrollLeft = s.scrollWidth; }")
            expect(table).to_have_class("table-scroll more-left")
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

            # the toggle opens the list; picking a conversation closes it again
            toggle.click()
            expect(toggle).to_have_attribute("aria-expanded", "true")
            rows = page.locator("#session-list li")
            expect(rows.locator(".open")).to_have_text(["What do the rendering notes say?", "Earlier notes"])
            # no hover on a touch screen: Rename and Delete only on the open conversation
            expect(rows.nth(0).get_by_role("button", name="Delete What do the rendering notes say?")).to_be_visible()
            expect(rows.nth(1).locator(".actions")).to_be_hidden()
            screenshot(page, "chat-phone-conversations")
            title = rows.nth(0).locator(".open")
            title.click()
            expect(page.locator("#sessions")).to_be_hidden()
            expect(toggle).to_have_attribute("aria-expanded", "false")
            expect(page.locator(".message.assistant .text li")).to_have_count(60)
            # on a touch screen the page does not focus the box by itself: no keyboard over the answer
            assert page.evaluate("document.activeElement.id") != "question"

            # on a laptop the list is always shown and the toggle is not
            page.set_viewport_size(DESKTOP)
            expect(page.locator("#sessions")).to_be_visible()
            expect(toggle).to_be_hidden()
            expect(box).to_be_in_viewport()
        assert [(frame["type"], frame["text"]) for frame in sent] == [("query", "What do the rendering notes say?")]
        assert fake.unexpected == [] and fake.pending == 0
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


LAPTOP = {"width": 1366, "height": 768}
SETTINGS_ANSWER = (
    "Set these [{n}]:\n\n| variable | default | meaning |\n|---|---|---|\n"
    "| `KLEA_LLM_BACKEND` | `ollama` if `OLLAMA_HOST` is set, `openai` if `KLEA_OPENAI_BASE_URL` is, else "
    "`extractive` | which backend answers the questions, and with it whether a model server is asked at all |\n"
    "| `REDIS_URL` | unset: eager Celery tasks, an in-memory channel layer | Celery broker, Channels layer and the "
    "per-session turn locks, e.g. `redis://127.0.0.1:6379/0`; then several daphne processes can serve one site |\n"
    "| `KLEA_RAG_EMBEDDING_MODEL` | `all-minilm` | the model servers' embedding model |\n\n"
    "Then start it:\n\n```\nOLLAMA_HOST=http://127.0.0.1:11434 KLEA_RAG_CHAT_MODEL=qwen3:0.6b "
    "KLEA_RAG_EMBEDDING_MODEL=all-minilm make run PORT=8001\n```\n"
)
GEOMETRY = """(body) => {
  const box = (node) => node.getBoundingClientRect();
  const scroller = body.querySelector(".table-scroll"), pre = body.querySelector("pre");
  return {
    body: Math.round(box(body).width),
    tableHidden: scroller.scrollWidth - scroller.clientWidth,
    cellsPastTheEdge: [...scroller.querySelectorAll("th, td")]
      .filter((cell) => box(cell).right > box(scroller).right + 0.5).length,
    meaningWraps: (() => {  // the long "meaning" text of the second row runs over several lines
      const range = document.createRange();
      range.selectNodeContents(scroller.querySelectorAll("tbody tr")[1].lastElementChild);
      return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size > 1;
    })(),
    codeHidden: pre.scrollWidth - pre.clientWidth > 0,
    codeInside: box(pre).right <= box(body).right,
    page: document.documentElement.scrollWidth,
  };
}"""


def test_on_a_laptop_the_answer_is_wide_its_table_wraps_and_its_code_scrolls(world, hostile, tmp_path):
    with FakeOllama() as fake:
        fake.script(queries(), cited(SETTINGS_ANSWER, pieces=60), scores())
        env = {"KLEA_LLM_BACKEND": "ollama", "OLLAMA_HOST": fake.url}
        with LiveDaphne(tmp_path / "daphne.log", **env) as server, browser_page(LAPTOP) as page:
            sign_in(page, server, world.bob)
            page.get_by_label("wshtml").check()
            page.get_by_label("Your question").fill("How do I configure an Ollama model?")
            page.get_by_label("Your question").press("Enter")
            expect(page.locator(".message.assistant.streaming")).to_have_count(0)
            body = page.locator(".message.assistant .body")
            # the answer takes the width beside the conversation list (64rem); the table fits
            # it, its cells' text wrapping, with no sideways scroll; the long command scrolls
            assert body.evaluate(GEOMETRY) == {"body": 1024, "tableHidden": 0, "cellsPastTheEdge": 0,
                                               "meaningWraps": True, "codeHidden": True, "codeInside": True,
                                               "page": LAPTOP["width"]}
            table = body.locator(".table-scroll")
            expect(table).to_have_class("table-scroll")  # no faded edge: nothing to scroll to
            expect(table).not_to_have_attribute("aria-label", "Table, scrolls sideways")
            expect(table.locator("th")).to_have_text(["variable", "default", "meaning"])
            screenshot(page, "chat-laptop-table")
        assert fake.unexpected == [] and fake.pending == 0
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()


# Bidi embeddings, overrides, pops and isolates, zero-width spaces, joiners and marks, the
# word joiner, the BOM and the Arabic letter mark.
INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u061c"
SHOWN = """(bad) => {
  const R = KleaRender, spoof = `report\\u202e${bad}fdp.exe`;
  const user = R.fill(R.message("user"), { content: `Is ${spoof} safe?` });
  const answer = R.fill(R.message("assistant"), { content: `**${spoof}** is a *PDF*${bad} [1].` });
  const refs = R.references([{ number: 1, kind: "document", title: `Title ${spoof}`, file_name: `docs/${spoof}`,
    domain: "wshtml", authors: [`A${bad}uthor`], chunks: [{ chunk_id: 1, heading_chain: `Head${bad}ing`,
    text: `Chunk ${spoof}` }] }]);
  return [R.visible(bad), user.querySelector(".text").textContent, answer.querySelector(".text").textContent,
          answer.querySelector(".text strong").textContent, refs.querySelector(".ref-title").textContent,
          refs.querySelector(".ref-meta").textContent, refs.querySelector(".ref-file").textContent,
          refs.querySelector("summary").textContent, refs.querySelector(".chunk-text").textContent];
}"""


def test_bidi_and_invisible_characters_are_dropped_from_everything_shown(world, tmp_path):
    """A file name such as "report<RLO>fdp.exe" reads "reportexe.pdf" in a browser; the
    page drops such characters from questions, answers, titles, file names and chunks."""
    with LiveDaphne(tmp_path / "daphne.log", KLEA_WARM_START="false") as server, browser_page() as page:
        sign_in(page, server, world.bob)
        assert page.evaluate(SHOWN, INVISIBLE) == [
            "", "Is reportfdp.exe safe?", "reportfdp.exe is a PDF [1].\n", "reportfdp.exe", "Title reportfdp.exe",
            "Author", "wshtml · docs/reportfdp.exe", "Heading", "Chunk reportfdp.exe\n"]


# Markdown -> [[each ordered list's item numbers as shown]], by the page's own scripts.
LIST_NUMBERS = """(text) => {
  const box = document.createElement("div");
  box.append(KleaMarkdown.render(text));
  return [...box.querySelectorAll("ol")].map((list) => {  // HTML's ordinal values: value="n", else one more
    let number = list.start - 1;
    return [...list.children].map((item) => (number = item.hasAttribute("value") ? item.value : number + 1));
  });
}"""


@pytest.mark.parametrize(("text", "numbers"), [
    # two quoted steps of a recipe, a blank line apart: one list, steps 7 and 15 (not 7 and 8)
    ("7. Preheat oven to 350°F.\n\n15. Bake 45 minutes at 350°F.", [[7, 15]]),
    ("3. a quoted step\n4. and the next", [[3, 4]]),
    ("1. one\n1. two\n1. three", [[1, 2, 3]]),  # numbered lazily: counted as usual
    ("2. two\n5. five\n4. four", [[2, 3, 4]]),  # not rising: counted as usual
    ("1. a\n   1. nested\n   4. nested\n2. b", [[1, 2], [1, 4]]),
    ("- a bullet\n\n10. ten\n\n12. twelve", [[10, 12]]),
])
def test_a_quoted_numbered_list_keeps_its_numbers(text, numbers):
    static = Path(settings.BASE_DIR, "chat", "static", "chat")
    with browser_page() as page:
        page.set_content("<!doctype html><body></body>")
        for script in ("vendor/markdown-it.min.js", "vendor/purify.min.js", "markdown.js"):
            page.add_script_tag(path=str(static / script))
        assert page.evaluate(LIST_NUMBERS, text) == numbers
