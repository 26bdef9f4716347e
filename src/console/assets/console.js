// dueq console: the little script the pages use. Reading works without it; it adds
// confirmation dialogs to actions and live updates over server-sent events.
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});

function live(element) {
  const source = new EventSource(element.getAttribute("data-live"));
  source.addEventListener("update", (event) => {
    // Server-rendered, escaped HTML of this element's content.
    element.innerHTML = event.data;
    element.setAttribute("data-updated", String(Date.now()));
  });
  source.addEventListener("error", () => element.classList.add("stale"));
  source.addEventListener("open", () => element.classList.remove("stale"));
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live]").forEach(live);
});
