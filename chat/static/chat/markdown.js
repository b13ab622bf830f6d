/* Answers as Markdown, safely. Two independent layers (vendored, see vendor/README.md):
   markdown-it with raw HTML off, only http(s)/mailto links, no images and no link
   reference definitions; then DOMPurify against an allow-list of tags and attributes.
   Citation markers [n] outside code and links are handed to a callback (render.js turns
   them into buttons that open reference n). */
"use strict";

const KleaMarkdown = (() => {
  const SAFE_URL = /^(?:https?:|mailto:)/i;
  const md = window.markdownit({ html: false, linkify: true, typographer: false });
  // Images would make the browser fetch any URL a source names; a definition "[1]: url"
  // would turn the citation marker [1] into a link to it.
  md.disable(["image", "reference"]);
  md.validateLink = (url) => SAFE_URL.test(url.trim());  // anything else stays literal text

  /* A quoted numbered list keeps its source's numbers: CommonMark numbers items from the
     first one on, so the steps "7." and "15." of an answer quoting two steps read 7 and 8.
     When the written numbers rise, each item shows its own (value="15"); otherwise (a
     list written "1. 1. 1.") they count up from the first as usual. */
  md.core.ruler.push("klea_list_numbers", (state) => {
    const lists = [];  // open lists, innermost last: the items of an ordered one, null for a bullet list
    for (const token of state.tokens) {
      if (token.type === "ordered_list_open") lists.push([]);
      else if (token.type === "bullet_list_open") lists.push(null);
      else if (token.type === "list_item_open" && lists.at(-1)) lists.at(-1).push(token);
      else if (token.type === "ordered_list_close" || token.type === "bullet_list_close") {
        const items = lists.pop() || [];
        const numbers = items.map((item) => Number(item.info));
        if (numbers.every((n, i) => i === 0 || n > numbers[i - 1])) {
          items.forEach((item, i) => {
            if (numbers[i] !== numbers[0] + i) item.attrSet("value", String(numbers[i]));
          });
        }
      }
    }
  });

  const purifier = DOMPurify(window);  // our own instance: its hooks touch nothing else
  const CONFIG = {
    ALLOWED_TAGS: ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "s", "code", "pre",
      "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a"],
    ALLOWED_ATTR: ["href", "title", "start", "value", "style", "class"],
    ALLOWED_URI_REGEXP: SAFE_URL,
    // DOMPurify tests attributes it does not know as URI-safe against ALLOWED_URI_REGEXP:
    // without this, a quoted list's start="3" was dropped and steps 3-5 read as 1-3.
    ADD_URI_SAFE_ATTR: ["start", "value"],
    RETURN_DOM_FRAGMENT: true,
  };
  purifier.addHook("uponSanitizeAttribute", (node, data) => {
    // markdown-it's own table alignment and fenced-code language, nothing else
    if (data.attrName === "style") data.keepAttr = /^text-align:(left|right|center)$/.test(data.attrValue);
    if (data.attrName === "class") data.keepAttr = node.nodeName === "CODE" && /^language-[\w+#.-]+$/.test(data.attrValue);
  });
  purifier.addHook("afterSanitizeAttributes", (node) => {
    if (node.nodeName === "A") {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  });

  const CITATION = /\[(\d+)\]/g;

  /* Replace [n] in the text nodes of `root` (outside code, pre and links) by cite(n), when
     cite returns a node for it. */
  function linkCitations(root, cite) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => (node.parentElement && node.parentElement.closest("code, pre, a")
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const texts = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node);
    for (const node of texts) {
      const text = node.nodeValue;
      const parts = [];
      let last = 0;
      for (const match of text.matchAll(CITATION)) {
        const button = cite(Number(match[1]), match[0]);
        if (!button) continue;
        parts.push(text.slice(last, match.index), button);
        last = match.index + match[0].length;
      }
      if (parts.length) node.replaceWith(...parts, text.slice(last));
    }
  }

  /* Markdown text -> a sanitised DocumentFragment. `cite(n, marker)` may return a node to
     put in place of the citation marker [n], or null to keep it as text. */
  function render(text, cite) {
    const wrapper = document.createElement("div");  // the fragment's root for closest()
    wrapper.append(purifier.sanitize(md.render(text), CONFIG));
    for (const table of wrapper.querySelectorAll("table")) {  // wide tables scroll, not the page
      const scroller = document.createElement("div");
      scroller.className = "table-scroll";
      table.replaceWith(scroller);
      scroller.append(table);
    }
    if (cite) {
      linkCitations(wrapper, cite);
      // A paragraph of markers alone cites the table or code block above it (a marker inside
      // a cell would read as its value): chat.css sets it as that block's source line.
      for (const p of wrapper.querySelectorAll("p")) {
        const nodes = [...p.childNodes];
        if (nodes.some((n) => n.nodeType === Node.ELEMENT_NODE) && nodes.every((n) => (
          n.nodeType === Node.ELEMENT_NODE ? n.matches("button.cite") : !n.nodeValue.trim()))) {
          p.classList.add("sources-line");
        }
      }
    }
    const fragment = document.createDocumentFragment();
    fragment.append(...wrapper.childNodes);
    return fragment;
  }

  return { render };
})();
