/* The source view: a cited chunk where it is in its file (docs/api.md, "The source view").
   A PDF chunk opens its page as an image with the chunk's lines highlighted, previous and
   next page, and the original file to download; a text chunk opens its section with the
   passage highlighted. The dialog is the page's <dialog id="source-view">; closing it gives
   the focus back to what opened it. Text from the server goes through textContent only. */
"use strict";

const KleaSource = (() => {
  const dialog = () => document.getElementById("source-view");
  let state = null;  // {info, page, opener}

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
    return Boolean(chunk && chunk.chunk_id && (chunk.pages || chunk.lines));
  }

  /* Pixels of image to ask for: the frame's width on this screen (the server rounds up
     to one of a few sizes, so they cache). */
  function imageWidth(frame) {
    return Math.round(Math.max(frame.clientWidth, 320) * (window.devicePixelRatio || 1));
  }

  function showPage(number) {
    const { info } = state;
    const el = KleaRender.el;
    state.page = number;
    const body = dialog().querySelector(".source-body");
    const frame = el("div", { class: "page-frame" });
    body.replaceChildren(frame);
    const img = el("img", { class: "page-image", alt: `Page ${number} of ${info.file_name}` });
    img.addEventListener("load", () => { frame.classList.add("loaded"); }, { once: true });
    img.addEventListener("error", () => {
      body.replaceChildren(el("p", { class: "error", role: "alert", text: `Page ${number} could not be shown.` }));
    }, { once: true });
    frame.append(img);
    const here = info.boxes.filter((box) => box[0] === number);
    for (const [, left, top, right, bottom] of here) {
      frame.append(el("div", { class: "highlight", "aria-hidden": "true",
        style: `left:${left * 100}%;top:${top * 100}%;width:${(right - left) * 100}%;height:${(bottom - top) * 100}%` }));
    }
    img.src = `${info.page_url}${number}?width=${imageWidth(body)}`;
    const count = info.page_count || number;
    dialog().querySelector(".source-where").textContent = `Page ${number} of ${count}` +
      (here.length ? " · cited passage highlighted" : "");
    dialog().querySelector(".source-prev").disabled = number <= 1;
    dialog().querySelector(".source-next").disabled = number >= count;
    if (here.length) {
      img.addEventListener("load", () => frame.querySelector(".highlight").scrollIntoView({ block: "center" }),
        { once: true });
    }
  }

  function showSection(info) {
    const el = KleaRender.el;
    const body = dialog().querySelector(".source-body");
    const section = info.section;
    const [first, last] = section.highlight;
    const pre = el("pre", { class: "source-text" });
    section.lines.forEach((line, index) => {
      const number = section.first + index;
      const row = el(number >= first && number <= last ? "mark" : "span", { class: "source-line",
        "data-line": String(number) });
      row.append(el("span", { class: "line-number", "aria-hidden": "true", text: String(number) }), line || " ");
      pre.append(row);
    });
    body.replaceChildren(pre);
    dialog().querySelector(".source-where").textContent = first === last ? `line ${first}` : `lines ${first}–${last}`;
    const mark = pre.querySelector("mark");
    if (mark) mark.scrollIntoView({ block: "center" });
  }

  function showText(info) {
    const el = KleaRender.el;
    const body = dialog().querySelector(".source-body");
    const parts = [el("p", { class: "error", role: "alert",
      text: info.unavailable ? info.unavailable.message : "This source records no position for the passage." }),
    el("p", { class: "chunk-text", text: info.text })];
    body.replaceChildren(...parts);
  }

  function render(info) {
    const box = dialog();
    box.querySelector(".source-title").textContent = info.title || info.file_name;
    box.querySelector(".source-file").textContent = [info.domain, info.file_name, info.heading_chain]
      .filter(Boolean).join(" · ");
    const download = box.querySelector(".source-download");
    download.href = info.file_url;
    download.setAttribute("download", info.file_name.split("/").pop());
    const paging = info.kind === "pdf" && !info.unavailable;
    box.querySelector(".source-paging").hidden = !paging;
    if (paging) showPage(info.pages ? info.pages[0] : 1);
    else if (info.section) showSection(info);
    else showText(info);
  }

  /* Open the source view on `chunk` ({chunk_id, ...} of a reference); `opener` gets the
     focus back when it closes. */
  async function open(chunk, opener) {
    const box = dialog();
    if (!box || !viewable(chunk)) return false;
    state = { info: null, page: 0, opener: opener || document.activeElement };
    box.querySelector(".source-title").textContent = "Loading the source…";
    box.querySelector(".source-file").textContent = "";
    box.querySelector(".source-where").textContent = "";
    box.querySelector(".source-body").replaceChildren();
    box.querySelector(".source-paging").hidden = true;
    if (!box.open) box.showModal();
    let response;
    try {
      response = await fetch(`/api/chunks/${chunk.chunk_id}/source`, { credentials: "same-origin" });
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
    render(state.info);
    return true;
  }

  function setUp() {
    const box = dialog();
    if (!box) return;
    box.querySelector(".source-close").addEventListener("click", () => box.close());
    box.querySelector(".source-prev").addEventListener("click", () => showPage(state.page - 1));
    box.querySelector(".source-next").addEventListener("click", () => showPage(state.page + 1));
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
