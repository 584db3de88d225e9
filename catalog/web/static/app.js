// sessdex serve: progressive enhancement only. Every page works without this script: the search form submits,
// "Next entries" is a link and the resume command is shown as text.
"use strict";

// Search as you type: on every change, fetch the results fragment for the form's current values and swap it in.
// One request at a time: changes made while one is answered are sent together when it returns, so the server never
// works on queries nobody waits for and the last keystroke is answered as soon as the server is free.
function liveSearch() {
  const input = document.getElementById("q");
  const results = document.getElementById("results");
  if (!input || !results || !window.fetch) return;
  const form = input.form;
  let busy = false;
  let pending = false;
  let shown = null;
  const run = () => {
    const params = new URLSearchParams(new FormData(form));
    const query = params.toString();
    if (busy) { pending = true; return; }
    if (query === shown) return;
    busy = true;
    history.replaceState(null, "", "/search?" + query);
    params.set("partial", "1");
    const sent = input.value;
    fetch("/search?" + params.toString(), {credentials: "same-origin"})
      .then((response) => response.ok ? response.text() : Promise.reject(response.status))
      .then((html) => { results.innerHTML = html; results.dataset.query = sent; shown = query; })
      .catch(() => {})
      .finally(() => { busy = false; if (pending) { pending = false; run(); } });
  };
  input.addEventListener("input", run);
  form.addEventListener("change", run);
  form.addEventListener("submit", (event) => { event.preventDefault(); run(); });
}

// A long transcript: fetch the next entries when the "Next entries" link scrolls into view, and append them.
function loadAsYouScroll() {
  const more = document.getElementById("more");
  const main = document.querySelector(".sx-transcript main");
  if (!more || !main || !window.fetch || !window.IntersectionObserver) return;
  let next = more.dataset.fragment;
  let busy = false;
  const observer = new IntersectionObserver((seen) => {
    if (!seen.some((item) => item.isIntersecting) || busy || !next) return;
    busy = true;
    fetch(next, {credentials: "same-origin"})
      .then((response) => response.ok ? response.text().then((html) => [html, response.headers.get("x-next-start")])
                                      : Promise.reject(response.status))
      .then(([html, start]) => {
        main.insertAdjacentHTML("beforeend", html);
        if (start) {
          const url = new URL(next, location.href);
          url.searchParams.set("start", start);
          next = url.pathname + url.search;
        } else {
          next = null;
          observer.disconnect();
          more.parentElement.remove();
        }
        busy = false;
      })
      .catch(() => { busy = false; });
  }, {rootMargin: "800px"});
  observer.observe(more);
}

// The resume command's copy button (shown only where the clipboard can be written).
function copyButtons() {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    if (!navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", () => {
      navigator.clipboard.writeText(button.dataset.copy).then(() => { button.textContent = "Copied"; },
                                                             () => { button.textContent = "Copy failed"; });
    });
  }
}

document.addEventListener("DOMContentLoaded", () => { liveSearch(); loadAsYouScroll(); copyButtons(); });
