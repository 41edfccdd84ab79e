"""What the bench reads from the table's journal while the service runs: read-only, never a write.

Its own module so that the rig and the dealer both use it without importing each other (issue 17).
"""

from __future__ import annotations

import sqlite3


def last_committed_event_id(path: str) -> int:
    """The id of the last event the journal committed (the outbox's autoincrement), 0 for none."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'").fetchone()
        return int(row[0]) if row else 0
    finally:
        conn.close()
