"""A table's page in the dashboard (``GET /api/table?site=S&table=T``), read from the archive, in people's words.

- ``round``: the round in progress as the table published it (its newest ``state/round``): only public cards.
  The table withholds the hole card (``??``) until it is revealed (PT-2001 r.17); here every dealer card after
  the first is withheld too while ``hole_card_hidden`` holds, whatever the document carries.
- ``rounds``: the last ``MAX_ROUNDS`` settlements: when, outcome and the players' result per seat (as the table
  settled it: + when the player won) and the round's ``win`` in the house's view (figures.WIN: + when the house
  won), money in the table's configured currency; ``labels`` names the columns (figures.py).
- ``alerts``: the floor's alerts of the table (open and acknowledged, with who and when) and the history of the
  table's own open alerts (each archived ``alerts/open``: when an alert was first and last seen open).
- ``meter``: the table's own jackpot meter over ``METER_HOURS`` (each ``events/jackpot`` with a meter and no
  ``link``), drawn by the page.
- ``linked``: a table on a linked progressive (issue 40): the link's name and, over ``METER_HOURS``, what the table
  sent to it and the link's prizes paid at it (figures.LINKED_CONTRIBUTIONS, LINKED_PAID, with their labels);
  None when the table published nothing for a link then. The link's meter is the link controller's page's.
- ``players``: who is seated (issue 41), from the table's newest archived ``state/players``: seat, the player as
  the table names him (``card:<number>`` or the pseudonym ``anon:...``; never a name), since when; ``verified``
  false while the table's signed chain has not proven that document yet (shown marked). None when the table
  never published one.
- ``archive``: whether the archive is complete for what is shown (coverage.py), to which event, ``verified_to``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from controller.rules.profiles import game_name
from controller.words import (
    FACE_DOWN,
    OUTCOME_WORDS,
    PHASE_WORDS,
    STATE_WORDS,
    STATUS_WORDS,
    alert_words,
    card_face,
    hand_label,
    in_words,
    local_time,
    money,
    words,
)
from floor.common.rows import one_row
from floor.common.text import whole
from floor.players.events import MAX_DESCRIPTION, STATE_TOPIC, TOPIC
from floor.reports.coverage import coverage
from floor.reports.day import meter_history, num_sql
from floor.reports.figures import LINKED_CONTRIBUTIONS, LINKED_PAID, WIN, house_win
from floor.reports.queries import floor_alerts, table_currencies
from floor.web.dashboard import latest_state, unverified_words

MAX_ROUNDS = 30
SEAT_RESULTS = "players' result per seat"
MAX_ALERT_DOCS = 200
METER_HOURS = 24
MAX_SEATS = 9
MAX_CARDS = 24


def _text(v: Any, limit: int = 64) -> str:
    return str(v)[:limit] if v is not None else ""


def _list(v: Any, limit: int) -> list[Any]:
    return v[:limit] if isinstance(v, list) else []


def _newest(conn: psycopg.Connection, site: str, table: str, topic: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT data FROM events WHERE site = %s AND table_id = %s AND topic = %s ORDER BY event_id DESC LIMIT 1",
        (site, table, topic),
    ).fetchone()
    return row[0] if row and isinstance(row[0], dict) else {}


_LINKED = (("contribution", LINKED_CONTRIBUTIONS), ("paid", LINKED_PAID))


def linked_figures(
    conn: psycopg.Connection, site: str, table: str, since: datetime, until: datetime, currency: str
) -> dict[str, Any] | None:
    """The table's linked progressive figures over ``[since, until)`` (as in floor/reports/shift.py), in words."""
    amount = num_sql("data->'amount_minor'")
    rows = conn.execute(
        f"SELECT data->>'action', coalesce(sum({amount}), 0), max(event_id) FROM events"
        " WHERE site = %s AND table_id = %s AND topic = 'events/jackpot' AND data ? 'link'"
        " AND ts >= %s AND ts < %s GROUP BY 1",
        (site, table, since, until),
    ).fetchall()
    if not rows:
        return None
    newest = max(int(r[2]) for r in rows)
    link = conn.execute(
        "SELECT data->>'link' FROM events WHERE site = %s AND table_id = %s AND event_id = %s",
        (site, table, newest),
    ).fetchone()
    sums = {action: int(total) for action, total, _ in rows}
    return {
        "link": _text(link[0] if link else "", 32),
        "figures": [
            {"label": f.label, "value": money(sums.get(action, 0), currency)} for action, f in _LINKED
        ],
    }


