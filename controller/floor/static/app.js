// Floor dashboard: renders the server's snapshots (server-sent events). Every value from a table is put in the
// page with textContent: never parsed as markup. A supervisor acknowledges a table's alert with a command
// signed by this device's key (keys.js); the server only relays it to the table and returns the answer.
"use strict";

const me = {user: "", role: "viewer", key: undefined};
const results = new Map();  // alert -> the last answer shown for it (kept across re-renders of the list)

function alertKey(a) {
  return [a.source, a.site, a.table, a.alert_id].join("/");
}

function show(alert, resultEl, text) {
  results.set(alertKey(alert), text);
  resultEl.textContent = text;
}

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

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Floor": "1"},
    body: JSON.stringify(body),
  });
  if (r.status === 401) { window.location.assign("/login"); }
  return r.json();
}

async function acknowledge(alert, resultEl, button) {
  button.disabled = true;
  try {
    let answer;
    if (alert.source === "table") {
      if (!me.key) { show(alert, resultEl, "make and enrol a signing key on this device first"); return; }
      show(alert, resultEl, "signing…");
      const command = await signCommand(me.key, "supervisor", "ack_alert", {alert_id: alert.alert_id});
      answer = await post("/api/ack", {site: alert.site, table: alert.table, command: command});
    } else {
      answer = await post("/api/floor-ack", {alert_id: alert.alert_id});
    }
    show(alert, resultEl, answer.ok ? "acknowledged" : "refused: " + String(answer.reason));
  } catch (err) {
    show(alert, resultEl, "failed: " + String(err));
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
    li.dataset.source = String(a.source);
    li.append(el("span", "sev", a.severity), el("span", "where", a.site + "/" + a.table),
              el("span", "kind", a.kind), el("span", "msg", a.message), el("span", "when", a.raised_at));
    const result = el("span", "result", results.get(alertKey(a)));
    if (me.role === "supervisor") {
      const b = el("button", "ack", "Acknowledge");
      b.type = "button";
      b.addEventListener("click", () => acknowledge(a, result, b));
      li.append(b);
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

function showKey() {
  const state = document.getElementById("key-state");
  document.getElementById("make-key").hidden = Boolean(me.key);
  if (!me.key) {
    state.textContent = "no signing key on this device";
    return;
  }
  state.textContent = "made " + me.key.created;
  document.getElementById("pubkey").textContent = me.key.publicKey;
  document.getElementById("enrol").textContent = "tablectl sign --add-to /etc/tablectl/credentials.toml --user " +
    me.user + " --role supervisor --public-key " + me.key.publicKey;
}

async function setUpSigning() {
  document.getElementById("signing").hidden = false;
  me.key = await loadSigningKey(me.user);
  showKey();
  document.getElementById("make-key").addEventListener("click", async () => {
    if (me.key) return;
    me.key = await makeSigningKey(me.user);
    showKey();
  });
}

function connect() {
  const live = document.getElementById("live");
  const source = new EventSource("/events");
  let shownAlerts = "", shownTables = "";
  source.addEventListener("snapshot", (ev) => {
    const snap = JSON.parse(ev.data);
    // redraw only what changed: a list redrawn under the pointer would swallow a click on its buttons
    const alerts = JSON.stringify(snap.alerts), tables = JSON.stringify(snap.tables);
    if (alerts !== shownAlerts) { renderAlerts(snap.alerts); shownAlerts = alerts; }
    if (tables !== shownTables) { renderTables(snap.tables); shownTables = tables; }
    live.textContent = "live";
    live.className = "live";
  });
  source.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
}

async function start() {
  const r = await fetch("/api/me");
  if (r.status !== 200) { window.location.assign("/login"); return; }
  const who = await r.json();
  me.user = String(who.user);
  me.role = String(who.role);
  document.getElementById("who").textContent = me.user + " (" + me.role + ")";
  document.getElementById("logout").addEventListener("click", async () => {
    await post("/api/logout", {});
    window.location.assign("/login");
  });
  if (me.role === "supervisor") await setUpSigning();
  connect();
}

document.addEventListener("DOMContentLoaded", start);
