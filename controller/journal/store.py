"""SQLite journal with a hash chain, a transactional outbox and snapshots.

Why one database: a state change, the records that explain it and the MQTT events that report it must
commit together (or not at all), so that nothing is published before it is durable and nothing durable
goes unpublished.

- ``records``: append-only; each row carries ``hash = sha256(prev_hash | seq | ts | kind | data)``, so a
  changed or deleted row breaks the chain (``verify``). Triggers refuse UPDATE/DELETE from this program.
- ``outbox``: events waiting for the broker's acknowledgement, keyed by a monotonic ``event_id``
  (AUTOINCREMENT never reuses an id, even after rows are deleted on ack).
- ``retained``: the latest payload of each retained state topic, republished after every reconnect.
- ``snapshots``: the controller state as of a record ``seq``; start-up loads the newest one and replays
  only the records after it, so start-up time does not grow with the journal.

The connection belongs to one thread (the asyncio loop's); WAL + synchronous=FULL makes each COMMIT
durable."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.canonical import canonical

GENESIS_HASH = "0" * 64
ACK_FLUSH_ROWS = 512  # acknowledged outbox rows held for deletion at most (see Journal.outbox_ack)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    seq       INTEGER PRIMARY KEY,
    ts        REAL    NOT NULL,
    kind      TEXT    NOT NULL,
    data      TEXT    NOT NULL,
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL
);
-- Reading one kind (start-up: the alert book, the inputs after the snapshot) must not scan the whole
-- journal: with this index start-up does not grow with the journal (docs/performance.md).
CREATE INDEX IF NOT EXISTS records_kind ON records(kind, seq);
CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
    BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END;
CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
    BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END;
CREATE TABLE IF NOT EXISTS outbox (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    topic    TEXT    NOT NULL,
    payload  TEXT    NOT NULL,
    qos      INTEGER NOT NULL,
    retain   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS retained (
    topic   TEXT PRIMARY KEY,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    seq   INTEGER PRIMARY KEY,
    ts    REAL    NOT NULL,
    state TEXT    NOT NULL
);
"""


class JournalError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Record:
    seq: int
    ts: float
    kind: str
    data: dict[str, Any]
    prev_hash: str
    hash: str


@dataclass(frozen=True, slots=True)
class OutboxRow:
    event_id: int
    topic: str
    payload: str  # JSON text, exactly what is published
    qos: int
    retain: bool


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    records: int
    first_bad_seq: int | None = None
    reason: str = ""


def chain_hash(prev_hash: str, seq: int, ts: float, kind: str, data_text: str) -> str:
    h = hashlib.sha256()
    h.update(f"{prev_hash}|{seq}|{ts!r}|{kind}|".encode())
    h.update(data_text.encode())
    return h.hexdigest()


