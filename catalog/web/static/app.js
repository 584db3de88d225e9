// sessdex serve: progressive enhancement only. Every page works without this script: the search form submits,
// "Next entries" is a link and the resume command is shown as text.
"use strict";

// Search as you type: after a short pause, fetch the results fragment for the form's current values and swap it in.
function liveSearch() {
  const input = document.getElementById("q");
  const results = document.getElementById("results");
  if (!input || !results || !window.fetch) return;
  const form = input.form;
  let timer = 0;
  let controller = null;
  let sequence = 0;
  const run = () => {
    const params = new URLSearchParams(new FormData(form));
    history.replaceState(null, "", "/search?" + params.toString());
    params.set("partial", "1");
    if (controller) controller.abort();
    controller = new AbortController();
    const mine = ++sequence;
    fetch("/search?" + params.toString(), {signal: controller.signal, credentials: "same-origin"})
      .then((response) => response.ok ? response.text() : Promise.reject(response.status))
      .then((html) => { if (mine === sequence) { results.innerHTML = html; results.dataset.query = input.value; } })
      .catch(() => {});
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(run, 30); };
  input.addEventListener("input", later);
  form.addEventListener("change", later);
  form.addEventListener("submit", (event) => { event.preventDefault(); clearTimeout(timer); run(); });
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
