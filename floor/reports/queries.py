"""Read-only queries on the floor archive, shared by the commands, the report and the dashboard."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from controller.jackpot.config import CURRENCY_CODE
from floor.common.alerts import SURVEILLANCE_KINDS
from floor.common.tableset import Only, floor_tables


@dataclass(frozen=True, slots=True)
class FloorAlert:
    alert_id: int
    site: str
    table_id: str
    kind: str
    severity: str
    message: str
    details: dict[str, Any]
    raised_at: datetime
    acknowledged_by: str | None
    acknowledged_at: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {
            "alert_id": self.alert_id,
            "site": self.site,
            "table": self.table_id,
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "details": self.details,
            "raised_at": self.raised_at.isoformat(),
            "acknowledged_by": self.acknowledged_by,
            "acknowledged_at": self.acknowledged_at.isoformat() if self.acknowledged_at else None,
        }


def floor_alerts(
    conn: psycopg.Connection,
    *,
    open_only: bool = True,
    table: str | None = None,
    limit: int = 500,
    surveillance: bool = False,
) -> list[FloorAlert]:
    """Most severe first, then newest first; the surveillance kinds (alerts.py) only with ``surveillance``, the
    others only without."""
    rows = conn.execute(
        "SELECT alert_id, site, table_id, kind, severity, message, details, raised_at, acknowledged_by,"
        " acknowledged_at FROM floor_alerts WHERE (NOT %s OR acknowledged_at IS NULL)"
        " AND (%s::text IS NULL OR table_id = %s) AND (kind = ANY(%s)) = %s"
        " ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, raised_at DESC,"
        " alert_id DESC LIMIT %s",
        (open_only, table, table, list(SURVEILLANCE_KINDS), surveillance, limit),
    ).fetchall()
    return [FloorAlert(*r) for r in rows]


@contextmanager
def consistent_read(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """One snapshot of the archive for every query of a report (REPEATABLE READ, read only): the workers'
    commits during the report do not make its floor, pit and dealer rows count different rounds."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.rollback()  # nothing of the caller's is written here: a report only reads
    saved = (conn.isolation_level, conn.read_only)
    conn.isolation_level, conn.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
    try:
        with conn.transaction():
            yield conn
    finally:
        conn.isolation_level, conn.read_only = saved


# Where a table says its currency, most authoritative first: the session it opened (its configuration's
# ``table.currency``, pinned at open_table), then its jackpot's state (``jackpot.currency``).
_CURRENCY_SOURCES = (
    "topic = 'events/session' AND data->>'action' = 'opened' AND data ? 'currency'",
    "topic = 'state/jackpot'",
)


def table_currencies(
    conn: psycopg.Connection, only: Only = None, table: str | None = None
) -> dict[tuple[str, str], str]:
    """Each table's currency from its configuration: the newest ``events/session`` that names one (the
    configured ``table.currency``, published when the session opens), else its newest ``state/jackpot``'s (one
    index lookup per table and source); a value that is not a 3-letter code is ignored. ``only``: those tables
    (tableset.py); ``table``: that table id only."""
    out: dict[tuple[str, str], str] = {}
    tables, params = floor_tables(only)
    for where in reversed(_CURRENCY_SOURCES):  # the more authoritative source overwrites
        rows = conn.execute(
            f"SELECT t.site, t.table_id, e.currency FROM {tables} t CROSS JOIN LATERAL"
            " (SELECT data->>'currency' AS currency FROM events WHERE site = t.site AND table_id = t.table_id"
            f" AND {where} ORDER BY event_id DESC LIMIT 1) e WHERE (%s::text IS NULL OR t.table_id = %s)",
            (*params, table, table),
        ).fetchall()
        out.update({(s, t): c for s, t, c in rows if isinstance(c, str) and CURRENCY_CODE.fullmatch(c)})
    return out
