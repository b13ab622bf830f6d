/* The API tokens page: a "Copy" button beside the token shown once (chat/tokens.html).
   The Clipboard API needs a secure context (HTTPS, or localhost); elsewhere the field is
   selected for Ctrl+C / Cmd+C and the page says so. */
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const field = document.getElementById(button.dataset.copy);
    const result = button.closest(".new-token")?.querySelector(".copy-result");
    const say = (text) => { if (result) result.textContent = text; };
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(field.value);
        say("Copied to the clipboard.");
      } catch (error) {  // no Clipboard API here (plain HTTP) or permission refused
        field.focus();
        field.select();
        say("Copying is blocked here: the token is selected, press Ctrl+C (Cmd+C on a Mac).");
      }
    });
  }
});
