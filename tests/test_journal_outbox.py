"""The outbox holds the pending event ids only (issue 44): each envelope is kept once, in ``events``; the ids are the
journal's own and never reused, after acknowledgements, the event retention, ``tablectl journal prune`` and a
reopen; a journal from before (an outbox of whole envelopes under an AUTOINCREMENT counter, built here with that
DDL) is migrated once when it opens, every pending row still pending and publishable."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from test_journal_prune import ack_outbox, make_archive, recorded_session, tablectl

from controller.journal.outbox import FLOOR, last_event_id
from controller.journal.store import Journal

# The outbox as it was before issue 44 (controller/journal/schema.py then).
OLD_OUTBOX = """
CREATE TABLE outbox (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    topic    TEXT    NOT NULL,
    payload  TEXT    NOT NULL,
    qos      INTEGER NOT NULL,
    retain   INTEGER NOT NULL
);
"""


def publish(j: Journal, n: int, *, retain: bool = False) -> list[int]:
    ids = []
    for i in range(n):
        with j.transaction() as tx:
            tx.append("card", {"i": i})
            ids.append(tx.publish("events/card", "card", {"i": i}).event_id)
            if retain:
                ids.append(tx.publish("state/round", "state", {"i": i}, retain=True).event_id)
    return ids


def next_id(db: Path) -> int:
    j = Journal(db, table_id="T1")
    try:
        (new,) = publish(j, 1)
        return new
    finally:
        j.close()


def test_an_id_is_never_reused_after_the_acks_and_the_event_retention_took_every_row(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    j = Journal(db, table_id="T1")
    assert publish(j, 5) == [1, 2, 3, 4, 5]
    ack_outbox(j)
    assert j.prune_events(time.time() + 3600) == 5  # every kept event older than the bound: all gone
    j.close()
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0
    assert raw.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    assert raw.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone() is None
    raw.close()
    assert next_id(db) == 6  # the newest published record still names id 5


def test_an_id_is_never_reused_with_retained_documents_kept(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    j = Journal(db, table_id="T1")
    ids = publish(j, 3, retain=True)
    ack_outbox(j)
    j.prune_events(time.time() + 3600)  # the current retained document stays (the last id)
    j.close()
    assert next_id(db) == max(ids) + 1


async def test_an_id_is_never_reused_after_tablectl_journal_prune_and_retention(tmp_path: Path) -> None:
    db, key_file, key, _book = await recorded_session(tmp_path)
    raw = sqlite3.connect(db)
    (used,) = raw.execute("SELECT MAX(event_id) FROM events").fetchone()
    raw.close()
    arch = make_archive(db, tmp_path / "archive.db", key)
    run = tablectl("journal", "prune", "--db", str(db), "--archive", str(arch), "--public-key", key,
                   "--by", "ana (supervisor)", "--key-file", str(key_file))  # fmt: skip
    assert run.returncode == 0, run.stderr
    j = Journal(db, table_id="T1")
    try:
        after_prune = j.last_event_id
        assert after_prune > used  # the prune published its checkpoint (and retained documents) after them
        ack_outbox(j)
        j.prune_events(time.time() + 3600)
    finally:
        j.close()
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0
    raw.close()
    assert next_id(db) == after_prune + 1


def old_journal(db: Path, *, pending: int, counter: int | None = None) -> list[tuple]:
    """A journal as the code before issue 44 left it: 5 events published, the first ``5 - pending`` acknowledged
    (their rows deleted), the others waiting in an outbox of whole envelopes with the AUTOINCREMENT counter at
    ``counter`` (default: the last id). Written through the journal (a true chain), the outbox then made with the
    old DDL and filled as the old code filled it. Returns the pending rows."""
    j = Journal(db, table_id="T1")
    publish(j, 5)
    j.close()
    conn = sqlite3.connect(db)
    conn.executescript("DROP TABLE outbox; DROP TABLE meta;" + OLD_OUTBOX)
    rows = conn.execute(
        "SELECT event_id, topic, payload, qos, retain FROM events WHERE event_id > ? ORDER BY event_id",
        (5 - pending,),
    ).fetchall()
    conn.executemany("INSERT INTO outbox(event_id, topic, payload, qos, retain) VALUES (?,?,?,?,?)", rows)
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'outbox'")
    conn.execute("INSERT INTO sqlite_sequence(name, seq) VALUES ('outbox', ?)", (counter or 5,))
    conn.commit()
    conn.close()
    return rows


def test_a_journal_from_before_is_migrated_once_and_loses_nothing_pending(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    rows = old_journal(db, pending=2)
    assert [r[0] for r in rows] == [4, 5]
    j = Journal(db, table_id="T1")
    try:
        pending = j.outbox_pending()
        assert [(r.event_id, r.topic, r.payload, r.qos, int(r.retain)) for r in pending] == rows
        assert all(j.is_chained(r.event_id, r.topic, r.payload, r.qos, r.retain) for r in pending)
        assert j.outbox_size() == 2 and j.last_event_id == 5
        assert [r[1] for r in j._conn.execute("PRAGMA table_info(outbox)")] == ["event_id"]
        assert j._conn.execute("SELECT name FROM sqlite_sequence WHERE name = 'outbox'").fetchall() == []
        assert j._conn.execute("SELECT value FROM meta WHERE name = ?", (FLOOR,)).fetchone() == (5,)
        assert j.verify().ok
        (new,) = publish(j, 1)
        assert new == 6
    finally:
        j.close()
    j = Journal(db, table_id="T1")  # a second open changes nothing
    try:
        assert [r.event_id for r in j.outbox_pending()] == [4, 5, 6]
        j.outbox_ack([4, 5, 6])
        j.flush_acks()
        assert j.outbox_size() == 0
    finally:
        j.close()


def test_the_old_counter_is_kept_when_it_is_ahead_of_everything_else(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    old_journal(db, pending=0, counter=9)  # ids 6-9 used by a transaction whose records are gone: never again
    assert next_id(db) == 10
    assert next_id(db) == 11  # and the floor does not hold the count back after that


def lose_kept_event(db: Path, event_id: int) -> None:
    """The kept envelope of ``event_id`` deleted behind the journal's back (an edited file)."""
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM events WHERE event_id = ?", (event_id,))
    conn.commit()
    conn.close()


