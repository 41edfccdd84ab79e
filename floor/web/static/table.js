// A table's page: the round in progress (public cards only, as the table published it), the last rounds with a
// link to each one's dispute report, the meter over time (an SVG drawn from numbers), the alerts with their
// history, and whether the archive is complete. Every value from a table is set with textContent.
// Who is seated (the table's state/players); a supervisor seats and unseats players with commands signed by this
// device's key (keys.js), relayed by the dashboard to the table (POST /api/seat), the table's answer shown as text.
"use strict";

const me = {user: "", role: "viewer", key: undefined, site: "", table: ""};

const SVG = "http://www.w3.org/2000/svg";

function row(tbody, cells) {
  const tr = el("tr");
  for (const c of cells) {
    const td = el("td");
    if (c instanceof Node) td.append(c); else td.textContent = c === null || c === undefined ? "—" : String(c);
    tr.append(td);
  }
  tbody.append(tr);
}

function fact(dl, name, value, cls) {
  dl.append(el("dt", null, name), el("dd", cls, value));
}

function renderRound(r) {
  const box = document.getElementById("round");
  if (!r) { box.replaceChildren(el("p", "hint", "No round in progress.")); return; }
  const dl = el("dl", "facts");
  fact(dl, "Round", r.round_id);
  fact(dl, "Phase", r.phase);
  fact(dl, "Dealer", r.dealer + (typeof r.dealer_total === "number" && r.dealer_total ? " (" + r.dealer_total + ")" : ""), "cards");
  for (const h of r.hands) fact(dl, h.hand, h.cards + " (" + h.total + ") · " + h.stake + " · " + h.status, "cards");
  box.replaceChildren(dl);
}

function plot(meter) {
  const box = document.getElementById("meter");
  const pts = meter.points;
  if (!pts.length) { box.replaceChildren(el("p", "hint", "No meter movement archived in the last 24 hours.")); return; }
  const W = 600, H = 160, P = 30;
  const lo = Math.min(...pts.map((p) => p[1])), hi = Math.max(...pts.map((p) => p[1]));
  const x = (t) => P + (W - 2 * P) * (t - meter.since) / Math.max(1, meter.until - meter.since);
  const y = (v) => H - P - (H - 2 * P) * (hi === lo ? 0.5 : (v - lo) / (hi - lo));
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("class", "plot");
  svg.setAttribute("role", "img");
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", pts.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#1565c0");
  line.setAttribute("stroke-width", "2");
  const label = (tx, ty, text) => {
    const t = document.createElementNS(SVG, "text");
    t.setAttribute("x", tx); t.setAttribute("y", ty); t.setAttribute("font-size", "11");
    t.textContent = text;
    return t;
  };
  const title = document.createElementNS(SVG, "title");
  title.textContent = "jackpot meter, last 24 hours";
  svg.append(title, line, label(2, P - 6, money(hi)), label(2, H - 6, money(lo)));
  box.replaceChildren(svg, el("p", null, "Now: " + meter.now));
}

function seatResult(text) {
  document.getElementById("seat-result").textContent = text;
}

async function relaySeat(action, args, button) {
  if (!me.key) { seatResult("make and enrol a signing key on this device first (on the pit map)"); return; }
  button.disabled = true;
  try {
    seatResult("signing…");
    const command = await signCommand(me.key, "supervisor", action, args, me.site, me.table);
    const answer = await post("/api/seat", {site: me.site, table: me.table, command: command});
    seatResult(answer.ok ? (action === "player_in" ? "seated at seat " : "left seat ") + args.seat
                         : "refused: " + String(answer.reason));
    if (answer.ok) await load();
  } catch (err) {
    seatResult("failed: " + String(err));
  } finally {
    button.disabled = false;
  }
}

function seatIn(button) {
  const seat = Number(document.getElementById("seat-number").value);
  const kind = document.getElementById("seat-kind").value === "anonymous" ? "anonymous" : "card";
  const value = document.getElementById("seat-id").value;
  if (!Number.isSafeInteger(seat) || seat < 1) { seatResult("a seat number"); return; }  // its range: the table's
  if (!value.trim()) { seatResult(kind === "card" ? "the player card's number" : "a description"); return; }
  relaySeat("player_in", {seat: seat, [kind]: value}, button);
}

