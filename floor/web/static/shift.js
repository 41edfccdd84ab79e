// The shift's figures per table, pit and floor for a chosen window (GET /api/shift), with links to the CSV and
// the self-contained page for the same window. Cells are set with textContent.
"use strict";

function iso(d) { return d.toISOString().slice(0, 16); }

function query() {
  return new URLSearchParams({since: document.getElementById("since").value,
                              until: document.getElementById("until").value}).toString();
}

async function load() {
  const q = query();
  document.getElementById("csv").href = "/shift/report.csv?" + q;
  document.getElementById("html").href = "/shift/report.html?" + q;
  const r = await fetch("/api/shift?" + q);
  if (r.status === 401) { window.location.assign("/login"); return; }
  const verdict = document.getElementById("verdict");
  if (r.status !== 200) { verdict.textContent = await r.text(); return; }
  const doc = await r.json();
  const head = el("tr");
  for (const h of doc.head) head.append(el("th", null, h));
  document.querySelector("#figures thead").replaceChildren(head);
  const body = document.querySelector("#figures tbody");
  body.replaceChildren();
  for (const row of doc.rows) {
    const tr = el("tr", row.level);
    for (const c of row.cells) tr.append(el("td", c === "INCOMPLETE" ? "incomplete" : null, c));
    body.append(tr);
  }
  verdict.textContent = doc.incomplete.length
    ? "INCOMPLETE: the archive lacks events that may fall in this window; the figures are sums of what is archived."
    : "The archive is complete for this window: every figure counts every event.";
  verdict.className = doc.incomplete.length ? "incomplete" : "";
  const glossary = document.getElementById("glossary");  // floor/reports/figures.py: one meaning per figure
  glossary.replaceChildren(...doc.glossary.flatMap((g) => [el("dt", null, g.label), el("dd", null, g.doc)]));
  document.getElementById("lacks").replaceChildren(...doc.incomplete.map((x) => el("li", null, x)));
}

async function start() {
  if (!(await whoAmI())) return;
  const now = new Date();
  document.getElementById("until").value = iso(now);
  document.getElementById("since").value = iso(new Date(now.getTime() - 8 * 3600 * 1000));
  document.getElementById("window").addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  await load();
}

document.addEventListener("DOMContentLoaded", start);