def test_a_pending_row_missing_from_the_kept_events_is_copied_there(tmp_path: Path) -> None:
    """A journal whose kept events lack a pending row (written before they were kept): the migration copies the
    outbox's envelope into ``events`` with the ``published`` record that chains it, so it is still sent."""
    db = tmp_path / "j.db"
    rows = old_journal(db, pending=2)
    lose_kept_event(db, 5)
    j = Journal(db, table_id="T1")
    try:
        pending = j.outbox_pending()
        assert [(r.event_id, r.topic, r.payload, r.qos, int(r.retain)) for r in pending] == rows
        assert all(j.is_chained(r.event_id, r.topic, r.payload, r.qos, r.retain) for r in pending)
    finally:
        j.close()


def test_a_pending_row_that_differs_from_its_kept_event_keeps_the_chained_one(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    rows = old_journal(db, pending=2)
    conn = sqlite3.connect(db)  # the kept copy edited in the file: the outbox's is the one the chain holds
    forged = json.dumps({"event_id": 5, "forged": True})
    conn.execute("UPDATE events SET payload = ? WHERE event_id = 5", (forged,))
    conn.commit()
    conn.close()
    j = Journal(db, table_id="T1")
    try:
        assert [r.payload for r in j.outbox_pending()] == [rows[0][2], rows[1][2]]
    finally:
        j.close()
    # and the other way round: an outbox copy the chain does not hold does not replace the kept one
    rows = old_journal(tmp_path / "k.db", pending=1)
    conn = sqlite3.connect(tmp_path / "k.db")
    conn.execute("UPDATE outbox SET payload = ? WHERE event_id = 5", (forged,))
    conn.commit()
    conn.close()
    k = Journal(tmp_path / "k.db", table_id="T1")
    try:
        (row,) = k.outbox_pending()
        assert row.payload == rows[0][2] and k.is_chained(row.event_id, row.topic, row.payload, 1, False)
    finally:
        k.close()


def test_the_last_id_is_read_from_a_journal_of_either_schema(tmp_path: Path) -> None:
    """What the bench reads while the service runs (bench/tablebench/bench/journal_probe.py), read-only."""
    old_journal(tmp_path / "old.db", pending=1, counter=7)
    conn = sqlite3.connect(f"file:{tmp_path / 'old.db'}?mode=ro", uri=True)
    assert last_event_id(conn) == 7
    conn.close()
    assert next_id(tmp_path / "old.db") == 8


def test_a_read_inside_a_transaction_sees_the_records_it_appended(tmp_path: Path) -> None:
    """The records are written in one statement before COMMIT, and before any statement or read inside it."""
    j = Journal(tmp_path / "j.db", table_id="T1")
    try:
        with j.transaction() as tx:
            rec = tx.append("alert", {"n": 1})
            assert j.last_record("alert") == rec
            tx.append("card", {"n": 2})
            (n,) = tx.execute("SELECT COUNT(*) FROM records").fetchone()
            assert n == 2
        assert [r.kind for r in j.records()] == ["alert", "card"]
        assert j.verify().ok
    finally:
        j.close()


def test_a_pending_id_whose_envelope_is_gone_is_counted_and_refused_not_skipped(tmp_path: Path) -> None:
    """An id in the outbox with no kept envelope (the file edited): still pending and counted, read as an empty row
    that the chain does not hold, so the publisher refuses and reports it (docs/security.md) instead of passing it
    over in silence."""
    db = tmp_path / "j.db"
    j = Journal(db, table_id="T1")
    publish(j, 2)
    j.close()
    lose_kept_event(db, 1)
    j = Journal(db, table_id="T1")
    try:
        first, second = j.outbox_pending()
        assert (first.event_id, first.payload) == (1, "") and j.outbox_size() == 2
        assert not j.is_chained(first.event_id, first.topic, first.payload, first.qos, first.retain)
        assert j.is_chained(second.event_id, second.topic, second.payload, second.qos, second.retain)
    finally:
        j.close()