def seated_players(conn: psycopg.Connection, site: str, table: str) -> dict[str, Any] | None:
    """The players seated now, from the newest archived ``state/players`` (its strings bounded; shown as text)."""
    row = conn.execute(
        "SELECT data, verified FROM events WHERE site = %s AND table_id = %s AND topic = %s"
        " ORDER BY event_id DESC LIMIT 1",
        (site, table, STATE_TOPIC),
    ).fetchone()
    if row is None or not isinstance(row[0], dict):
        return None
    seats = v if isinstance(v := row[0].get("seats"), dict) else {}
    out = []
    for seat, entry in list(seats.items())[:MAX_SEATS]:
        number = int(seat) if isinstance(seat, str) and seat.isdigit() and len(seat) <= 2 else None
        if number is None or not isinstance(entry, dict):
            continue
        player = _text(entry.get("player"), 80)
        out.append({"seat": number, "player": player, "description": _description(conn, site, table, player),
                    "since": _moment(entry.get("since"))})  # fmt: skip
    return {"seats": sorted(out, key=lambda p: p["seat"]), "verified": bool(row[1])}


def _description(conn: psycopg.Connection, site: str, table: str, player: str) -> str:
    """An anonymous player's description, as the pit gave it when seating him (events/player ``in``); "" else."""
    if not player.startswith("anon:"):
        return ""
    row = conn.execute(
        "SELECT data->>'description' FROM events WHERE site = %s AND table_id = %s AND topic = %s"
        " AND data->>'action' = 'in' AND data->>'player' = %s ORDER BY event_id DESC LIMIT 1",
        (site, table, TOPIC, player),
    ).fetchone()
    return _text(row[0], MAX_DESCRIPTION) if row else ""


def _moment(value: Any) -> str:
    """An ISO date-time from a table in local time, or "—" when it is none."""
    if not isinstance(value, str) or len(value) > 40:
        return "—"
    try:
        return local_time(datetime.fromisoformat(value))
    except ValueError:
        return "—"


def public_round(doc: dict[str, Any], currency: str) -> dict[str, Any] | None:
    """The round in progress with only its public cards, in words; None when no round is on."""
    if not doc or doc.get("round_id") is None or doc.get("phase") in (None, "none"):
        return None
    dealer = v if isinstance(v := doc.get("dealer"), dict) else {}
    cards = [card_face(c) for c in _list(dealer.get("cards"), MAX_CARDS)]
    if dealer.get("hole_card_hidden") is not False:  # unknown counts as hidden
        cards = cards[:1] + [FACE_DOWN] * min(len(cards) - 1, 1) if cards else []
    seats = []
    for s in _list(doc.get("seats"), MAX_SEATS):
        if not isinstance(s, dict):
            continue
        hands = _list(s.get("hands"), 4)
        for h in hands:
            if not isinstance(h, dict):
                continue
            seats.append({
                "hand": hand_label(whole(s.get("seat")), whole(h.get("hand")), len(hands) > 1),
                "cards": " ".join(card_face(c) for c in _list(h.get("cards"), MAX_CARDS)) or "–",
                "total": whole(h.get("total")),
                "stake": money(whole(h.get("stake")), currency),
                "status": words(STATUS_WORDS, _text(h.get("status"), 20)),
            })  # fmt: skip
    return {
        "round_id": _text(doc.get("round_id")),
        "phase": words(PHASE_WORDS, _text(doc.get("phase"), 20)),
        "dealer": " ".join(cards) or "–",
        "dealer_total": whole(dealer.get("total")),
        "hands": seats,
    }


def _rounds(conn: psycopg.Connection, site: str, table: str, currency: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT event_id, ts, data FROM events WHERE site = %s AND table_id = %s AND topic = 'events/settlement'"
        " ORDER BY event_id DESC LIMIT %s",
        (site, table, MAX_ROUNDS),
    ).fetchall()
    out = []
    for event_id, ts, data in rows:
        data = data if isinstance(data, dict) else {}
        seats = []
        for h in _list(data.get("hands"), 40):
            if isinstance(h, dict):
                seats.append(f"{hand_label(whole(h.get('seat')), whole(h.get('hand')))}: "
                             f"{words(OUTCOME_WORDS, _text(h.get('outcome'), 20))}, "
                             f"{money(whole(h.get('net')), currency, sign=True)}")  # fmt: skip
        nets = v if isinstance(v := data.get("seat_nets"), dict) else {}
        out.append({
            "round_id": _text(data.get("round_id")),
            "settled": local_time(ts),
            "event_id": event_id,
            "hands": seats,
            "seat_nets": [f"Seat {_text(k, 3)}: {money(whole(v), currency, sign=True)}" for k, v in
                          list(nets.items())[:MAX_SEATS]],
            "win": money(None if (n := whole(data.get("total_net"))) is None else house_win(n), currency,
                         sign=True),
        })  # fmt: skip
    return out


