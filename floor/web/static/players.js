// The players page (GET /api/players): each visit and each player's rating; every value set with textContent.
// The name column is there only when the server sends names (the supervisor role).
"use strict";

async function load() {
  const q = new URLSearchParams({hours: document.getElementById("hours").value});
  const player = document.getElementById("player").value.trim();
  if (player) q.set("player", player);
  const r = await fetch("/api/players?" + q.toString());
  if (r.status === 401) { window.location.assign("/login"); return; }
  const verdict = document.getElementById("verdict");
  if (r.status !== 200) { verdict.textContent = (await r.json()).reason; return; }
  const doc = await r.json();
  const cols = doc.columns.filter((c) => c !== "name" || doc.names);
  const head = el("tr");
  for (const c of cols) head.append(el("th", null, doc.labels[c] || c.replaceAll("_", " ")));
  document.querySelector("#players thead").replaceChildren(head);
  const body = document.querySelector("#players tbody");
  body.replaceChildren();
  for (const row of doc.rows) {
    const tr = el("tr", row.level);
    for (const c of cols) {
      const v = row[c];
      tr.append(el("td", c, doc.money.includes(c) ? money(v) : (v === null || v === "" ? "—" : v)));
    }
    body.append(tr);
  }
  verdict.textContent = doc.rows.length ? "Comp share: " + doc.comp_share_pct + " % of theoretical win."
                                        : "No player seated in this window.";
  document.getElementById("names-note").textContent = doc.names ? ""
    : "Names are shown to supervisors only: players are named here by card number or pseudonym.";
  const glossary = document.getElementById("glossary");
  glossary.replaceChildren(...doc.glossary.flatMap((g) => [el("dt", null, g.label), el("dd", null, g.doc)]));
}

async function start() {
  if (!(await whoAmI())) return;
  document.getElementById("window").addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  await load();
}

document.addEventListener("DOMContentLoaded", start);
