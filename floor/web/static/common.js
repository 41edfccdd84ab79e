// Shared by the dashboard's pages: elements built with textContent only (a value from a table is never parsed as
// markup), money in minor units, the page's POSTs, the login check.
"use strict";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

// as Number.prototype.toLocaleString("en"), made once: toLocaleString makes a formatter per call (at 2,000 tiles
// with three amounts each, a third of the pit map's first drawing)
const GROUPED = new Intl.NumberFormat("en");

function money(minor, currency) {
  if (typeof minor !== "number") return "—";
  const sign = minor < 0 ? "-" : "";
  const a = Math.abs(minor);
  const text = sign + GROUPED.format(Math.floor(a / 100)) + "." + String(a % 100).padStart(2, "0");
  return currency ? text + " " + currency : text;
}

function ago(iso) {
  if (!iso) return "never heard";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return Math.floor(s / 86400) + " days ago";
}

function tableUrl(site, table) {
  return "/table?" + new URLSearchParams({site: String(site), table: String(table)}).toString();
}

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Floor": "1"},
    body: JSON.stringify(body),
  });
  if (r.status === 401) { window.location.assign("/login"); }
  return r.json();
}

async function whoAmI() {
  const r = await fetch("/api/me");
  if (r.status !== 200) { window.location.assign("/login"); return null; }
  const who = await r.json();
  document.getElementById("who").textContent = String(who.user) + " (" + String(who.role) + ")";
  document.getElementById("logout").addEventListener("click", async () => {
    await post("/api/logout", {});
    window.location.assign("/login");
  });
  return who;
}
