"""What the floor dashboard shows, read from the archive: every table's state and open alerts.

Per table (latest archived documents): ``status``, ``state/table`` (state, faults), ``state/jackpot`` (meter),
the last ``events/settlement`` (round, net, when), ``archive`` (floor/reports/coverage.py over the table's
whole history: ``complete``, ``archived_to``, ``known_to`` and the ids ``missing`` for good or ``pending``),
``verified_to``: the newest event the table's signed chain proves. The table's state is its newest ``state/table``
the chain proves; a newer one not yet verified is named apart (``unverified``), never shown as the state (issue
37: a table account's forged document must not pass for the table's). (events after it are not yet verified,
floor/archive/verify_events.py). Alerts: each table's latest retained ``alerts/open`` (the table's own,
acknowledged by a signed ``ack_alert`` command) and the floor's open alerts (acknowledged with ``tablectl floor
alerts --ack``), most severe first, then newest first. Values the tables sent are passed on as data (strings,
numbers); the page shows them with ``textContent`` only.
"""

from __future__ import annotations

from typing import Any

import psycopg

from controller.words import SEVERITY_RANK, STATE_WORDS, alert_words, in_words, local_time, words
from floor.archive.contact import archive_receiving
from floor.backup.health import read_health
from floor.common.tableset import Only, floor_tables
from floor.common.text import whole
from floor.reports.coverage import Coverage, HoleKind, coverage
from floor.reports.queries import floor_alerts

MAX_ALERTS = 200


Latest = dict[tuple[str, str], tuple[int, Any, Any]]  # (site, table) -> (event id, time, data)


def latest(conn: psycopg.Connection, topic: str, only: Only = None) -> Latest:
    """Each table's (of ``only``: tableset.py) newest document on ``topic``: one index lookup per table
    (events_by_topic)."""
    tables, params = floor_tables(only)
    rows = conn.execute(
        f"SELECT t.site, t.table_id, e.event_id, e.ts, e.data FROM {tables} t CROSS JOIN LATERAL"
        " (SELECT event_id, ts, data FROM events WHERE site = t.site AND table_id = t.table_id AND topic = %s"
        " ORDER BY event_id DESC LIMIT 1) e",
        (*params, topic),
    ).fetchall()
    return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}


def latest_state(conn: psycopg.Connection, topic: str, only: Only = None) -> tuple[Latest, Latest]:
    """Each table's newest document on ``topic`` its signed chain proves (``verified``: what is shown as the table's
    state), and a newer one not yet verified, if any (shown apart and marked; a forged one is evicted when the
    table's next checkpoint disproves it, floor/archive/verify_events.py, and so drops out). Two index lookups per
    table."""
    tables, params = floor_tables(only)
    rows = conn.execute(
        f"SELECT t.site, t.table_id, v.event_id, v.ts, v.data, u.event_id, u.ts, u.data FROM {tables} t"
        " LEFT JOIN LATERAL (SELECT event_id, ts, data FROM events WHERE site = t.site AND table_id = t.table_id"
        " AND topic = %s AND verified ORDER BY event_id DESC LIMIT 1) v ON true"
        " LEFT JOIN LATERAL (SELECT event_id, ts, data FROM events WHERE site = t.site AND table_id = t.table_id"
        " AND topic = %s AND NOT verified AND event_id > coalesce(v.event_id, 0) ORDER BY event_id DESC LIMIT 1)"
        " u ON true",
        (*params, topic, topic),
    ).fetchall()
    proven = {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows if r[2] is not None}
    newer = {(r[0], r[1]): (r[5], r[6], r[7]) for r in rows if r[5] is not None}
    return proven, newer


def unverified_words(found: Latest, key: tuple[str, str]) -> str:
    """A newer ``state/table`` not yet proven the table's, in words ("" when none): shown apart, never as the
    table's state."""
    if key not in found:
        return ""
    event_id, _ts, data = found[key]
    state = _text(data.get("state"), 40) if isinstance(data, dict) else ""
    return f"newer, not yet verified (event {event_id}): {words(STATE_WORDS, state) if state else 'no state'}"


def _document(found: Latest, key: tuple[str, str]) -> dict[str, Any]:
    """A table's newest document from ``latest`` ({} if none: an archived event's data is always an object)."""
    data = found.get(key, (0, None, None))[2]
    return data if isinstance(data, dict) else {}


def _text(value: Any, limit: int = 300) -> str:
    return str(value)[:limit] if value is not None else ""


def table_alert(site: str, table_id: str, a: dict[str, Any]) -> dict[str, Any]:
    """A table's open alert as the dashboard lists it: kind in words, the reason in words (card faces, hands
    from 1, names from the code as labels), the time in local time (tests/test_words.py reads it)."""
    return {
        "source": "table",
        "site": site,
        "table": table_id,
        "alert_id": a["alert_id"],
        "kind": _text(a.get("kind"), 40),
        "kind_words": alert_words(_text(a.get("kind"), 40)),
        "severity": _text(a.get("severity"), 10),
        "message": in_words(_text(a.get("reason"))),
        "raised_at": _when(a.get("raised_at")),
        "level": whole(a.get("level")) or 0,
    }


