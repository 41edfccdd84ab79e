"""The pages a card's commit writes to the log (issue 44: "fewer pages written per card"): none of an index that
only a rare read needs. The kind index leaves out the kinds every card's commit writes (``UNINDEXED_KINDS``), and
the kept events have no index on ``ts``; every read of other kinds still goes through the index (SQLite uses a
partial index only when the query repeats its condition, ``KIND_INDEXED``)."""

from __future__ import annotations

import re
import sqlite3
import struct
from collections import Counter
from pathlib import Path

from controller.journal.records import KIND_INDEXED, UNINDEXED_KINDS, kind_in
from controller.journal.store import Journal

ROOT = Path(__file__).resolve().parent.parent


def log_frames(db: Path) -> int:
    """``mxFrame`` of the WAL index header (the ``-shm`` file, u32 at offset 16; sqlite.org/walformat.html)."""
    return int(struct.unpack_from("=I", (db.parent / f"{db.name}-shm").read_bytes(), 16)[0])


def frame_pages(db: Path, first: int, last: int) -> list[int]:
    """The database page each frame first..last-1 of the log holds (a frame: 24-byte header, then the page)."""
    with open(db.parent / f"{db.name}-wal", "rb") as f:
        page_size = struct.unpack(">I", f.read(32)[8:12])[0]
        pages = []
        for i in range(first, last):
            f.seek(32 + i * (24 + page_size))
            pages.append(struct.unpack(">I", f.read(4))[0])
    return pages


def card_commit(journal: Journal, n: int) -> None:
    """What a card's commit holds: its input, the card record, an event and a retained state document."""
    with journal.transaction() as tx:
        tx.append("input", {"input": {"type": "card_out", "n": n}, "now": 1.0})
        tx.append("card", {"seat": 1, "card": "AS", "n": n})
        tx.publish("events/card", "card", {"n": n})
        tx.publish("state/round", "round", {"cards": n}, retain=True)


def test_a_card_commit_writes_no_page_of_an_index(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    journal = Journal(db, table_id="T1")
    try:
        for n in range(400):  # enough for the tables and indexes to have more than their root page
            card_commit(journal, n)
            with journal.transaction() as tx:
                tx.append("alert", {"n": n})  # a kind the index has, in transactions of its own
        journal._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the 50 below start the log again
        written: Counter[str] = Counter()
        for n in range(50):
            before = log_frames(db)
            card_commit(journal, 400 + n)
            after = log_frames(db)
            assert after > before  # no checkpoint restarts the log here (automatic one at 1,000 pages)
            names = dict(sqlite3.connect(db).execute("SELECT pageno, name FROM dbstat"))
            written.update(names.get(p, "?") for p in frame_pages(db, before, after))
        indexes = {
            name for (name,) in journal._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
        assert "records_kind_indexed" in indexes
        assert not {name for name in written if name in indexes and not name.startswith("sqlite_autoindex")}
        assert written["records"] >= 50  # the count is real: the card's records were written
    finally:
        journal.close()


def test_a_card_commit_writes_its_payloads_once_and_no_id_counter(tmp_path: Path) -> None:
    """The outbox holds the pending ids only (the envelopes are the kept events'), and the ids are the journal's own:
    no AUTOINCREMENT counter (``sqlite_sequence``) is written, and the outbox costs a commit at most its one leaf."""
    db = tmp_path / "j.db"
    journal = Journal(db, table_id="T1")
    try:
        for n in range(200):
            card_commit(journal, n)
            journal.outbox_ack([row.event_id for row in journal.outbox_pending()])  # as the broker's PUBACKs
        journal._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        written: Counter[str] = Counter()
        for n in range(50):
            before = log_frames(db)
            card_commit(journal, 200 + n)
            journal.outbox_ack([row.event_id for row in journal.outbox_pending()])
            written.update(
                dict(sqlite3.connect(db).execute("SELECT pageno, name FROM dbstat")).get(p, "?")
                for p in frame_pages(db, before, log_frames(db))
            )
        assert written["sqlite_sequence"] == 0
        assert 0 < written["outbox"] <= 50
        assert written["events"] >= 50
        columns = [r[1] for r in journal._conn.execute("PRAGMA table_info(outbox)")]
        assert columns == ["event_id"]
    finally:
        journal.close()


def test_reads_of_a_kind_use_the_kind_index_and_of_a_card_commits_kind_the_seq(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db", table_id="T1")
    try:
        for n in range(100):
            card_commit(journal, n)
        conn = journal._conn

        def plan(sql: str, params: tuple[object, ...]) -> str:
            return " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))

        rare = plan(
            f"SELECT seq FROM records WHERE seq > ? AND {kind_in(('alert',))} ORDER BY seq", (0, "alert")
        )
        assert "records_kind_indexed" in rare
        newest = f"SELECT data FROM records WHERE kind = ? AND {KIND_INDEXED} ORDER BY seq DESC LIMIT 1"
        assert "records_kind_indexed" in plan(newest, ("checkpoint",))
        for kind in UNINDEXED_KINDS:  # read by seq: after a snapshot
            common = plan(
                f"SELECT seq FROM records WHERE seq > ? AND {kind_in((kind,))} ORDER BY seq", (50, kind)
            )
            assert "INTEGER PRIMARY KEY (rowid>?)" in common
            assert [r.seq for r in journal.records(after_seq=0, kinds=(kind,))]  # and found
        # without the index's own condition SQLite would scan the whole journal: every query of a kind repeats it
        assert "SCAN records" in plan("SELECT data FROM records WHERE kind = ? LIMIT 1", ("checkpoint",))
    finally:
        journal.close()


def test_every_query_of_a_kind_in_the_code_repeats_the_index_condition() -> None:
    """A query that names a kind but not ``KIND_INDEXED`` (or ``kind_in``) scans the journal: at start-up, with a
    million records, seconds. A query of a card commit's kind reads by seq; the one other exception reads the
    newest ``published`` record (in nearly every commit: the scan from the end stops at once)."""
    allowed = {("controller/journal/event_chain.py", "PUBLISHED_KIND")}
    bad = []
    for path in sorted((ROOT / "controller").rglob("*.py")):
        text = path.read_text()
        for m in re.finditer(r"FROM records\b[^\n]*\n?[^\n]*", text):
            stmt = m.group(0)
            if not re.search(r"\bkind (=|IN)", stmt) or "KIND_INDEXED" in stmt or "kind_in(" in stmt:
                continue
            if any(f"'{kind}'" in stmt for kind in UNINDEXED_KINDS):  # read by seq
                continue
            rel = str(path.relative_to(ROOT))
            if not any(rel == a and k in stmt for a, k in allowed):
                bad.append(f"{rel}: {stmt.strip()}")
    assert not bad, bad


def test_a_journal_from_before_loses_the_indexes_a_card_commit_paid_for(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    journal = Journal(db, table_id="T1")
    card_commit(journal, 1)
    with journal.transaction() as tx:
        tx.append("alert", {"n": 1})
    journal._conn.executescript(  # the indexes as they were
        "DROP INDEX records_kind_indexed; CREATE INDEX records_kind ON records(kind, seq);"
        " CREATE INDEX events_ts ON events(ts);"
    )
    journal.close()
    journal = Journal(db, table_id="T1")
    try:
        indexes = {n for (n,) in journal._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert indexes & {"records_kind", "events_ts", "records_kind_indexed"} == {"records_kind_indexed"}
        assert [r.data for r in journal.records(kinds=("alert",))] == [{"n": 1}]
    finally:
        journal.close()
