/* Rendering of messages and references. User text and source text go through
   textContent (never innerHTML); answers are Markdown rendered by markdown.js (raw HTML
   off, sanitised). Only http(s) URLs become links. Every text shown passes visible(). */
"use strict";

const KleaRender = (() => {
  /* Bidi controls (embeddings, overrides, isolates, the Arabic letter mark) and invisible
     characters (zero-width spaces, joiners and marks, word joiner, invisible operators,
     BOM), dropped from all text the page shows: in a file name, a title, an answer or a
     question they could reorder what is read ("report\u202Efdp.exe" reads "reportexe.pdf")
     or hide a difference. Joiners go too: an emoji sequence shows as its parts. */
  const INVISIBLE = /[\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;
  function visible(text) {
    return String(text).replace(INVISIBLE, "");
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = visible(value);
      else if (key === "class") node.className = value;
      else if (key === "title" || key === "aria-label" || key === "alt") node.setAttribute(key, visible(value));
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child) node.append(typeof child === "string" ? visible(child) : child);
    return node;
  }

  function safeLink(url, label) {
    let parsed;
    try { parsed = new URL(url); } catch (e) { return el("span", { text: label || url }); }
    if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return el("span", { text: label || url });
    return el("a", { href: parsed.href, target: "_blank", rel: "noopener noreferrer", text: label || url });
  }

  /* What a cited chunk's section is called under its reference: its headings without a
     first one that only repeats the reference's title (shown just above) when more follow;
     a chunk with no heading (a PDF's abstract, a scanned page) is named by where it is
     ("p. 1", "lines 1–8"), else "Cited text". */
  function sectionName(ref, chunk) {
    const same = (a, b) => a.replace(/\s+/g, " ").trim().toLowerCase() === b.replace(/\s+/g, " ").trim().toLowerCase();
    const headings = (chunk.headings || (chunk.heading_chain ? chunk.heading_chain.split(" > ") : []))
      .filter((heading) => heading && heading.trim());
    if (headings.length > 1 && ref.title && same(headings[0], ref.title)) headings.shift();
    if (headings.length) return headings.join(" > ");
    const where = typeof KleaSource !== "undefined" ? KleaSource.where(chunk) : "";
    return where || "Cited text";
  }

  function documentReference(ref) {
    const item = el("li", { class: "reference", "data-number": String(ref.number) });
    const head = el("div", { class: "ref-head" });
    head.append(el("span", { class: "ref-number", text: `[${ref.number}]` }), " ",
      el("strong", { class: "ref-title", text: ref.title || ref.file_name }));
    item.append(head);
    const facts = [];
    if (ref.authors && ref.authors.length) facts.push(ref.authors.join(", "));
    if (ref.year) facts.push(String(ref.year));
    if (ref.journal) facts.push(ref.journal);
    if (facts.length) item.append(el("div", { class: "ref-meta", text: facts.join(" · ") }));
    const pages = typeof KleaSource !== "undefined" && ref.pages ? ` · ${KleaSource.pageLabel(ref.pages)}` : "";
    item.append(el("div", { class: "ref-file", text: `${ref.domain} · ${ref.file_name}${pages}` }));
    const links = el("ul", { class: "ref-links" });
    if (ref.doi) links.append(el("li", {}, "DOI: ", safeLink(`https://doi.org/${ref.doi}`, ref.doi)));
    for (const link of ref.urls || []) {
      if (ref.doi && link.label === "doi") continue;  // the DOI line above already links it
      links.append(el("li", {}, `${link.label || "Link"}: `, safeLink(link.url)));
    }
    if (links.childElementCount) item.append(links);
    // The chunks the answer quotes are listed; the others retrieved with them are folded
    // under one "N more passages" (a paper cited for one passage listed seven heading
    // chains). Without quotes (a model's answer: which passage it used is not known) all are.
    const quoted = new Set([...(ref.quoted || []), ...(ref.markers || []).map((m) => m.chunk_id)]);
    const chunks = ref.chunks || [];
    const own = chunks.filter((chunk) => quoted.has(chunk.chunk_id));
    const rest = own.length ? chunks.filter((chunk) => !quoted.has(chunk.chunk_id)) : chunks;
    if (own.length) chunkSections(item, ref, own);
    if (own.length && rest.length) {
      const more = el("details", { class: "more-chunks" });
      more.append(el("summary", { text: rest.length === 1 ? "1 more passage retrieved, not quoted"
        : `${rest.length} more passages retrieved, not quoted` }));
      chunkSections(more, ref, rest);
      item.append(more);
    } else if (rest.length) {
      chunkSections(item, ref, rest);
    }
    return item;
  }

  /* `chunks` of `ref` appended to `box`: one <details> per heading chain (chunks of one
     section are listed under it once), each chunk's text with its "Show in source". */
  function chunkSections(box, ref, chunks) {
    const sections = new Map();
    for (const chunk of chunks) {
      const chain = sectionName(ref, chunk);
      let details = sections.get(chain);
      if (!details) {
        details = el("details", { class: "chunk" });
        details.append(el("summary", { text: chain }));
        sections.set(chain, details);
        box.append(details);
      }
      details.append(markdownBox(el("div", { class: "chunk-text" }), chunk.text || ""));
      if (typeof KleaSource !== "undefined" && KleaSource.viewable(chunk)) {
        const show = el("button", { type: "button", class: "small source-open",
          text: `Show in source · ${KleaSource.where(chunk)}` });
        // the passages the answer's markers quote from this chunk, highlighted as a marker does
        const passages = (ref.markers || []).filter((m) => m.chunk_id === chunk.chunk_id).flatMap((m) => m.passages);
        show.addEventListener("click", () => KleaSource.open(passages.length ? { ...chunk, passages } : chunk, show));
        details.append(show);
      }
    }
  }

  function toolReference(ref) {
    const item = el("li", { class: "reference tool-ref", "data-number": String(ref.number) });
    const head = el("div", { class: "ref-head" });
    head.append(el("span", { class: "ref-number", text: `[${ref.number}]` }), " ",
      el("strong", { class: "ref-title", text: ref.title || `${ref.server}.${ref.tool}` }));
    item.append(head);
    const args = typeof ref.arguments === "string" ? ref.arguments : JSON.stringify(ref.arguments);
    item.append(el("div", { class: "ref-meta", text: `tool ${ref.server}.${ref.tool}(${args}) · ${ref.status}` }));
    const details = el("details", { class: "chunk" });
    details.append(el("summary", { text: ref.truncated ? "Tool result (cut)" : "Tool result" }));
    details.append(el("p", { class: "chunk-text", text: ref.text || "" }));
    item.append(details);
    return item;
  }

  function references(refs) {
    const section = el("section", { class: "references" });
    section.append(el("h3", { text: "References" }));
    const list = el("ol", { class: "reference-list" });
    for (const ref of refs) {
      if (ref.hidden) {  /* a domain the reader may no longer query (docs/security.md) */
        list.append(el("li", { class: "reference hidden-ref", "data-number": String(ref.number),
          text: `[${ref.number}] hidden: its domain is no longer available to you` }));
      } else {
        list.append(ref.kind === "tool" ? toolReference(ref) : documentReference(ref));
      }
    }
    section.append(list);
    return section;
  }

  function warnings(texts) {
    const box = el("ul", { class: "warnings", role: "note" });
    for (const text of texts) box.append(el("li", { text }));
    return box;
  }

  function toolLine(event) {
    const args = typeof event.arguments === "string" ? event.arguments : JSON.stringify(event.arguments);
    const status = event.phase === "start" ? "running" : event.status + (event.message ? ` (${event.message})` : "");
    return `${event.server ? event.server + "." : ""}${event.tool}(${args}): ${status}`;
  }

  /* One message of the conversation: {role, content, status, references, warnings, error}. */
  function message(role) {
    const item = el("li", { class: `message ${role}` });
    item.append(el("div", { class: "role", text: role === "user" ? "You" : "Klea" }));
    const body = el("div", { class: "body" });
    body.append(el("div", { class: "warnings-slot" }), el("div", { class: "text" }),
      el("ul", { class: "tools" }), el("div", { class: "errors" }), el("div", { class: "refs-slot" }));
    item.append(body);
    return item;
  }

  function fill(item, data) {
    if (data.references && data.references.length) setReferences(item, data.references);
    answerText(item, data.content || "");
    if (data.warnings && data.warnings.length) {
      item.querySelector(".warnings-slot").replaceChildren(warnings(data.warnings));
    }
    if (data.status === "interrupted") addError(item, "Stopped: the answer is incomplete.");
    if (data.status === "failed" && data.error) addError(item, data.error);
    return item;
  }

  /* The references of a message (the list under the answer, and the data that citation
     events carry); the answer is rendered again so that its [n] markers open them. */
  function setReferences(item, refs) {
    item.kleaReferences = refs;
    item.querySelector(".refs-slot").replaceChildren(references(refs));
    if (item.kleaText !== undefined) answerText(item, item.kleaText);
  }

  /* Open reference n of a message: its cited text shown (not the passages folded as not
     quoted), scrolled into view, focused. */
  function openReference(ref) {
    for (const details of ref.querySelectorAll(":scope > details.chunk")) details.open = true;
    ref.scrollIntoView({ block: "center" });
    ref.setAttribute("tabindex", "-1");
    ref.focus();
  }

  /* The chunk the k-th marker [n] opens (k from 0), with the passages it quotes: the
     chunk of its own passage (the reference's markers[k]), or the document as a whole
     when that marker cites it so (chunk_id null: an answer from its metadata), else the
     first quoted one that records where it is, else the first chunk that does (a model's
     answer: which passage it used is not known). */
  function quotedChunk(reference, k) {
    const chunks = (reference.chunks || []).filter((c) => KleaSource.viewable(c));
    const marker = (reference.markers || [])[k];
    if (marker && marker.chunk_id === null && reference.document_id) {
      return { document_id: reference.document_id, whole: true };
    }
    const own = marker && chunks.find((c) => c.chunk_id === marker.chunk_id);
    if (own) return { ...own, passages: marker.passages || [] };
    for (const id of reference.quoted || []) {
      const chunk = chunks.find((c) => c.chunk_id === id);
      if (chunk) return chunk;
    }
    return chunks[0] || null;
  }

  /* A citation marker [n] as a button, when the message has a reference n. A click first
     dispatches a cancelable "klea:cite" event on the message, detail {number, reference
     (its data), element (its list item)}; a listener that calls preventDefault() replaces
     the default action: openReference(), then the source view on the chunk this marker
     quotes (the reference's "markers"[k] for its k-th marker, k from 0, else "quoted"),
     or on the document's top when the marker cites it as a whole, else on its first
     chunk that records where it is (closing the view gives the focus
     back to the reference). */
  function citeButton(item, number, marker, k) {
    const element = item.querySelector(`.reference[data-number="${number}"]`);
    if (!element) return null;
    const button = el("button", { type: "button", class: "cite", text: marker, "aria-label": `Reference ${number}` });
    button.addEventListener("click", () => {
      const reference = (item.kleaReferences || []).find((ref) => ref.number === number) || null;
      const cite = new CustomEvent("klea:cite", { bubbles: true, cancelable: true,
        detail: { number, reference, element } });
      if (!item.dispatchEvent(cite)) return;
      openReference(element);
      const chunk = typeof KleaSource !== "undefined" && reference ? quotedChunk(reference, k) : null;
      if (chunk) KleaSource.open(chunk, element);
    });
    return button;
  }

  /* The text of a message: the user's as typed, Klea's as Markdown with citation buttons. */
  function answerText(item, text) {
    clearTimeout(item.kleaPending);
    item.kleaPending = undefined;
    item.kleaText = text;
    const box = item.querySelector(".text");
    if (item.classList.contains("user")) {
      box.textContent = visible(text);
      return;
    }
    const seen = {};  // number -> markers [n] rendered so far (text order = the markers' order)
    markdownBox(box, text, (number, marker) => {
      seen[number] = (seen[number] || 0) + 1;
      return citeButton(item, number, marker, seen[number] - 1);
    });
  }

  /* `box` (class "markdown", chat.css) filled with Markdown `text` rendered safely
     (markdown.js), `cite` as KleaMarkdown.render takes it: an answer, and a cited chunk's
     text, which is the same Markdown (its `code` showed as raw backticks). Returns `box`. */
  function markdownBox(box, text, cite) {
    box.classList.add("markdown");
    box.replaceChildren(KleaMarkdown.render(visible(text), cite));
    for (const scroller of box.querySelectorAll(".table-scroll")) {
      scroller.addEventListener("scroll", () => markScroll(scroller), { passive: true });
      markScroll(scroller);
    }
    return box;
  }

  /* A table wider than the bubble scrolls sideways; "more-right" / "more-left" say that
     there is more of it that way (chat.css fades that edge: the cue that it scrolls),
     and a table that scrolls can be scrolled with the keyboard. */
  function markScroll(scroller) {
    const hidden = scroller.scrollWidth - scroller.clientWidth;
    scroller.classList.toggle("more-right", hidden > 1 && scroller.scrollLeft < hidden - 1);
    scroller.classList.toggle("more-left", hidden > 1 && scroller.scrollLeft > 1);
    if (hidden > 1) {
      scroller.setAttribute("tabindex", "0");
      scroller.setAttribute("role", "region");
      scroller.setAttribute("aria-label", "Table, scrolls sideways");
    } else {
      for (const name of ["tabindex", "role", "aria-label"]) scroller.removeAttribute(name);
    }
  }
  window.addEventListener("resize", () => {
    for (const scroller of document.querySelectorAll(".markdown .table-scroll")) markScroll(scroller);
  });

  /* Streamed text: appended at once, rendered at most every RENDER_MS (a long answer is
     parsed again on each render, so not on every token). */
  const RENDER_MS = 80;
  function appendText(item, piece) {
    item.kleaText = (item.kleaText || "") + piece;
    if (item.kleaPending !== undefined) return;
    item.kleaPending = setTimeout(() => answerText(item, item.kleaText), RENDER_MS);
  }

  function addError(item, text) {
    item.querySelector(".errors").append(el("p", { class: "error", role: "alert", text }));
  }

  return { visible, el, message, fill, answerText, markdownBox, appendText, setReferences, openReference, references, warnings, toolLine,
    addError };
})();