def _when(value: Any) -> str:
    """A time in local time (controller/words.py ``local_time``; tables send epoch seconds, the floor has
    datetimes)."""
    return local_time(value) if value is not None else ""


def _archive(cov: Coverage | None) -> dict[str, Any] | None:
    if cov is None:
        return None
    return {
        "complete": cov.complete,
        "archived_to": cov.archived_to,
        "known_to": cov.known_to,
        "missing": cov.ids(HoleKind.MISSING)[:300],
        "pending": cov.ids(HoleKind.PENDING)[:300],
        "summary": cov.summary()[:600],  # what the figures rest on, in words (floor/reports/coverage.py)
        "out_of_reach_since": _when(cov.out_of_reach_since) if cov.out_of_reach_since else None,
    }


def snapshot(conn: psycopg.Connection) -> dict[str, Any]:
    return snapshot_with_documents(conn)[0]


def snapshot_with_documents(
    conn: psycopg.Connection, only: Only = None
) -> tuple[dict[str, Any], dict[str, Latest]]:
    """The snapshot, and each table's newest ``state/table``, ``state/jackpot`` and ``state/round`` it was read
    from (the pit map's tiles use them too: read once per build). ``only``: the tables to read (tableset.py; the
    live map's refresh of the tables an archive commit named), every table when None."""
    tables_sql, params = floor_tables(only)
    tables_rows = conn.execute(
        f"SELECT site, table_id, status, contiguous_to FROM {tables_sql} t ORDER BY site, table_id", params
    ).fetchall()
    table_state, table_unverified = latest_state(conn, "state/table", only)
    jackpot = latest(conn, "state/jackpot", only)
    settlement = latest(conn, "events/settlement", only)
    alerts_open = latest(conn, "alerts/open", only)
    verified_to = dict(
        ((r[0], r[1]), r[2])
        for r in conn.execute(
            "SELECT t.site, t.table_id, (SELECT max(event_id) FROM events e WHERE e.site = t.site"
            f" AND e.table_id = t.table_id AND e.verified) FROM {tables_sql} t",
            params,
        )
    )
    covers = coverage(conn, None, None, only=only)
    tables = []
    alerts: list[dict[str, Any]] = []
    for site, table_id, status, contiguous in tables_rows:
        key = (site, table_id)
        st, jp = _document(table_state, key), _document(jackpot, key)
        last = settlement.get(key)
        faults = v if isinstance(v := st.get("faults"), list) else []
        tables.append(
            {
                "site": site,
                "table": table_id,
                "status": status or "unknown",
                "state": _text(st.get("state"), 40),
                "unverified": unverified_words(table_unverified, key),
                "faults": [_text(f, 40) for f in faults[:10]],
                "meter": whole(
                    jp.get("meter")
                ),  # null on a linked table: the link's meter is not the table's
                "link": _text(link.get("name"), 32) if isinstance(link := jp.get("link"), dict) else "",
                "last_round": None
                if last is None
                else {
                    "round_id": _text(last[2].get("round_id"), 64),
                    "total_net": whole(last[2].get("total_net")),
                    "settled": _when(last[1]),
                },
                "archived_to": contiguous,
                "verified_to": verified_to.get(key) or 0,
                "archive": _archive(covers.get(key)),
            }
        )
        open_alerts = v if isinstance(v := _document(alerts_open, key).get("alerts"), list) else []
        for a in open_alerts[:MAX_ALERTS]:
            if not isinstance(a, dict) or whole(a.get("alert_id")) is None:
                continue
            alerts.append(table_alert(site, table_id, a))
    for fa in floor_alerts(conn, open_only=True, limit=MAX_ALERTS):
        alerts.append(
            {
                "source": "floor",
                "site": fa.site,
                "table": fa.table_id,
                "alert_id": fa.alert_id,
                "kind": fa.kind,
                "kind_words": alert_words(fa.kind),
                "severity": fa.severity,
                "message": in_words(fa.message),
                "raised_at": _when(fa.raised_at),
                "level": 0,
            }
        )
    alerts.sort(key=lambda a: a["raised_at"], reverse=True)  # newest first ...
    alerts.sort(key=lambda a: SEVERITY_RANK.get(a["severity"], 3))  # ... within each severity (stable sort)
    health = archive_receiving(conn)
    archive = {
        "receiving": health.receiving,
        "words": health.words(),
        "backups": read_health(conn).words(),  # late or failed backups (floor/backup/health.py); "" when good
    }  # the archive's own state, not a table's
    return {"tables": tables, "alerts": alerts[:MAX_ALERTS], "archive": archive}, {
        "state/table": table_state,
        "state/jackpot": jackpot,
        "state/round": latest(conn, "state/round", only),
    }
