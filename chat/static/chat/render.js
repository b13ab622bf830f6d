/* Rendering of messages and references. Every piece of model or user text goes through
   textContent (never innerHTML), and only http(s) URLs become links. */
"use strict";

const KleaRender = (() => {
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function safeLink(url, label) {
    let parsed;
    try { parsed = new URL(url); } catch (e) { return el("span", { text: label || url }); }
    if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return el("span", { text: label || url });
    return el("a", { href: parsed.href, target: "_blank", rel: "noopener noreferrer", text: label || url });
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
    item.append(el("div", { class: "ref-file", text: `${ref.domain} · ${ref.file_name}` }));
    const links = el("ul", { class: "ref-links" });
    if (ref.doi) links.append(el("li", {}, "DOI: ", safeLink(`https://doi.org/${ref.doi}`, ref.doi)));
    for (const link of ref.urls || []) {
      const row = el("li", {});
      row.append(`${link.label}: `, safeLink(link.url));
      links.append(row);
    }
    if (links.childElementCount) item.append(links);
    for (const chunk of ref.chunks || []) {
      const details = el("details", { class: "chunk" });
      details.append(el("summary", { text: chunk.heading_chain || "Cited text" }));
      details.append(el("p", { class: "chunk-text", text: chunk.text }));
      item.append(details);
    }
    return item;
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
    for (const ref of refs) list.append(ref.kind === "tool" ? toolReference(ref) : documentReference(ref));
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
    if (data.references && data.references.length) {
      item.querySelector(".refs-slot").replaceChildren(references(data.references));
    }
    answerText(item, data.content || "");
    if (data.warnings && data.warnings.length) {
      item.querySelector(".warnings-slot").replaceChildren(warnings(data.warnings));
    }
    if (data.status === "interrupted") addError(item, "Stopped: the answer is incomplete.");
    if (data.status === "failed" && data.error) addError(item, data.error);
    return item;
  }

  /* Open reference n of a message: its cited text shown, scrolled into view, focused. */
  function openReference(ref) {
    for (const details of ref.querySelectorAll("details.chunk")) details.open = true;
    ref.scrollIntoView({ block: "center" });
    ref.setAttribute("tabindex", "-1");
    ref.focus();
  }

  /* The text of a message; each [n] with a reference n in the message becomes a button. */
  function answerText(item, text) {
    const box = item.querySelector(".text");
    box.replaceChildren();
    let last = 0;
    for (const match of text.matchAll(/\[(\d+)\]/g)) {
      const ref = item.querySelector(`.reference[data-number="${match[1]}"]`);
      if (!ref) continue;
      box.append(text.slice(last, match.index));
      const cite = el("button", { type: "button", class: "cite", text: match[0],
        "aria-label": `Reference ${match[1]}` });
      cite.addEventListener("click", () => openReference(ref));
      box.append(cite);
      last = match.index + match[0].length;
    }
    box.append(text.slice(last));
  }

  function addError(item, text) {
    item.querySelector(".errors").append(el("p", { class: "error", role: "alert", text }));
  }

  return { el, message, fill, answerText, references, warnings, toolLine, addError };
})();