function renderPlayers(p) {
  const tb = document.querySelector("#players tbody");
  tb.replaceChildren();
  document.getElementById("players-note").textContent = !p ? "No player seated at this table yet."
    : (p.verified ? "" : "Not yet verified by the table's signed chain.");
  if (!p) return;
  for (const s of p.seats) {
    let out = "";
    if (me.role === "supervisor") {
      out = el("button", "unseat", "Player out");
      out.type = "button";
      out.dataset.seat = String(s.seat);
      out.addEventListener("click", () => relaySeat("player_out", {seat: s.seat}, out));
    }
    row(tb, [s.seat, s.player, s.description || "", s.since, out]);
  }
  if (!p.seats.length) row(tb, ["nobody seated", "", "", "", ""]);
}

function render(v) {
  document.title = "Table " + v.site + "/" + v.table;
  document.getElementById("title").textContent = "Table " + v.site + "/" + v.table;
  const dl = document.getElementById("facts");
  dl.replaceChildren();
  fact(dl, "State", v.state);
  if (v.unverified) fact(dl, "Not the table's state yet", v.unverified, "incomplete");
  fact(dl, "Game", v.game || "—");
  fact(dl, "Dealer on duty", v.dealer || "—");
  fact(dl, "Connection", v.status);
  if (v.faults.length) fact(dl, "Faults", v.faults.join(", "), "bad");
  const a = v.archive;
  fact(dl, "Archive, for what is shown", a.verdict, a.complete ? null : "incomplete");
  fact(dl, "Signed chain verified to", "event " + a.verified_to);
  if (v.linked) {  // a linked progressive's table (floor/reports/figures.py's labels): not its own meter
    fact(dl, "Linked progressive", v.linked.link);
    for (const f of v.linked.figures) fact(dl, f.label.charAt(0).toUpperCase() + f.label.slice(1) + ", last 24 hours", f.value);
  }
  renderPlayers(v.players);
  renderRound(v.round);
  document.getElementById("win-head").textContent = v.labels.win;  // floor/reports/figures.py: the house's, + when it won
  document.getElementById("seat-nets-head").textContent = v.labels.seat_nets;
  const tb = document.querySelector("#rounds tbody");
  tb.replaceChildren();
  for (const r of v.rounds) {
    const link = el("a", "report", "Open the report");
    link.href = "/round?" + new URLSearchParams({site: v.site, table: v.table, round: r.round_id}).toString();
    link.dataset.round = String(r.round_id);
    row(tb, [r.round_id, r.settled, r.hands.join("; "), r.seat_nets.join("; "), r.win, link]);
  }
  plot(v.meter);
  const ta = document.querySelector("#table-alerts tbody");
  ta.replaceChildren();
  for (const x of v.alerts.table) row(ta, [x.kind_words, x.severity, x.message, x.first_seen_open, x.last_seen_open]);
  if (!v.alerts.table.length) row(ta, ["none archived", "", "", "", ""]);
  const fa = document.querySelector("#floor-alerts tbody");
  fa.replaceChildren();
  for (const x of v.alerts.floor) {
    row(fa, [x.kind_words, x.severity, x.message, x.raised_at,
             x.acknowledged_at ? x.acknowledged_at + " by " + x.acknowledged_by : "open"]);
  }
  if (!v.alerts.floor.length) row(fa, ["none", "", "", "", ""]);
}

async function load() {
  const q = new URLSearchParams(window.location.search);
  const r = await fetch("/api/table?" + new URLSearchParams({site: q.get("site") || "", table: q.get("table") || ""}));
  if (r.status === 401) { window.location.assign("/login"); return; }
  if (r.status !== 200) { document.getElementById("round").textContent = "No such table: " + (await r.text()); return; }
  render(await r.json());
}

async function start() {
  const who = await whoAmI();
  if (!who) return;
  const q = new URLSearchParams(window.location.search);
  me.user = String(who.user); me.role = String(who.role);
  me.site = q.get("site") || ""; me.table = q.get("table") || "";
  if (me.role === "supervisor") {  // the form only for a supervisor; the server refuses anyone else anyway
    me.key = await loadSigningKey(me.user);
    document.getElementById("seat-form").hidden = false;
    document.getElementById("seat-in").addEventListener("click", (ev) => seatIn(ev.target));
    if (!me.key) seatResult("make and enrol a signing key on this device first (on the pit map)");
  }
  await load();
  setInterval(load, 5000);
}

document.addEventListener("DOMContentLoaded", start);
