"""Tell the floor's listeners that the archive changed: one PostgreSQL NOTIFY channel, delivered on commit."""

from __future__ import annotations

import psycopg

NOTIFY_CHANNEL = "floor_archive"  # the dashboard LISTENs (floor/web.py)


def notify(cur: psycopg.Cursor) -> None:
    """Tell listeners the archive changed (delivered when the transaction commits)."""
    cur.execute("SELECT pg_notify(%s, '')", (NOTIFY_CHANNEL,))
