// The pit map: one tile per table, grouped by area and pit, coloured by what needs attention. The server sends
// the whole floor once ("floor") and then only the tiles that changed ("tiles") and the open alerts when they
// change ("alerts"). Every value from a table is put in the page with textContent: never parsed as markup.
// A supervisor acknowledges a table's alert with a command signed by this device's key (keys.js).
"use strict";

const me = {user: "", role: "viewer", key: undefined, enrol: ""};
const results = new Map();  // alert -> the last answer shown for it (kept across re-renders of the list)
const floor = {version: 0, tiles: new Map(), els: new Map(), words: {}};
const ATTENTION = ["fault", "critical", "unreachable", "closed", "open"];

function alertKey(a) {
  return [a.source, a.site, a.table, a.alert_id].join("/");
}

function show(alert, resultEl, text) {
  results.set(alertKey(alert), text);
  resultEl.textContent = text;
}

async function acknowledge(alert, resultEl, button) {
  button.disabled = true;
  try {
    let answer;
    if (alert.source === "table") {
      if (!me.key) { show(alert, resultEl, "make and enrol a signing key on this device first"); return; }
      show(alert, resultEl, "signing…");
      const command = await signCommand(me.key, "supervisor", "ack_alert", {alert_id: alert.alert_id},
                                          alert.site, alert.table);
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

function renderArchive(state) {  // the archive's own state: its workers or its database away (not the tables)
  const p = document.getElementById("archive-state");
  // the archive's workers, then its backups (late or failed: docs/floor.md "Backups and point-in-time recovery")
  const words = state ? [state.words, state.backups].filter((w) => typeof w === "string" && w).join(" ") : "";
  p.textContent = words;
  p.hidden = !words;
}

function renderAlerts(alerts) {
  const list = document.getElementById("alerts");
  list.replaceChildren();
  document.getElementById("alert-count").textContent = "(" + alerts.length + ")";
  for (const a of alerts) {
    const li = el("li", "alert " + (["critical", "warning", "info"].includes(a.severity) ? a.severity : ""));
    li.dataset.kind = String(a.kind);
    li.dataset.source = String(a.source);
    li.dataset.table = String(a.table);
    const where = el("a", "where", a.site + "/" + a.table);
    where.href = tableUrl(a.site, a.table);
    li.append(el("span", "sev", a.severity === "info" ? "notice" : a.severity), where,
              el("span", "kind", a.kind_words), el("span", "msg", a.message), el("span", "when", a.raised_at));
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

function limits(t) {
  if (typeof t.min_bet !== "number" || typeof t.max_bet !== "number") return "";
  return money(t.min_bet) + "–" + money(t.max_bet);
}

function seats(box, inPlay) {  // seat 1..7 (or more): ■ where a bet stands, □ where none (one text node per tile)
  const n = Math.max(7, ...inPlay);
  let marks = "";
  for (let s = 1; s <= n; s++) marks += inPlay.includes(s) ? "■" : "□";
  const words = inPlay.length ? "seats " + inPlay.join(" ") + " in play" : "no bets";
  setText(box, marks);
  setAttr(box, "title", words);
  setAttr(box, "aria-label", words);
}

// A tile's elements are made once (a copy of SKELETON) and then only the values that changed are written, each with
// textContent or as an attribute: at a dealer's pace hundreds of tiles change a second, and the map's first
// drawing makes 2,000 of them.
function str(v) {
  return v === undefined || v === null ? "" : String(v);
}

function setText(node, value) {
  const text = str(value);
  if (node.textContent !== text) node.textContent = text;
}

function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}

function skeleton() {  // a > line(b.id, .status) line(.game, limits) line(state .seats, .dealer) line(.meter, .ago)
  const a = el("a");
  const top = el("span", "line");
  const id = el("b", "id");
  id.append(document.createTextNode(""));
  top.append(id, el("span", "status"));
  const game = el("span", "line");
  game.append(el("span", "game"), el("span"));
  const play = el("span", "line");
  const left = el("span");
  const box = el("span", "seats");
  box.setAttribute("role", "img");
  left.append(document.createTextNode(""), box);
  play.append(left, el("span", "dealer"));
  const meter = el("span", "line");
  meter.append(el("span", "meter"), el("span", "ago"));
  a.append(top, game, play, meter);
  return a;
}

const SKELETON = skeleton();

function fillTile(p, t) {
  const a = p.a;
  const cls = "tile table " + (ATTENTION.includes(t.attention) ? t.attention : "open");
  if (a.className !== cls) a.className = cls;
  if (a.dataset.attention !== String(t.attention)) a.dataset.attention = String(t.attention);
  setText(p.idText, t.table);
  if (t.alerts_open) {
    if (!p.count) {
      p.count = [document.createTextNode(" "), el("span", "count")];
      p.id.append(...p.count);
    }
    setText(p.count[1], t.alerts_open);
    setAttr(p.count[1], "title", t.alerts_open + (t.alerts_open === 1 ? " open alert" : " open alerts"));
  } else if (p.count) {
    for (const n of p.count) n.remove();
    p.count = null;
  }
  const status = "status " + (t.status === "online" ? "online" : "offline");
  if (p.status.className !== status) p.status.className = status;
  setText(p.status, t.attention_words);
  setText(p.game, t.game || "no game");
  setAttr(p.game, "title", str(t.game_title || t.game || "no game"));  // the game's whole name
  setText(p.limits, limits(t));
  setText(p.state, t.state + " ");
  seats(p.seats, t.seats_in_play);
  setText(p.dealer, t.dealer);
  setText(p.meter, t.meter !== null ? money(t.meter, t.currency) : t.link ? "linked: " + t.link : "no jackpot");
  setText(p.ago, ago(t.last_contact));
  if (t.unverified) {
    if (!p.unverified) {
      p.unverified = el("span", "line unverified");
      a.append(p.unverified);
    }
    setText(p.unverified, t.unverified);
  } else if (p.unverified) {
    p.unverified.remove();
    p.unverified = null;
  }
  setAttr(a, "title", [t.table, t.attention_words, t.state, ...t.faults, t.dealer ? "dealer " + t.dealer : "",
    t.seats_in_play.length ? "seats " + t.seats_in_play.join(" ") : "no bets"].filter(Boolean).join(" · "));
}

function makeTile(t) {
  const a = SKELETON.cloneNode(true);
  a.href = tableUrl(t.site, t.table);
  a.dataset.table = String(t.table);
  a.dataset.pit = String(t.pit);
  const [top, game, play, meter] = a.children;
  const p = {
    a, id: top.firstChild, idText: top.firstChild.firstChild, status: top.lastChild, game: game.firstChild,
    limits: game.lastChild, state: play.firstChild.firstChild, seats: play.firstChild.lastChild,
    dealer: play.lastChild, meter: meter.firstChild, ago: meter.lastChild, count: null, unverified: null,
  };
  fillTile(p, t);
  floor.els.set(t.site + "/" + t.table, p);
  return a;
}

function options(id, values, first) {
  const sel = document.getElementById(id);
  const chosen = sel.value;
  sel.replaceChildren(el("option", null, first));
  sel.firstChild.value = "";
  for (const [value, label] of values) {
    const o = el("option", null, label);
    o.value = value;
    sel.append(o);
  }
  sel.value = chosen;
}

const COLLATE = new Intl.Collator().compare;  // as localeCompare, made once (2,000 tiles: ~22,000 comparisons)

function renderMap() {  // each pit a group of its own (a heading and its tiles), in the layout's order
  const map = document.getElementById("map");
  const sorted = [...floor.tiles.values()].map((t) => [t, t.pit + "\u0000" + t.table])
    .sort((x, y) => (x[0].pit_order - y[0].pit_order) || COLLATE(x[1], y[1])).map(([t]) => t);
  floor.els.clear();
  const groups = [];
  let pit = null;
  let tilesEl = null;
  for (const t of sorted) {
    if (t.area + "/" + t.pit !== pit) {
      pit = t.area + "/" + t.pit;
      const group = el("section", "pit");
      group.dataset.pit = String(t.pit);
      const label = el("h2", "pit-label");
      label.append(el("b", null, t.pit), " ", el("span", null, t.area));
      tilesEl = el("div", "pit-tiles");
      group.append(label, tilesEl);
      groups.push(group);
    }
    tilesEl.append(makeTile(t));
  }
  map.replaceChildren(...groups);
  const uniq = (f) => [...new Set(sorted.map(f))].sort();
  options("filter-pit", uniq((t) => t.pit).map((p) => [p, p]), "Every pit");
  options("filter-game", uniq((t) => t.game).filter(Boolean).map((g) => [g, g]), "Every game");
  options("filter-state", uniq((t) => t.state).map((s) => [s, s]), "Every state");
  options("filter-attention", ATTENTION.map((a) => [a, floor.words[a] || a]), "Any attention");
  applyFilters();
}

function matches(t, f) {
  return (!f.q || String(t.table).toLowerCase().includes(f.q)) && (!f.pit || t.pit === f.pit) &&
    (!f.game || t.game === f.game) && (!f.state || t.state === f.state) && (!f.att || t.attention === f.att);
}

function applyFilters() {
  const f = {
    q: document.getElementById("search").value.trim().toLowerCase(),
    pit: document.getElementById("filter-pit").value,
    game: document.getElementById("filter-game").value,
    state: document.getElementById("filter-state").value,
    att: document.getElementById("filter-attention").value,
  };
  let shown = 0;
  const pitsShown = new Set();
  for (const [key, p] of floor.els) {  // hidden written only where it changes (each write restyles the tile)
    const t = floor.tiles.get(key);
    const on = matches(t, f);
    if (p.a.hidden === on) p.a.hidden = !on;
    if (on) { shown++; pitsShown.add(t.pit); }
  }
  for (const group of document.querySelectorAll("section.pit")) {
    const on = pitsShown.has(group.dataset.pit);
    if (group.hidden === on) group.hidden = !on;
  }
  const counts = {};
  for (const t of floor.tiles.values()) counts[t.attention] = (counts[t.attention] || 0) + 1;
  document.getElementById("shown").textContent = shown + " of " + floor.tiles.size + " tables: " +
    ATTENTION.filter((a) => counts[a]).map((a) => (floor.words[a] || a) + ": " + counts[a]).join(", ");
}

function onFloor(doc) {
  const t0 = performance.now();
  floor.version = doc.version;
  floor.words = doc.attention_words || floor.words;
  floor.tiles.clear();
  for (const t of doc.tiles) floor.tiles.set(t.site + "/" + t.table, t);
  renderMap();
  renderAlerts(doc.alerts);
  renderArchive(doc.archive);
  document.getElementById("map").dataset.drawnMs = String(Math.round(performance.now() - t0));
}

function onTiles(doc) {
  let regroup = doc.removed.length > 0;
  for (const t of doc.changed) {
    const key = t.site + "/" + t.table;
    const old = floor.tiles.get(key);
    floor.tiles.set(key, t);
    if (!old || old.pit !== t.pit || old.area !== t.area || old.pit_order !== t.pit_order) regroup = true;
    else fillTile(floor.els.get(key), t);
  }
  for (const key of doc.removed) floor.tiles.delete(key);
  floor.version = doc.version;
  if (regroup) renderMap(); else applyFilters();
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
  document.getElementById("enrol").textContent = me.enrol + " --user " + me.user +
    " --role supervisor --public-key " + me.key.publicKey;
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
  source.addEventListener("floor", (ev) => { onFloor(JSON.parse(ev.data)); live.textContent = "live"; live.className = "live"; });
  source.addEventListener("tiles", (ev) => onTiles(JSON.parse(ev.data)));
  source.addEventListener("alerts", (ev) => renderAlerts(JSON.parse(ev.data)));
  source.addEventListener("archive", (ev) => renderArchive(JSON.parse(ev.data)));
  source.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
}

function tick() {  // the time since last contact, from the tiles' last_contact (no server traffic)
  for (const [key, p] of floor.els) setText(p.ago, ago(floor.tiles.get(key).last_contact));
}

async function start() {
  const who = await whoAmI();
  if (!who) return;
  me.user = String(who.user);
  me.role = String(who.role);
  me.enrol = String(who.enrol_command || "");
  for (const id of ["search", "filter-pit", "filter-game", "filter-state", "filter-attention"]) {
    document.getElementById(id).addEventListener("input", applyFilters);
  }
  document.getElementById("filters").addEventListener("submit", (ev) => ev.preventDefault());
  connect();  // the map first; the signing key (IndexedDB) after
  setInterval(tick, 2000);
  if (me.role === "supervisor") await setUpSigning();
}

document.addEventListener("DOMContentLoaded", start);
