/* Live progress of ingestion jobs in the admin, from GET /api/jobs/<id> (docs/api.md).
   The job list refreshes its progress bars; the job page refreshes its heading and its
   "Progress" panel (bar, status, one row per file with its outcome and error, messages). Polling stops
   when every job shown has finished. All job text goes through textContent. */
"use strict";

(() => {
  const EVERY_MS = 1500;
  const FINISHED = new Set(["succeeded", "partial", "failed"]);
  const LABELS = { pending: "waiting", running: "running", succeeded: "succeeded", partial: "succeeded with errors",
    failed: "failed" };

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
    if (label) label.textContent = `${job.done}/${job.total} (${job.percent}%) ${LABELS[job.status] || job.status}`;
  }

  /* The job page's heading and the window title name the job as IngestionJob.__str__
     does: "build #2 (running, 1/24)"; they follow the live count like the bar. */
  function showTitle(job) {
    const heading = document.querySelector(".klea-job-title");
    if (!heading) return;
    const title = `${job.kind} #${job.id} (${job.status}, ${job.done}/${job.total})`;
    if (document.title.startsWith(heading.textContent)) {
      document.title = title + document.title.slice(heading.textContent.length);
    }
    heading.textContent = title;
  }

  function showPanel(panel, job) {
    showBar(panel.querySelector("progress"), job);
    showTitle(job);
    panel.dataset.status = job.status;
    const rows = Object.keys(job.outcomes).sort().map((name) => {
      const row = document.createElement("tr");
      const outcome = job.outcomes[name];
      row.append(cell("td", name), cell("td", outcome, `klea-outcome klea-outcome-${outcome}`),
        cell("td", job.errors[name] || ""));
      return row;
    });
    const waiting = job.total - job.done;
    if (waiting > 0) {
      const row = document.createElement("tr");
      row.append(cell("td", `${waiting} more file(s)`), cell("td", "waiting", "klea-outcome"), cell("td", ""));
      rows.push(row);
    }
    panel.querySelector("tbody").replaceChildren(...rows);
    panel.querySelector(".klea-job-messages").replaceChildren(...job.messages.map((text) => cell("li", text)));
    const finished = panel.querySelector(".klea-job-finished");
    finished.textContent = job.finished_at ? `Finished ${new Date(job.finished_at).toLocaleString()}` : "";
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
