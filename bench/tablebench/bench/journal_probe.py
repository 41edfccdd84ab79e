"""What the bench reads from the table's journal while the service runs: read-only, never a write.

Its own module so that the rig and the dealer both use it without importing each other (issue 17).
"""

from __future__ import annotations

import sqlite3

from controller.journal.outbox import last_event_id


def last_committed_event_id(path: str) -> int:
    """The id of the last event the journal committed (as the journal finds it at open), 0 for none."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return last_event_id(conn)
    finally:
        conn.close()
