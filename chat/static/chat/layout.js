/* The chat page's layout helpers (no state of their own beyond what they are given):
   a thread that follows a streaming answer, the conversation list as a panel on phones,
   a question box that grows with its text. */
"use strict";

const KleaLayout = (() => {
  /* While running() is true, `thread` keeps the bottom of streamingText() in view as
     `content` grows, unless the reader scrolled up (then it stays where they are); what
     follows the text (the references) does not push it out of view. */
  function follow(thread, content, streamingText, running) {
    let following = true;
    const below = () => {  // pixels of the streaming text below the visible part of the thread
      const text = streamingText();
      return text ? text.getBoundingClientRect().bottom - thread.getBoundingClientRect().bottom : 0;
    };
    thread.addEventListener("scroll", () => { following = below() < 48; }, { passive: true });
    new ResizeObserver(() => {
      const hidden = below();
      if (running() && following && hidden > 0) thread.scrollTop += hidden + 12;
    }).observe(content);
  }

  function scrollToEnd(thread) {
    thread.scrollTop = thread.scrollHeight;
  }

  /* `panel` opened and closed by `toggle` (aria-expanded); Escape or a click outside
     closes it. CSS shows it as a panel only on narrow screens. :returns: show(open). */
  function drawer(toggle, panel) {
    const show = (open) => {
      document.documentElement.style.setProperty("--header-height", `${document.querySelector(".top").offsetHeight}px`);
      panel.classList.toggle("open", open);
      toggle.setAttribute("aria-expanded", String(open));
      if (open) (panel.querySelector("button") || panel).focus();
    };
    const isOpen = () => panel.classList.contains("open");
    toggle.addEventListener("click", () => show(!isOpen()));
    document.addEventListener("keydown", (key) => {
      if (key.key === "Escape" && isOpen()) {
        show(false);
        toggle.focus();
      }
    });
    document.addEventListener("click", (click) => {
      if (isOpen() && !panel.contains(click.target) && !toggle.contains(click.target)) show(false);
    });
    return show;
  }

  /* The box grows with its text up to its CSS max-height, then scrolls. */
  function fit(textarea) {
    textarea.style.height = "auto";
    textarea.style.height = `${textarea.scrollHeight + 2}px`;
  }

  return { follow, scrollToEnd, drawer, fit };
})();
