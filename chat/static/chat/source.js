/* The source view: a cited chunk where it is in its file (docs/api.md, "The source view").
   A PDF chunk opens its page as an image with the quoted passage highlighted (located on the
   page's text layer by the server), else the chunk's lines; previous and next page, zoom in / out (the page scrolls, the highlight stays on its lines), the page
   full size in a tab, and the original file to download; a text chunk opens its section with the
   passage highlighted; a document cited as a whole (an answer from its metadata) opens at its
   first page or the top of its file. The dialog is the page's <dialog id="source-view">; closing it gives
   the focus back to what opened it. Text from the server goes through textContent only. */
"use strict";

const KleaSource = (() => {
  const dialog = () => document.getElementById("source-view");
  let state = null;  // {info, page, zoom, opener}
  // Characters of quoted text sent with a request (the URL stays short; an answer's
  // marker quotes a few sentences).
  const MAX_QUOTE_URL = 6000;
  // Page widths, as multiples of the view's width: a phone shows a page ~370 px wide,
  // too small to read a line, so the page can be zoomed in (and scrolled) or opened whole.
  const ZOOMS = [1, 1.5, 2, 3];
  const WHOLE = "the document as a whole is cited";

  function pageLabel(pages) {
    if (!pages || !pages.length) return "";
    return pages[0] === pages[pages.length - 1] ? `p. ${pages[0]}` : `p. ${pages[0]}–${pages[pages.length - 1]}`;
  }

  /* Where a cited chunk is, as a short label: "p. 4–5", "lines 12–30", or "". */
  function where(chunk) {
    if (chunk.pages) return pageLabel(chunk.pages);
    if (chunk.lines) return chunk.lines[0] === chunk.lines[1] ? `line ${chunk.lines[0]}` : `lines ${chunk.lines[0]}–${chunk.lines[1]}`;
    return "";
  }

  function viewable(chunk) {
    if (chunk && chunk.whole) return Boolean(chunk.document_id);
    return Boolean(chunk && chunk.chunk_id && (chunk.pages || chunk.lines));
  }

  /* The highlight of a PDF chunk: the quoted passage's boxes when the server found it on
     the text layer, else the chunk's lines. */
  function marks(info) {
    return info.quoted && info.quoted.length ? { boxes: info.quoted, label: "quoted passage highlighted" }
      : { boxes: info.boxes, label: "cited passage highlighted" };
  }

  /* Where the source of `chunk` is served, with the passages it quotes when the server
     locates them (a PDF's text layer; a text source's lines are found here). */
  function sourceUrl(chunk) {
    if (chunk.whole) return `/api/documents/${chunk.document_id}/source`;
    let url = `/api/chunks/${chunk.chunk_id}/source`;
    if (chunk.pages) {
      const query = new URLSearchParams();
      for (const passage of chunk.passages || []) {
        if (query.toString().length + passage.length > MAX_QUOTE_URL) break;
        query.append("quote", passage);
      }
      if (query.toString()) url += `?${query}`;
    }
    return url;
  }

  /* Pixels of image to ask for: the frame's width on this screen (the server rounds up
     to one of a few sizes, so they cache). */
  function imageWidth(frame) {
    return Math.round(Math.max(frame.clientWidth, 320) * (window.devicePixelRatio || 1));
  }

  function showPage(number) {
    const { info, zoom } = state;
    const el = KleaRender.el;
    state.page = number;
    const body = dialog().querySelector(".source-body");
    const frame = el("div", { class: zoom > 1 ? "page-frame zoomed" : "page-frame" });
    if (zoom > 1) frame.style.width = `${zoom * 100}%`;
    body.replaceChildren(frame);
    const img = el("img", { class: "page-image", alt: `Page ${number} of ${info.file_name}` });
    img.addEventListener("load", () => { frame.classList.add("loaded"); }, { once: true });
    img.addEventListener("error", () => {
      body.replaceChildren(el("p", { class: "error", role: "alert", text: `Page ${number} could not be shown.` }));
    }, { once: true });
    frame.append(img);
    const highlight = marks(info);
    const here = highlight.boxes.filter((box) => box[0] === number);
    for (const [, left, top, right, bottom] of here) {
      frame.append(el("div", { class: "highlight", "aria-hidden": "true",
        style: `left:${left * 100}%;top:${top * 100}%;width:${(right - left) * 100}%;height:${(bottom - top) * 100}%` }));
    }
    img.src = `${info.page_url}${number}?width=${Math.round(imageWidth(body) * zoom)}`;
    const full = dialog().querySelector(".source-full");
    full.href = `${info.page_url}${number}?width=1600`;
    full.setAttribute("aria-label", `Page ${number} full size`);
    dialog().querySelector(".source-zoom-out").disabled = zoom <= ZOOMS[0];
    dialog().querySelector(".source-zoom-in").disabled = zoom >= ZOOMS[ZOOMS.length - 1];
    const count = info.page_count || number;
    dialog().querySelector(".source-where").textContent = `Page ${number} of ${count}` +
      (here.length ? ` · ${highlight.label}` : info.chunk_id === null && number === 1 ? ` · ${WHOLE}` : "");
    dialog().querySelector(".source-prev").disabled = number <= 1;
    dialog().querySelector(".source-next").disabled = number >= count;
    if (here.length) {
      img.addEventListener("load", () => frame.querySelector(".highlight").scrollIntoView(
        { block: "center", inline: "center" }), { once: true });
    }
  }

  const words = (text) => (text || "").toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];

  /* Where `needle` (words) is in `hay` (words), from index `from`: its index or -1. */
  function find(hay, needle, from) {
    outer: for (let i = Math.max(from, 0); i + needle.length <= hay.length; i++) {
      for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
      return i;
    }
    return -1;
  }

  /* The source lines (numbers) that hold the quoted `passages` (the chunk's Markdown text,
     verbatim) inside the section: each line of a passage (a paragraph, a list item, a
     table row) is found by its first and last words, searched from the chunk's first line,
     so a table row is its own line and not the rows between. Empty when none is found
     (the whole chunk is highlighted then). */
  function passageLines(section, passages) {
    const hay = [], lineOf = [];
    section.lines.forEach((line, index) => {
      for (const word of words(line)) { hay.push(word); lineOf.push(section.first + index); }
    });
    const chunkStart = lineOf.findIndex((number) => number >= section.highlight[0]);
    const marked = new Set();
    for (const passage of passages || []) {
      for (const line of passage.split("\n")) {
        const w = words(line);
        if (!w.length) continue;
        const size = Math.min(4, w.length);
        let start = find(hay, w.slice(0, size), chunkStart);
        if (start < 0) start = find(hay, w.slice(0, size), 0);
        if (start < 0) continue;
        let end = find(hay, w.slice(-size), start + w.length - size);
        if (end < 0 || end - start > 2 * w.length + 20) end = find(hay, w.slice(-size), start);
        if (end < 0 || end - start > 2 * w.length + 20) end = start;
        for (let n = lineOf[start]; n <= lineOf[end + size - 1]; n++) marked.add(n);
      }
    }
    return marked;
  }

  function showSection(info, passages) {
    const el = KleaRender.el;
    const body = dialog().querySelector(".source-body");
    const section = info.section;
    const [first, last] = section.highlight || [0, -1];  // none: the document cited as a whole
    const quoted = section.highlight ? passageLines(section, passages) : new Set();
    const marked = quoted.size ? (number) => quoted.has(number) : (number) => number >= first && number <= last;
    const pre = el("pre", { class: "source-text" });
    section.lines.forEach((line, index) => {
      const number = section.first + index;
      const row = el(marked(number) ? "mark" : "span", { class: "source-line", "data-line": String(number) });
      row.append(el("span", { class: "line-number", "aria-hidden": "true", text: String(number) }), line || " ");
      pre.append(row);
    });
    body.replaceChildren(pre);
    // Named first as the reference's "Show in source · lines a–b" names it (the cited chunk),
    // then the quoted lines when they are only a part of it: naming the quote alone made the
    // button say "lines 83–89" and this view "lines 83–86" for one chunk.
    const range = (a, b) => (a === b ? `line ${a}` : `lines ${a}–${b}`);
    let label = section.highlight ? range(first, last) : `${range(section.first, section.last)} · ${WHOLE}`;
    if (quoted.size) {
      const [top, bottom] = [Math.min(...quoted), Math.max(...quoted)];
      label += top === first && bottom === last ? " · quoted passage highlighted"
        : ` · quoted passage (${range(top, bottom)}) highlighted`;
    }
    dialog().querySelector(".source-where").textContent = label;
    scrollToMarks(body, pre);
  }

  /* Scroll `body` (the scroller) to the highlighted lines of `pre`: the whole range, centred,
     when it fits in the view; else the start of the last run of highlighted lines near the
     top, so a quoted table row far below its quoted header is on screen (and a single long
     passage opens at its start). */
  function scrollToMarks(body, pre) {
    const marks = [...pre.querySelectorAll("mark.source-line")];
    if (!marks.length) return;
    const origin = body.getBoundingClientRect().top - body.scrollTop;
    const at = (node) => node.getBoundingClientRect().top - origin;
    const final = marks[marks.length - 1];
    const start = at(marks[0]), span = at(final) + final.offsetHeight - start, view = body.clientHeight;
    if (span <= view) {
      body.scrollTop = Math.max(0, start - (view - span) / 2);
      return;
    }
    let run = marks.length - 1;  // back to the first of the adjacent marked lines ending the range
    while (run > 0 && marks[run].previousElementSibling === marks[run - 1]) run--;
    body.scrollTop = Math.max(0, at(marks[run]) - 2 * final.offsetHeight);
  }

  function showText(info) {
    const el = KleaRender.el;
    const body = dialog().querySelector(".source-body");
    const parts = [el("p", { class: "error", role: "alert",
      text: info.unavailable ? info.unavailable.message : "This source records no position for the passage." }),
    KleaRender.markdownBox(el("div", { class: "chunk-text" }), info.text || "")];
    body.replaceChildren(...parts);
  }

  function render(info, passages) {
    const box = dialog();
    box.querySelector(".source-title").textContent = KleaRender.visible(info.title || info.file_name);
    box.querySelector(".source-file").textContent = KleaRender.visible([info.domain, info.file_name,
      info.heading_chain].filter(Boolean).join(" · "));
    const download = box.querySelector(".source-download");
    download.href = info.file_url;
    download.setAttribute("download", KleaRender.visible(info.file_name.split("/").pop()));
    const paging = info.kind === "pdf" && !info.unavailable;
    box.querySelector(".source-paging").hidden = !paging;
    const first = marks(info).boxes[0];
    if (paging) showPage(first ? first[0] : info.pages ? info.pages[0] : 1);
    else if (info.section) showSection(info, passages);
    else showText(info);
  }

  /* Open the source view on `chunk` ({chunk_id, ...} of a reference, with `passages`: the
     text an answer's marker quotes of it, when known: those lines of a text source, that
     passage on a PDF page are highlighted), or on a document as a whole ({document_id,
     whole: true}); `opener` gets the focus back when it closes. */
  async function open(chunk, opener) {
    const box = dialog();
    if (!box || !viewable(chunk)) return false;
    state = { info: null, page: 0, zoom: 1, opener: opener || document.activeElement };
    box.querySelector(".source-title").textContent = "Loading the source…";
    box.querySelector(".source-file").textContent = "";
    box.querySelector(".source-where").textContent = "";
    box.querySelector(".source-body").replaceChildren();
    box.querySelector(".source-paging").hidden = true;
    if (!box.open) box.showModal();
    let response;
    try {
      response = await fetch(sourceUrl(chunk), { credentials: "same-origin" });
    } catch (e) {
      response = null;
    }
    if (!response || !response.ok) {
      box.querySelector(".source-title").textContent = "Source not available";
      box.querySelector(".source-body").replaceChildren(KleaRender.el("p", { class: "error", role: "alert",
        text: response && response.status === 404 ? "This source is not available to you." : "The source could not be loaded." }));
      return true;
    }
    state.info = await response.json();
    render(state.info, chunk.passages);
    return true;
  }

  function setUp() {
    const box = dialog();
    if (!box) return;
    box.querySelector(".source-close").addEventListener("click", () => box.close());
    box.querySelector(".source-prev").addEventListener("click", () => showPage(state.page - 1));
    box.querySelector(".source-next").addEventListener("click", () => showPage(state.page + 1));
    for (const [name, step] of [[".source-zoom-in", 1], [".source-zoom-out", -1]]) {
      box.querySelector(name).addEventListener("click", () => {
        const index = Math.max(0, Math.min(ZOOMS.length - 1, ZOOMS.indexOf(state.zoom) + step));
        state.zoom = ZOOMS[index];
        showPage(state.page);
      });
    }
    box.addEventListener("click", (event) => { if (event.target === box) box.close(); });  // the backdrop
    box.addEventListener("close", () => {
      const opener = state && state.opener;
      state = null;
      if (opener && opener.isConnected) opener.focus();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();

  return { open, where, viewable, pageLabel };
})();
