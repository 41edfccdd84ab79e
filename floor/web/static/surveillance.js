// Floor surveillance view: sessions and advantage-play flags from /api/surveillance (the surveillance role only).
// Every string from the server is shown as text (textContent), never as markup.
"use strict";

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function money(minor) {
  return (Number(minor) / 100).toFixed(2);
}

function countText(c) {
  if (c.state === "not_applicable") return "not applicable (continuous shuffler)";
  if (c.state === "withheld") return "shown after the shoe ends";
  if (c.rho === null || c.rho === undefined) return "no trend (" + c.rounds + " rounds)";
  const p = c.p_value === null ? "" : ", p " + Number(c.p_value).toPrecision(2);
  return "rho " + Number(c.rho).toFixed(2) + p;
}

function render(data) {
  document.getElementById("live-note").textContent = data.live_count ? " (live display is on at this site)" : "";
  const alerts = document.getElementById("sv-alerts");
  alerts.replaceChildren();
  for (const a of data.alerts) {
    const li = el("li", null, "alert " + a.severity);
    li.append(el("span", a.words, "sev"), el("span", a.table, "where"), el("span", a.message, "msg"));
    const b = el("button", "Acknowledge");
    b.type = "button";
    b.addEventListener("click", () => ack(a.alert_id, li));
    li.append(b);
    alerts.append(li);
  }
  document.getElementById("alert-count").textContent = "(" + data.alerts.length + ")";
  const body = document.querySelector("#sessions tbody");
  body.replaceChildren();
  for (const s of data.sessions) {
    const tr = el("tr", null, s.flags.length ? "flagged" : "");
    tr.dataset.key = s.key;
    const who = s.level === "seat" ? "seat " + s.seat
      : "player " + s.player + (s.level === "player_visits" ? " (seated, every table)" : "");
    const flags = el("td", s.flags.join(" "), "flags");
    flags.title = s.reasons.join("; ");
    tr.append(flags, el("td", s.table || "(all tables)"), el("td", who), el("td", s.rounds),
      el("td", money(s.handle)), el("td", money(s.largest_bet)),
      el("td", s.spread === null ? "—" : Number(s.spread).toFixed(1)), el("td", money(s.win)),
      el("td", money(s.theoretical_win)),
      el("td", s.precision === null ? "—" : (100 * s.precision).toFixed(1) + "%"),
      el("td", countText(s.count), "count"));
    body.append(tr);
  }
  document.getElementById("session-count").textContent = "(" + data.sessions.length + ")";
}

async function load() {
  const state = document.getElementById("state");
  state.textContent = "loading…";
  try {
    const hours = encodeURIComponent(document.getElementById("hours").value);
    const r = await fetch("/api/surveillance?hours=" + hours);
    const data = await r.json();
    if (!r.ok) { state.textContent = "refused: " + String(data.reason); return; }
    render(data);
    state.textContent = "as of " + new Date().toLocaleTimeString();
    state.className = "live";
  } catch (err) {
    state.textContent = "failed: " + String(err);
  }
}

async function ack(alertId, li) {
  const r = await fetch("/api/surveillance/ack", {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Floor": "1"},
    body: JSON.stringify({alert_id: alertId}),
  });
  const answer = await r.json();
  if (answer.ok) li.remove(); else li.append(el("span", "refused: " + String(answer.reason), "result"));
}

document.addEventListener("DOMContentLoaded", async () => {
  const me = await fetch("/api/me");
  if (me.ok) document.getElementById("who").textContent = (await me.json()).user;
  document.getElementById("reload").addEventListener("click", load);
  load();
});
