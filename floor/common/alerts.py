"""The floor's own alerts (table ``floor_alerts``): raised once per dedupe key, acknowledged by a user.

The lowest of the floor's writers: the archive's store, the checkpoint chain (floor/archive/chain.py) and the
repair pass all raise alerts through here, and none of them is imported by it."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from floor.common.messages import TableRef
from floor.common.notify import notify

ADVANTAGE_PLAY = "advantage_play"  # floor/protection/advantage.py
# Alerts only the surveillance role sees and acknowledges (docs/floor.md "Surveillance"): the dashboard's list,
# a supervisor's acknowledgement and ``floor alerts`` leave them out.
SURVEILLANCE_KINDS = (ADVANTAGE_PLAY,)


def raise_alert(
    cur: psycopg.Cursor,
    table: TableRef,
    kind: str,
    severity: str,
    message: str,
    details: dict[str, Any],
    dedupe_key: str,
) -> int | None:
    """A floor alert, raised once per ``dedupe_key``; returns its id when new."""
    cur.execute(
        "INSERT INTO floor_alerts (site, table_id, kind, severity, message, details, dedupe_key)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (dedupe_key) DO NOTHING RETURNING alert_id",
        (table.site, table.table_id, kind, severity, message, Jsonb(details), dedupe_key),
    )
    row = cur.fetchone()
    if row:
        notify(cur)
    return int(row[0]) if row else None


def acknowledge_alert(
    conn: psycopg.Connection, alert_id: int, user: str, *, surveillance: bool = False
) -> bool:
    """Acknowledge an open alert: a surveillance kind only with ``surveillance`` (the surveillance view), any
    other kind only without it."""
    with conn.transaction():
        cur = conn.execute(
            "UPDATE floor_alerts SET acknowledged_by = %s, acknowledged_at = now()"
            " WHERE alert_id = %s AND acknowledged_at IS NULL AND (kind = ANY(%s)) = %s",
            (user, alert_id, list(SURVEILLANCE_KINDS), surveillance),
        )
        if cur.rowcount == 1:
            notify(conn.cursor())
        return cur.rowcount == 1
