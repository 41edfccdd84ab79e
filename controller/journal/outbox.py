"""The outbox's event ids (controller/journal/schema.py): the last id a journal assigned, found again at open, and the
once-only migration of an outbox that held whole envelopes under an AUTOINCREMENT counter (journals from before
issue 44).

The journal assigns event ids itself (the last one + 1, controller/journal/transaction.py), so the counter is
whatever survives of the ids already used: ``last_event_id`` takes the highest of the pending ids, the kept events'
ids, the last id the newest ``published`` record chains and the floor a migration kept. Each survives what removes
the others: acknowledgements empty the outbox; the event retention (``Journal.prune_events``) deletes kept events
but never the records; ``tablectl journal prune`` deletes records before its anchor and the kept events they chain,
but publishes its own checkpoint, so the newest ``published`` record (the one of its transaction) stays."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable

from controller.journal.records import PUBLISHED_KIND, event_digest, kind_in
from controller.journal.verify import published_holds

FLOOR = "event_id_floor"  # ``meta``: the old counter's last id, kept by the migration
# Each is one place an id already used may still be read; a table a journal does not have is passed over (a
# read-only look at a journal still of the old schema, whose counter is in sqlite_sequence).
_HIGHEST = (
    "SELECT MAX(event_id) FROM outbox",
    "SELECT MAX(event_id) FROM events",
    f"SELECT value FROM meta WHERE name = '{FLOOR}'",
    "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'",
)


def last_published_id(conn: sqlite3.Connection) -> int:
    """The last event id the newest ``published`` record chains (its ids are consecutive), 0 for none."""
    # an unindexed kind (records.UNINDEXED_KINDS), read by seq from the end: nearly every commit writes one
    row = conn.execute(
        f"SELECT data FROM records WHERE {kind_in((PUBLISHED_KIND,))} ORDER BY seq DESC LIMIT 1",
        (PUBLISHED_KIND,),
    ).fetchone()
    if row is None:
        return 0
    try:
        data = json.loads(row[0])
        return int(data["first_event_id"]) + len(data["sha256"]) - 1
    except (ValueError, KeyError, TypeError):
        return 0


def last_event_id(conn: sqlite3.Connection) -> int:
    """The last event id this journal assigned (0 for none): the next one is never one already used."""
    found = [0]
    with contextlib.suppress(
        sqlite3.OperationalError
    ):  # no records table: not a journal (a bench's stand-in)
        found.append(last_published_id(conn))
    for sql in _HIGHEST:
        try:
            row = conn.execute(sql).fetchone()
        except sqlite3.OperationalError:  # no such table in this journal
            continue
        if row is not None and row[0] is not None:
            found.append(int(row[0]))
    return max(found)


def _published_seq(conn: sqlite3.Connection, event_id: int) -> int:
    """The ``published`` record that chains ``event_id``, found from the newest back (a pending id is recent), or 0."""
    rows: Iterable[tuple[int, str]] = conn.execute(
        f"SELECT seq, data FROM records WHERE {kind_in((PUBLISHED_KIND,))} ORDER BY seq DESC",
        (PUBLISHED_KIND,),
    )
    for seq, data in rows:
        try:
            chained = json.loads(data)
            first = int(chained["first_event_id"])
        except (ValueError, KeyError, TypeError):
            continue
        if first <= event_id:
            return seq if event_id < first + len(chained["sha256"]) else 0
    return 0


def needs_migration(conn: sqlite3.Connection) -> bool:
    """The outbox holds whole envelopes (the schema before issue 44)."""
    return [r[1] for r in conn.execute("PRAGMA table_info(outbox)")] != ["event_id"]


def migrate_outbox(conn: sqlite3.Connection, now: float) -> int | None:
    """Rebuild an outbox of whole envelopes as one of ids, once, in one transaction; None when it is one of ids.

    Every pending row stays pending, its envelope in ``events``: the row of the same id there is the same envelope
    (written in the same transaction); one missing there is copied from the outbox (chained by the ``published``
    record found for it, or by none: the publisher then refuses it as before, when it read the chain through
    ``events``), and one that differs is replaced by the outbox's only when the chain holds the outbox's. The old
    counter's last id is kept as ``meta``'s floor (dropping the table drops the counter). Returns the rows kept."""
    if not needs_migration(conn):
        return None
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not needs_migration(conn):  # another connection migrated it meanwhile
            conn.execute("ROLLBACK")
            return None
        floor = last_event_id(conn)
        pending = conn.execute(
            "SELECT event_id, topic, payload, qos, retain FROM outbox ORDER BY event_id"
        ).fetchall()
        for event_id, topic, payload, qos, retain in pending:
            kept = conn.execute(
                "SELECT topic, payload, qos, retain, seq FROM events WHERE event_id = ?", (event_id,)
            ).fetchone()
            if kept is not None and tuple(kept[:4]) == (topic, payload, qos, retain):
                continue
            digest = event_digest(topic, payload, qos, bool(retain))
            if kept is not None:
                if not published_holds(conn, kept[4], event_id, digest):
                    continue  # the kept envelope stays: the outbox's copy is not the one the chain holds
                seq = kept[4]
            else:
                seq = _published_seq(conn, event_id)
            conn.execute(
                "INSERT OR REPLACE INTO events(event_id, ts, topic, payload, qos, retain, seq)"
                " VALUES (?,?,?,?,?,?,?)",
                (event_id, now, topic, payload, qos, int(retain), seq),
            )
        conn.execute("CREATE TABLE outbox_ids (event_id INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO outbox_ids(event_id) SELECT event_id FROM outbox")
        conn.execute("DROP TABLE outbox")
        conn.execute("ALTER TABLE outbox_ids RENAME TO outbox")
        conn.execute(
            "INSERT INTO meta(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            (FLOOR, floor),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return len(pending)