def iso_ts(ts: float) -> str:
    ms = round(ts * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


class Transaction:
    """One atomic unit: records, outbox events and retained state all commit together."""

    def __init__(self, journal: Journal) -> None:
        self._j = journal
        self._conn = journal._conn
        self.records: list[Record] = []
        self.events: list[OutboxRow] = []

    def append(self, kind: str, data: dict[str, Any]) -> Record:
        j = self._j
        seq = j._last_seq + 1
        ts = j._clock()
        text = canonical(data)
        digest = chain_hash(j._last_hash, seq, ts, kind, text)
        self._conn.execute(
            "INSERT INTO records(seq, ts, kind, data, prev_hash, hash) VALUES (?,?,?,?,?,?)",
            (seq, ts, kind, text, j._last_hash, digest),
        )
        rec = Record(seq, ts, kind, data, j._last_hash, digest)
        j._last_seq, j._last_hash = seq, digest
        self.records.append(rec)
        return rec

    def publish(
        self,
        topic: str,
        event_type: str,
        data: dict[str, Any] | None = None,
        *,
        retain: bool = False,
        qos: int = 1,
        data_text: str | None = None,
    ) -> OutboxRow:
        """Queue an event for MQTT (topic relative to the table prefix). Sent only after COMMIT.
        ``data_text``: ``data`` already in canonical JSON (the core has it for the state documents it
        compares), spliced into the envelope instead of encoding the document a second time."""
        j = self._j
        event_id = j._last_event_id + 1
        ts = iso_ts(j._clock())
        if data_text is None:
            if data is None:
                raise ValueError("publish needs data or data_text")
            payload = canonical(
                {"event_id": event_id, "ts": ts, "type": event_type, "table": j.table_id, "data": data}
            )
        else:  # the same text canonical() gives: keys in sorted order, "data" first
            payload = (
                f'{{"data":{data_text},"event_id":{event_id},"table":{canonical(j.table_id)},'
                f'"ts":"{ts}","type":{canonical(event_type)}}}'
            )
        self._conn.execute(
            "INSERT INTO outbox(event_id, topic, payload, qos, retain) VALUES (?,?,?,?,?)",
            (event_id, topic, payload, qos, int(retain)),
        )
        if retain:
            self._conn.execute(
                "INSERT INTO retained(topic, payload) VALUES (?, ?) "
                "ON CONFLICT(topic) DO UPDATE SET payload = excluded.payload",
                (topic, payload),
            )
        j._last_event_id = event_id
        row = OutboxRow(event_id, topic, payload, qos, retain)
        self.events.append(row)
        return row

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """For modules that keep auxiliary tables in the journal database (e.g. used command nonces)."""
        return self._conn.execute(sql, params)


class Journal:
    def __init__(self, path: str | Path, *, table_id: str = "", clock=time.time) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.table_id = table_id
        self._clock = clock
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)
        self._in_tx = False
        self._listeners: list = []
        self._failure_listeners: list = []
        # Outbox rows the broker acknowledged, not yet deleted: the deletes ride in the next transaction
        # (or flush_acks()) instead of costing a write transaction of their own per PUBACK batch.
        self._acked: set[int] = set()
        row = self._conn.execute("SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
        self._last_seq, self._last_hash = (row[0], row[1]) if row else (0, GENESIS_HASH)
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'").fetchone()
        self._last_event_id = row[0] if row else 0

    # ---- writing ----
    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        if self._in_tx:
            raise JournalError("nested journal transaction")
        saved = (self._last_seq, self._last_hash, self._last_event_id)
        self._conn.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        tx = Transaction(self)
        acked = list(self._acked)
        try:
            yield tx
            if acked:
                self._conn.executemany("DELETE FROM outbox WHERE event_id = ?", [(e,) for e in acked])
            self._conn.execute("COMMIT")
        except BaseException as exc:
            if self._conn.in_transaction:  # SQLite already rolled back after SQLITE_FULL / an I/O error: a
                with contextlib.suppress(sqlite3.Error):  # ROLLBACK then hides the cause (issue 14 item 3)
                    self._conn.execute("ROLLBACK")
            self._last_seq, self._last_hash, self._last_event_id = saved
            self._write_failed(exc)
            raise
        finally:
            self._in_tx = False
        self._acked.difference_update(acked)
        for listener in list(self._listeners):
            listener(tx)

    def add_failure_listener(self, callback) -> None:
        """``callback(exc)`` when a write fails in the database or the OS (disk full, read-only, I/O error),
        whichever part wrote: the service turns it into the journal_io fault (issue 14 item 3)."""
        self._failure_listeners.append(callback)

    def _write_failed(self, exc: BaseException) -> None:
        if isinstance(exc, sqlite3.Error | OSError):
            for listener in list(self._failure_listeners):
                with contextlib.suppress(Exception):
                    listener(exc)

    def add_commit_listener(self, callback) -> None:
        """``callback(tx)`` after every COMMIT (e.g. wake the MQTT publisher), never inside one."""
        self._listeners.append(callback)

    def save_snapshot(self, state: dict[str, Any]) -> None:
        """Store the state as of the last record. Call between transactions."""
        with self.transaction() as tx:
            tx.execute(
                "INSERT OR REPLACE INTO snapshots(seq, ts, state) VALUES (?,?,?)",
                (self._last_seq, self._clock(), canonical(state)),
            )

    # ---- reading ----
    def last_seq_on_disk(self) -> int:
        """Ask the database itself (a health probe: the file is there and answers)."""
        row = self._conn.execute("SELECT MAX(seq) FROM records").fetchone()
        return row[0] or 0

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def last_hash(self) -> str:
        return self._last_hash

    @property
    def last_event_id(self) -> int:
        return self._last_event_id

    def latest_snapshot(self) -> tuple[int, dict[str, Any]] | None:
        row = self._conn.execute("SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], json.loads(row[1])) if row else None

    def records(self, after_seq: int = 0, kinds: tuple[str, ...] | None = None) -> Iterator[Record]:
        sql = "SELECT seq, ts, kind, data, prev_hash, hash FROM records WHERE seq > ?"
        params: list[Any] = [after_seq]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY seq"
        for seq, ts, kind, data, prev, h in self._conn.execute(sql, params):
            yield Record(seq, ts, kind, json.loads(data), prev, h)

    def outbox_pending(self, after_event_id: int = 0, limit: int = 200) -> list[OutboxRow]:
        """Rows not yet acknowledged, oldest first (acknowledged rows awaiting their delete are left out)."""
        rows = self._conn.execute(
            "SELECT event_id, topic, payload, qos, retain FROM outbox"
            " WHERE event_id > ? ORDER BY event_id LIMIT ?",
            (after_event_id, limit + len(self._acked)),
        ).fetchall()
        return [OutboxRow(e, t, p, q, bool(r)) for e, t, p, q, r in rows if e not in self._acked][:limit]

    def outbox_ack(self, event_ids: list[int]) -> None:
        """The broker acknowledged these events (PUBACK): they leave the outbox. The rows are deleted in the
        next transaction, or by ``flush_acks()`` (the publisher calls it when the table goes quiet, and once
        ``ACK_FLUSH_ROWS`` are waiting); until then they are neither counted nor sent again."""
        self._acked.update(event_ids)
        if len(self._acked) >= ACK_FLUSH_ROWS and not self._in_tx:
            self.flush_acks()

    def flush_acks(self) -> None:
        """Delete the acknowledged rows now, in a transaction of their own."""
        if not self._acked:
            return
        if self._in_tx:
            raise JournalError("flush_acks inside a journal transaction")
        ids = list(self._acked)
        # A delete lost to power failure only means a resend (consumers dedupe), so it does not wait for its
        # own fsync (synchronous=NORMAL): in WAL mode it becomes durable with the next FULL commit, which
        # syncs the log up to and including it (docs/performance.md).
        self._conn.execute("PRAGMA synchronous=NORMAL")
        try:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany("DELETE FROM outbox WHERE event_id = ?", [(e,) for e in ids])
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                self._write_failed(exc)
                raise
        finally:
            self._conn.execute("PRAGMA synchronous=FULL")
        self._acked.difference_update(ids)

    def outbox_size(self) -> int:
        """Rows still waiting for the broker's acknowledgement."""
        rows = self._conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
        return max(0, rows - len(self._acked))

    def retained_state(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT topic, payload FROM retained ORDER BY topic"))

    def verify(self) -> VerifyResult:
        """Walk the whole chain: a modified, inserted or deleted record is reported with its seq."""
        prev = GENESIS_HASH
        expected_seq = 1
        count = 0
        for seq, ts, kind, data, prev_hash, h in self._conn.execute(
            "SELECT seq, ts, kind, data, prev_hash, hash FROM records ORDER BY seq"
        ):
            count += 1
            if seq != expected_seq:
                return VerifyResult(False, count, expected_seq, f"record {expected_seq} is missing")
            if prev_hash != prev:
                return VerifyResult(False, count, seq, f"record {seq} does not chain to record {seq - 1}")
            if chain_hash(prev, seq, ts, kind, data) != h:
                return VerifyResult(False, count, seq, f"record {seq} was modified (hash mismatch)")
            prev = h
            expected_seq += 1
        return VerifyResult(True, count)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error, JournalError):
            self.flush_acks()
        self._conn.close()
