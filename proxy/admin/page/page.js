// The switchboard status page: refresh every second by fetching the page
// again and swapping the parts marked data-live; filter the tool table as
// the operator types. The page works without this script.
"use strict";

function filterTools() {
  const q = document.getElementById("q");
  if (!q) return;
  const needle = q.value.toLowerCase();
  for (const row of document.querySelectorAll("#tools tbody tr")) {
    row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
  }
}

async function refresh() {
  const started = Date.now();
  try {
    // The page itself without the filter: the script filters.
    const url = new URL(location.href);
    url.searchParams.delete("q");
    url.searchParams.delete("restarted");
    url.searchParams.delete("login");
    const res = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (res.ok) {
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      for (const el of document.querySelectorAll("[data-live]")) {
        const fresh = doc.getElementById(el.id);
        if (fresh) el.replaceWith(document.adoptNode(fresh));
      }
      filterTools();
    }
  } catch (e) {
    // the next tick tries again
  } finally {
    // Once a second, counted from this fetch's start.
    setTimeout(refresh, Math.max(0, 1000 - (Date.now() - started)));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const q = document.getElementById("q");
  if (q) q.addEventListener("input", filterTools);
  setTimeout(refresh, 1000);
});
