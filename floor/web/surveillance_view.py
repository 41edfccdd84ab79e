"""What the dashboard's surveillance view shows (issue 32): the play sessions of a window with their figures and
advantage-play flags, and the open ``advantage_play`` alerts. Each player the tables seated (issue 41) has a row
of his own over all his visits of the window, across tables and shoes (level ``player_visits``): a counter who
moves between tables, or a wonger who enters each table's shoe at high counts, is judged as one person. A
player is named by his card number or pseudonym, never by name. Only the surveillance role is given it
(floor/web/surveillance.py).

A shoe's count (each round's true count, the bet-versus-count trend, the mean count) is withheld while the shoe
is in play: a session is shown with its count only when every shoe it played has ended (its table's newest
``state/shoe`` names a later shoe), unless the site turns live display on (``tablectl floor web
--surveillance-live``). The flags are shown at once (surveillance acts on them); while the count is withheld
their reasons say that bets followed the count, not what the count is (no mean, no difference), and so do the
``advantage_play`` alerts' words, always. The count is only ever of cards already dealt (never of the cards in
the shoe).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

from controller.words import alert_words
from floor.players.load import load_players
from floor.protection.advantage import DEFAULT_THRESHOLDS, assess
from floor.reports.queries import floor_alerts
from floor.reports.sessions_play import PlaySession, load_sessions

MAX_SESSIONS = 500  # the view's rows (flagged first)
MAX_POINTS = 400  # (count, bet) points per session


def _current_shoes(conn: psycopg.Connection) -> dict[tuple[str, str], int | None]:
    rows = conn.execute(
        "SELECT t.site, t.table_id, e.n FROM floor_tables t CROSS JOIN LATERAL (SELECT data->'shoe_no' AS n"
        " FROM events WHERE site = t.site AND table_id = t.table_id AND topic = 'state/shoe'"
        " ORDER BY event_id DESC LIMIT 1) e"
    ).fetchall()
    return {(s, t): (n if isinstance(n, int) else None) for s, t, n in rows}


def _in_play(s: PlaySession, current: dict[tuple[str, str], int | None], tables: dict[str, set[str]]) -> bool:
    keys = [(s.site, s.table)] if s.table else [(s.site, t) for t in tables.get(s.player or "", set())]
    return any(current.get(k) is None or current.get(k) in s.shoes for k in keys)


def _row(s: PlaySession, show_count: bool) -> dict[str, Any]:
    trend, entry = s.trend(), s.entry()
    flags = assess(s, DEFAULT_THRESHOLDS)
    out: dict[str, Any] = {
        "key": s.key, "level": s.level, "site": s.site, "table": s.table, "seat": s.seat, "player": s.player,
        "rounds": len(s.rounds), "first_round": s.round_ids[0] if s.round_ids else None,
        "handle": s.handle, "average_bet": round(s.average), "largest_bet": s.largest, "spread": s.spread,
        "win": s.win, "theoretical_win": s.theoretical_win, "decisions": s.decisions,
        "precision": s.precision, "decision_cost": s.cost, "flags": [f.kind.value for f in flags],
        "reasons": [f.text(show_count=show_count) for f in flags],
    }  # fmt: skip
    if trend is None:
        out["count"] = {"state": "not_applicable"}
    elif not show_count:
        out["count"] = {"state": "withheld"}
    else:
        out["count"] = {
            "state": "shown", "rho": trend.rho, "p_value": trend.p_value, "rounds": trend.n,
            "mean": entry.mean if entry else None, "above_skipped": entry.difference if entry else None,
            "points": [[round(r.true_count, 2), r.bet] for r in s.counted()[:MAX_POINTS]],
        }  # fmt: skip
    return out


def surveillance_view(
    conn: psycopg.Connection, since: datetime, until: datetime, live: bool
) -> dict[str, Any]:
    report = load_sessions(conn, since, until)
    # the players the tables seated: each over his visits (issue 41)
    seated = load_players(conn, since, until, judged=report.tables)  # the rounds judged once
    current = _current_shoes(conn)
    tables: dict[str, set[str]] = {}
    for s in report.sessions:
        if s.player:
            tables.setdefault(s.player, set()).add(s.table)
    for r in seated.players:
        tables.setdefault(r.play.player or "", set()).update(v.table for v in r.visits)
    sessions = report.sessions + report.players + [r.play for r in seated.players]
    rows = [(s, _row(s, live or not _in_play(s, current, tables))) for s in sessions]
    rows.sort(key=lambda x: (not x[1]["flags"], x[0].site, x[0].table, x[1]["first_round"] or ""))
    alerts = [
        {**a.to_json(), "words": alert_words(a.kind)}
        for a in floor_alerts(conn, surveillance=True, limit=200)
    ]
    return {
        "since": since.isoformat(), "until": until.isoformat(), "live_count": live,
        "sessions": [r for _, r in rows[:MAX_SESSIONS]], "more_sessions": max(0, len(rows) - MAX_SESSIONS),
        "not_used": len(set(report.problems) | set(seated.problems)), "alerts": alerts,
    }  # fmt: skip
