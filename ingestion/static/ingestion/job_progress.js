/* Live progress of ingestion jobs in the admin, from GET /api/jobs/<id> (docs/api.md).
   The job list refreshes its progress bars; the job page refreshes its heading and its
   "Progress" panel (bar, status, one row per file with its outcome and error, messages). Polling stops
   when every job shown has finished. All job text goes through textContent. */
"use strict";

(() => {
  const EVERY_MS = 1500;
  const FINISHED = new Set(["succeeded", "partial", "failed"]);

  function cell(tag, text, className) {
    const node = document.createElement(tag);
    node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function showBar(bar, job) {
    bar.max = 100;
    bar.value = job.percent;  // counts the OCRed pages of files in progress
    const label = bar.nextElementSibling;
    if (label) label.textContent = `${job.done}/${job.total} (${job.percent}%) ${job.status_label}`;
  }

  /* The job page's heading, breadcrumb and window title name the job as IngestionJob.__str__
     does: "build #2 (running, 1/24)"; they follow the live count like the bar. */
  function showTitle(job) {
    const heading = document.querySelector(".klea-job-title");
    if (!heading) return;
    const old = heading.textContent;
    const title = `${job.kind} #${job.id} (${job.status_label}, ${job.done}/${job.total})`;
    if (document.title.startsWith(old)) document.title = title + document.title.slice(old.length);
    const crumb = document.querySelector(".breadcrumbs")?.lastChild;  // the admin's text node "› build #2 (...)"
    if (crumb && crumb.nodeType === Node.TEXT_NODE && crumb.textContent.includes(old)) {
      crumb.textContent = crumb.textContent.replace(old, title);
    }
    heading.textContent = title;
  }

  /* One file: name, outcome (with its OCR progress, "(OCR page 15 of 30)", while in
     progress: progress is not an error) and error. */
  function fileRow(name, outcome, error, progress = "") {
    const row = document.createElement("tr");
    const slug = outcome.replace(/ /g, "-");
    const state = cell("td", outcome, `klea-outcome klea-outcome-${slug}`);
    if (progress) state.append(" ", cell("span", `(${progress})`, "klea-outcome-progress"));
    row.append(cell("td", name), state, cell("td", error));
    return row;
  }

  function showPanel(panel, job) {
    showBar(panel.querySelector("progress"), job);
    showTitle(job);
    panel.dataset.status = job.status;
    const rows = Object.keys(job.outcomes).sort().map((name) => fileRow(name, job.outcomes[name], job.errors[name] || ""));
    // files started, without an outcome yet (as IngestionJob.in_progress)
    const started = Object.keys(job.pages).sort().filter((name) => !(name in job.outcomes));
    for (const name of started) {
      const [done, total] = job.pages[name];
      rows.push(fileRow(name, "in progress", "", total ? `OCR page ${done} of ${total}` : ""));
    }
    const waiting = job.total - job.done - started.length;
    if (waiting > 0) {
      const row = document.createElement("tr");
      row.append(cell("td", `${waiting} more file(s)`), cell("td", "waiting", "klea-outcome"), cell("td", ""));
      rows.push(row);
    }
    panel.querySelector("tbody").replaceChildren(...rows);
    panel.querySelector(".klea-job-messages").replaceChildren(...job.messages.map((text) => cell("li", text)));
    const finished = panel.querySelector(".klea-job-finished");
    // the server's words for the date, as the page it rendered prints them
    finished.textContent = job.finished_label ? `Finished ${job.finished_label}` : "";
  }

  async function refresh(nodes) {
    let open = false;
    for (const node of nodes) {
      let job;
      try {
        const response = await fetch(node.dataset.jobUrl, { credentials: "same-origin" });
        if (!response.ok) continue;
        job = await response.json();
      } catch (error) {  // offline for a moment: try again on the next tick
        open = true;
        continue;
      }
      if (node.matches("progress")) showBar(node, job);
      else showPanel(node, job);
      open = open || !FINISHED.has(job.status);
    }
    if (open) setTimeout(() => refresh(nodes), EVERY_MS);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const nodes = [...document.querySelectorAll("[data-job-url]")];
    const open = nodes.filter((node) => !FINISHED.has(node.dataset.status));
    if (open.length) setTimeout(() => refresh(open), EVERY_MS);
  });
})();