def _alerts(conn: psycopg.Connection, site: str, table: str) -> dict[str, list[dict[str, Any]]]:
    floor = [
        a.to_json() for a in floor_alerts(conn, open_only=False, table=table, limit=100) if a.site == site
    ]
    for a in floor:
        a["kind_words"] = alert_words(a.get("kind"))
        a["message"] = in_words(str(a.get("message") or ""))
        for key in ("raised_at", "acknowledged_at"):  # local time, as every screen shows a moment
            if a.get(key):
                a[key] = local_time(datetime.fromisoformat(str(a[key])))
    seen: dict[int, dict[str, Any]] = {}
    for ts, data in conn.execute(
        "SELECT ts, data FROM events WHERE site = %s AND table_id = %s AND topic = 'alerts/open'"
        " ORDER BY event_id DESC LIMIT %s",
        (site, table, MAX_ALERT_DOCS),
    ).fetchall():
        for a in _list((data or {}).get("alerts") if isinstance(data, dict) else None, 50):
            if not isinstance(a, dict) or whole(a.get("alert_id")) is None:
                continue
            when = local_time(ts)
            entry = seen.setdefault(a["alert_id"], {
                "alert_id": a["alert_id"], "kind": _text(a.get("kind"), 40),
                "kind_words": alert_words(_text(a.get("kind"), 40)), "severity": _text(a.get("severity"), 10),
                "message": in_words(_text(a.get("reason"), 300)), "last_seen_open": when,
            })  # fmt: skip
            entry["first_seen_open"] = when  # rows come newest first
    return {"floor": floor, "table": sorted(seen.values(), key=lambda a: a["alert_id"], reverse=True)}


def table_view(
    conn: psycopg.Connection, site: str, table: str, now: datetime | None = None
) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    known = conn.execute(
        "SELECT status, contiguous_to FROM floor_tables WHERE site = %s AND table_id = %s", (site, table)
    ).fetchone()
    if known is None:
        return {}
    currency = table_currencies(conn).get((site, table), "")
    proven, newer = latest_state(conn, "state/table")  # shown: only what the table's chain proves
    key = (site, table)
    state = v if key in proven and isinstance(v := proven[key][2], dict) else {}
    since = now - timedelta(hours=METER_HOURS)
    meter = [(ts.timestamp(), int(m)) for _s, _t, _e, ts, _a, m in meter_history(conn, since, now, table)
             if _s == site][-2000:]  # fmt: skip
    cov = coverage(conn, None, None, table).get((site, table))
    verified = one_row(
        conn.execute(
            "SELECT max(event_id) FROM events WHERE site = %s AND table_id = %s AND verified", (site, table)
        ),
        "newest verified event id",
    )[0]
    return {
        "site": site,
        "table": table,
        "status": _text(known[0] or "unknown", 20),
        "state": words(STATE_WORDS, _text(state.get("state"), 40))
        if state.get("state")
        else ("not verified yet" if key in newer else "not heard yet"),
        "unverified": unverified_words(newer, key),
        "game": game_name(_text(state.get("profile"), 40)),
        "dealer": _text(state.get("dealer"), 40),
        "faults": [alert_words(_text(f, 40)) for f in _list(state.get("faults"), 10)],
        "currency": currency,
        "round": public_round(_newest(conn, site, table, "state/round"), currency),
        "rounds": _rounds(conn, site, table, currency),
        "labels": {"win": WIN.label, "seat_nets": SEAT_RESULTS},
        "alerts": _alerts(conn, site, table),
        "meter": {
            "since": since.timestamp(),
            "until": now.timestamp(),
            "points": meter,
            "now": money(meter[-1][1], currency) if meter else "—",
        },
        "linked": linked_figures(conn, site, table, since, now, currency),
        "players": seated_players(conn, site, table),
        "archive": {
            "complete": bool(cov and cov.complete),
            "verdict": cov.summary() if cov else "INCOMPLETE: nothing archived",
            "archived_to": cov.archived_to if cov else 0,
            "verified_to": verified or 0,
        },
    }
