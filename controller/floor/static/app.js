// Floor dashboard: renders the server's snapshots (server-sent events). Every value from a table is put in the
// page with textContent: never parsed as markup.
"use strict";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function money(minor) {
  if (typeof minor !== "number") return "—";
  const sign = minor < 0 ? "-" : "";
  const a = Math.abs(minor);
  return sign + Math.floor(a / 100).toLocaleString("en") + "." + String(a % 100).padStart(2, "0");
}

async function acknowledge(alert, resultEl, button) {
  const user = document.getElementById("user").value.trim();
  const pin = document.getElementById("pin").value;
  if (!user || !pin) { resultEl.textContent = "enter your user and PIN above"; return; }
  button.disabled = true;
  resultEl.textContent = "signing…";
  try {
    const r = await fetch("/api/ack", {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-Floor-Ack": "1"},
      body: JSON.stringify({site: alert.site, table: alert.table, alert_id: alert.alert_id, user: user, pin: pin}),
    });
    const answer = await r.json();
    resultEl.textContent = answer.ok ? "acknowledged" : "refused: " + String(answer.reason);
  } catch (err) {
    resultEl.textContent = "failed: " + String(err);
  } finally {
    button.disabled = false;
  }
}

function renderAlerts(alerts) {
  const list = document.getElementById("alerts");
  list.replaceChildren();
  document.getElementById("alert-count").textContent = "(" + alerts.length + ")";
  for (const a of alerts) {
    const li = el("li", "alert " + (["critical", "warning", "info"].includes(a.severity) ? a.severity : ""));
    li.dataset.kind = String(a.kind);
    li.append(el("span", "sev", a.severity), el("span", "where", a.site + "/" + a.table),
              el("span", "kind", a.kind), el("span", "msg", a.message), el("span", "when", a.raised_at));
    const result = el("span", "result");
    if (a.source === "table") {
      const b = el("button", "ack", "Acknowledge");
      b.type = "button";
      b.addEventListener("click", () => acknowledge(a, result, b));
      li.append(b);
    } else {
      li.append(el("span", "hint", "floor alert: tablectl floor alerts --ack " + a.alert_id));
    }
    li.append(result);
    list.append(li);
  }
}

function renderTables(tables) {
  const grid = document.getElementById("tables");
  grid.replaceChildren();
  for (const t of tables) {
    const card = el("div", "table");
    card.dataset.table = String(t.table);
    const h = el("h3", null, t.site + "/" + t.table + " ");
    h.append(el("span", "status " + (t.status === "online" ? "online" : "offline"), t.status));
    const dl = el("dl");
    const row = (k, v, cls) => { dl.append(el("dt", null, k), el("dd", cls, v)); };
    row("state", t.state || "—");
    if (t.faults.length) row("faults", t.faults.join(", "), "faults");
    row("jackpot", money(t.meter));
    row("last round", t.last_round ? t.last_round.round_id + " (net " + money(t.last_round.total_net) + ")" : "—");
    const a = t.archive;
    if (a && a.complete) {
      row("archive", "complete to event " + a.archived_to);
    } else if (a) {
      const lacks = [];
      if (a.missing) lacks.push("missing for good " + a.missing);
      if (a.pending) lacks.push("pending " + a.pending);
      row("archive", "INCOMPLETE after event " + a.archived_to + " (known to " + a.known_to + "): " +
          (lacks.join("; ") || "more holes than read"), "incomplete");
    } else {
      row("archived to event", t.archived_to);
    }
    card.append(h, dl);
    grid.append(card);
  }
}

function connect() {
  const live = document.getElementById("live");
  const source = new EventSource("/events");
  source.addEventListener("snapshot", (ev) => {
    const snap = JSON.parse(ev.data);
    renderAlerts(snap.alerts);
    renderTables(snap.tables);
    live.textContent = "live";
    live.className = "live";
  });
  source.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
}

document.addEventListener("DOMContentLoaded", connect);
