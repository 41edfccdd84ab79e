"""SQLite journal with a hash chain, a transactional outbox and snapshots.

Why one database: a state change, the records that explain it and the MQTT events that report it must
commit together (or not at all), so that nothing is published before it is durable and nothing durable
goes unpublished.

- ``records``: append-only; each row carries ``hash = sha256(prev_hash | seq | ts | kind | data)``, so a
  changed or deleted row breaks the chain (``verify``). Triggers refuse UPDATE/DELETE from this program, but for
  ``tablectl journal prune`` (controller/journal/prune.py): it deletes the records before a signed checkpoint
  record, which stays as the anchor ``verify`` starts from (``_anchor``).
- ``outbox``: events waiting for the broker's acknowledgement, keyed by a monotonic ``event_id``
  (AUTOINCREMENT never reuses an id, even after rows are deleted on ack).
- ``retained``: the latest payload of each retained state topic, republished after every reconnect.
- ``snapshots``: the controller state as of a record ``seq``; start-up loads the newest one and replays
  only the records after it, so start-up time does not grow with the journal. Each snapshot's SHA-256 is in a
  chained ``snapshot`` record; a snapshot that does not match one is never restored (``latest_snapshot``).
- ``events``: every published envelope, exactly as first published, kept after the broker's ack for the
  configured retention (``prune_events``) so a consumer can fetch a gap again (``cmd/replay``).

Everything restored or published is covered by the chain: each transaction that publishes ends with a
``published`` record holding the SHA-256 of every outbox row it created, and the publisher sends a row (or a
retained document, or a replayed event) only when it matches (``is_chained``). A file-level attacker who inserts
an outbox row cannot make the table publish it. Signed ``checkpoint`` records (controller/audit/) anchor the
chain off the table; ``verify_since_checkpoint`` checks only the records after the last one at start-up.

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

# The one place records are deleted, ``tablectl journal prune`` (controller/journal/prune.py), drops this trigger
# and creates it again inside its transaction.
NO_DELETE_TRIGGER = """CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
    BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END;"""
_SCHEMA = f"""
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
{NO_DELETE_TRIGGER}
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
-- Every published envelope (exact text) with the seq of the ``published`` record that chains its digest.
CREATE TABLE IF NOT EXISTS events (
    event_id INTEGER PRIMARY KEY,
    ts       REAL    NOT NULL,
    topic    TEXT    NOT NULL,
    payload  TEXT    NOT NULL,
    qos      INTEGER NOT NULL,
    retain   INTEGER NOT NULL,
    seq      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
"""

PUBLISHED_KIND = "published"  # the record chaining the digests of one transaction's outbox rows
SNAPSHOT_KIND = "snapshot"  # the record chaining a snapshot's digest
CHECKPOINT_KIND = "checkpoint"  # a signed checkpoint (controller/audit/checkpoint.py) of the head before it
PRUNED_KIND = "journal_pruned"  # records before ``anchor_seq`` were deleted (controller/journal/prune.py)
SNAPSHOT_FALLBACKS = 8  # older snapshots tried when the newest is not covered by the chain


class JournalError(Exception):
    pass


class JournalIntegrityError(JournalError):
    """The journal's contents contradict its chain or its signed checkpoints (the integrity fault: the service turns it
    into the ``integrity`` fault). ``seq`` names the record (or snapshot) concerned."""

    def __init__(self, seq: int | None, reason: str) -> None:
        super().__init__(reason)
        self.seq = seq
        self.reason = reason


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
    records: int  # records walked
    first_bad_seq: int | None = None
    reason: str = ""
    from_seq: int = 0  # the walk started after this record (0: from the genesis)


def event_digest(topic: str, payload: str, qos: int, retain: bool) -> str:
    """What the chain records of one outbox row: the topic, QoS, retain flag and exact payload text."""
    h = hashlib.sha256()
    h.update(f"{topic}\n{int(qos)}\n{int(bool(retain))}\n".encode())
    h.update(payload.encode())
    return h.hexdigest()


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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
        self._digests: list[str] = []  # event_digest of each row in ``events``

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
        self._digests.append(event_digest(topic, payload, qos, retain))
        return row

    def _chain_events(self) -> None:
        """Before COMMIT: one ``published`` record with the digest of every outbox row of this transaction (their
        ids are consecutive), and the rows kept in ``events`` for re-fetch."""
        first = self.events[0].event_id
        rec = self.append(PUBLISHED_KIND, {"first_event_id": first, "sha256": list(self._digests)})
        ts = self._j._clock()
        self._conn.executemany(
            "INSERT OR REPLACE INTO events(event_id, ts, topic, payload, qos, retain, seq)"
            " VALUES (?,?,?,?,?,?,?)",
            [(r.event_id, ts, r.topic, r.payload, r.qos, int(r.retain), rec.seq) for r in self.events],
        )

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """For modules that keep auxiliary tables in the journal database (e.g. used command nonces)."""
        return self._conn.execute(sql, params)


class Journal:
    def __init__(
        self,
        path: str | Path,
        *,
        table_id: str = "",
        clock=time.time,
        audit_public_key: str | None = None,
        exclusive: bool = False,
    ) -> None:
        self.path = Path(path)
        # The table's trusted checkpoint key (hex): verify_since_checkpoint anchors on checkpoints it signed.
        self.audit_public_key = audit_public_key
        # Digests of the outbox rows this process committed (trusted: computed here), by event_id.
        self._chained: dict[int, str] = {}
        # Snapshots found not covered by the chain (never restored): for the service's integrity fault.
        self.integrity_problems: list[JournalIntegrityError] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.table_id = table_id
        self._clock = clock
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        if exclusive:
            self._lock_exclusively()
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

    def _lock_exclusively(self) -> None:
        """Hold the file's exclusive lock until ``close`` (``tablectl journal prune``): no other connection, in any
        process, is open on it. In WAL mode every open connection holds a shared lock, so this fails at once while
        the service (or a reader such as ``tablectl journal verify``) has the journal open."""
        self._conn.execute("PRAGMA busy_timeout=0")
        self._conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        try:
            self._conn.execute("BEGIN EXCLUSIVE")
            self._conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self._conn.close()
            raise JournalError(
                f"{self.path}: the journal is open in another process (is the service running?): {exc}"
            ) from None
        self._conn.execute("PRAGMA busy_timeout=5000")

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
            if tx.events:
                tx._chain_events()
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
        for row, digest in zip(tx.events, tx._digests, strict=True):
            self._chained[row.event_id] = digest
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
        """Store the state as of the last record, its SHA-256 chained in a ``snapshot`` record right after it.
        Call between transactions."""
        text = canonical(state)
        with self.transaction() as tx:
            as_of = self._last_seq
            tx.append(SNAPSHOT_KIND, {"as_of_seq": as_of, "sha256": text_digest(text)})
            tx.execute(
                "INSERT OR REPLACE INTO snapshots(seq, ts, state) VALUES (?,?,?)",
                (as_of, self._clock(), text),
            )

    # ---- reading ----
    def first_seq(self) -> int:
        """The first record kept: 1, or the anchor after a prune (0: no record)."""
        row = self._conn.execute("SELECT MIN(seq) FROM records").fetchone()
        return row[0] or 0

    def last_prune(self) -> dict[str, Any] | None:
        """The newest ``journal_pruned`` record's data (what was deleted, up to which anchor), unchecked."""
        row = self._conn.execute(
            "SELECT data FROM records WHERE kind = ? ORDER BY seq DESC LIMIT 1", (PRUNED_KIND,)
        ).fetchone()
        return json.loads(row[0]) if row else None

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
        """The newest snapshot whose digest is chained (the ``snapshot`` record right after its seq, itself
        intact). One that is not is never restored: it is named in ``integrity_problems`` and an older one (or
        none: replay from the first record) is used instead, so the state comes from chained data only."""
        rows = self._conn.execute(
            "SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT ?", (SNAPSHOT_FALLBACKS,)
        ).fetchall()
        for seq, text in rows:
            problem = self._snapshot_problem(seq, text)
            if problem is None:
                return seq, json.loads(text)
            self.integrity_problems.append(problem)
        return None

    def _snapshot_problem(self, seq: int, text: str) -> JournalIntegrityError | None:
        rec = self._record_at(seq + 1)
        if rec is None or rec[2] != SNAPSHOT_KIND:
            return JournalIntegrityError(seq, f"snapshot as of record {seq} is not covered by the chain")
        r_seq, ts, kind, data, prev, h = rec
        if chain_hash(prev, r_seq, ts, kind, data) != h:
            return JournalIntegrityError(r_seq, f"record {r_seq} (snapshot digest) was modified")
        try:
            chained = json.loads(data)
        except ValueError:
            chained = None
        if (
            not isinstance(chained, dict)
            or chained.get("as_of_seq") != seq
            or chained.get("sha256") != text_digest(text)
        ):
            return JournalIntegrityError(
                seq, f"snapshot as of record {seq} does not match its chained digest (record {r_seq})"
            )
        return None

    def _record_at(self, seq: int) -> tuple[int, float, str, str, str, str] | None:
        return self._conn.execute(
            "SELECT seq, ts, kind, data, prev_hash, hash FROM records WHERE seq = ?", (seq,)
        ).fetchone()

    # ---- what may be published ----
    def is_chained(self, event_id: int, topic: str, payload: str, qos: int, retain: bool) -> bool:
        """This exact row (an outbox row, a retained document, a kept event) is one the chain records: its
        digest is in the ``published`` record of the transaction that created it. A row inserted or edited in
        the file by anyone else is not."""
        digest = event_digest(topic, payload, qos, retain)
        known = self._chained.get(event_id)
        if known is not None:
            return known == digest
        row = self._conn.execute("SELECT seq FROM events WHERE event_id = ?", (event_id,)).fetchone()
        rec = self._record_at(row[0]) if row else None
        if rec is None or rec[2] != PUBLISHED_KIND:
            return False
        r_seq, ts, kind, data, prev, h = rec
        if chain_hash(prev, r_seq, ts, kind, data) != h:
            return False
        try:
            chained = json.loads(data)
            index = event_id - int(chained["first_event_id"])
            return 0 <= index < len(chained["sha256"]) and chained["sha256"][index] == digest
        except (ValueError, KeyError, TypeError):
            return False

    def forget_chained(self, event_ids: list[int]) -> None:
        """Acknowledged rows: their digests need not stay in memory (a later look-up reads the chain)."""
        for e in event_ids:
            self._chained.pop(e, None)

    # ---- kept events (re-fetch) ----
    def kept_events(self, from_event_id: int, to_event_id: int) -> list[OutboxRow]:
        """Kept envelopes with ids in [from, to], in id order (whether each is chained is the caller's check)."""
        rows = self._conn.execute(
            "SELECT event_id, topic, payload, qos, retain FROM events"
            " WHERE event_id BETWEEN ? AND ? ORDER BY event_id",
            (from_event_id, to_event_id),
        ).fetchall()
        return [OutboxRow(e, t, p, q, bool(r)) for e, t, p, q, r in rows]

    def prune_events(self, older_than_ts: float) -> int:
        """Forget kept envelopes published before ``older_than_ts``, no longer in the outbox and no longer the
        current retained document of their topic (``is_chained`` proves that one through its row here before it is
        republished). The chain keeps their digests, so it stays verifiable. Returns the rows deleted."""
        if self._in_tx:
            raise JournalError("prune_events inside a journal transaction")
        self.flush_acks()  # acknowledged rows have left the outbox
        cur = self._conn.execute(
            "DELETE FROM events WHERE ts < ? AND event_id NOT IN (SELECT event_id FROM outbox)"
            " AND event_id NOT IN (SELECT json_extract(payload, '$.event_id') FROM retained)",
            (older_than_ts,),
        )
        return cur.rowcount

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
        self.forget_chained(event_ids)
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
        """Walk the whole chain: a modified, inserted or deleted record is reported with its seq.

        On its own this cannot tell a journal rewritten with recomputed hashes (or truncated) from a true one:
        that takes a signed checkpoint from outside the file (``verify_against_checkpoint``). With the table's
        key known (``audit_public_key``), every checkpoint record on the way must be signed by it and match the
        head it signs."""
        return self._verify_with(self.audit_public_key)

    def _verify_with(self, key: str | None) -> VerifyResult:
        anchor = self._anchor(key)
        if isinstance(anchor, VerifyResult):
            return anchor
        a_seq, a_hash = anchor
        result = self._walk(a_seq, a_hash, key=key)
        if a_seq == 0:
            return result
        return VerifyResult(
            result.ok, result.records + 1, result.first_bad_seq, result.reason, from_seq=a_seq - 1
        )

    def _anchor(self, key: str | None) -> tuple[int, str] | VerifyResult:
        """Where the walk starts: (0, genesis) for a journal holding record 1; after a prune (controller/journal/
        prune.py) its first record, which must be a ``checkpoint`` record that the newest ``journal_pruned``
        record names as the anchor, intact, and (with ``key``) signed by the table with the head it names being
        its own ``prev_hash``. Returns (anchor seq, anchor hash), or the failure."""
        from controller.audit.checkpoint import CheckpointError, verify_checkpoint

        row = self._conn.execute(
            "SELECT seq, ts, kind, data, prev_hash, hash FROM records ORDER BY seq LIMIT 1"
        ).fetchone()
        if row is None or row[0] == 1:
            return 0, GENESIS_HASH
        seq, ts, kind, data, prev, h = row

        def broken(reason: str, bad: int = 1) -> VerifyResult:
            return VerifyResult(False, 0, bad, reason, seq - 1)

        missing = f"records 1 to {seq - 1} are missing"
        if kind != CHECKPOINT_KIND:
            return broken(f"{missing} (record {seq} is not a checkpoint record a prune could keep as anchor)")
        if chain_hash(prev, seq, ts, kind, data) != h:
            return broken(f"record {seq} (the anchor) was modified (hash mismatch)", seq)
        found = self._conn.execute(
            "SELECT seq, data FROM records WHERE kind = ? ORDER BY seq DESC LIMIT 1", (PRUNED_KIND,)
        ).fetchone()
        try:
            pruned = json.loads(found[1]) if found else None
        except ValueError:
            pruned = None
        if not isinstance(pruned, dict) or pruned.get("anchor_seq") != seq or pruned.get("anchor_hash") != h:
            return broken(f"{missing} and no journal_pruned record names record {seq} as the anchor")
        signed = self._record_at(found[0] + 1)
        if key is not None and (signed is None or signed[2] != CHECKPOINT_KIND):
            # the walk checks that this checkpoint record is signed by the key and signs the prune record
            return broken(
                f"{missing}: the journal_pruned record {found[0]} is not signed (no checkpoint record after it)"
            )
        if key is not None:
            try:
                cp = verify_checkpoint(json.loads(data), key)
            except (CheckpointError, ValueError) as exc:
                return broken(f"record {seq} (the anchor): {exc}", seq)
            if cp.seq != seq - 1 or cp.hash != prev:
                return broken(f"record {seq} (the anchor) does not sign the head before it", seq)
        return seq, h

    def _walk(
        self, after_seq: int, prev: str, *, until_seq: int | None = None, key: str | None = None
    ) -> VerifyResult:
        """Check the records after ``after_seq`` (whose hash is ``prev``), up to ``until_seq`` or the end; with
        ``key``, also each checkpoint record's signature and signed head (a rewrite with recomputed hashes
        cannot re-sign them)."""
        from controller.audit.checkpoint import CheckpointError, verify_checkpoint

        expected_seq = after_seq + 1
        count = 0
        sql = "SELECT seq, ts, kind, data, prev_hash, hash FROM records WHERE seq > ?"
        params: list[Any] = [after_seq]
        if until_seq is not None:
            sql += " AND seq <= ?"
            params.append(until_seq)
        for seq, ts, kind, data, prev_hash, h in self._conn.execute(sql + " ORDER BY seq", params):
            count += 1
            if seq != expected_seq:
                return VerifyResult(
                    False, count, expected_seq, f"record {expected_seq} is missing", after_seq
                )
            if prev_hash != prev:
                return VerifyResult(
                    False, count, seq, f"record {seq} does not chain to record {seq - 1}", after_seq
                )
            if chain_hash(prev, seq, ts, kind, data) != h:
                return VerifyResult(
                    False, count, seq, f"record {seq} was modified (hash mismatch)", after_seq
                )
            if key is not None and kind == CHECKPOINT_KIND:
                try:
                    cp = verify_checkpoint(json.loads(data), key)
                except (CheckpointError, ValueError) as exc:
                    return VerifyResult(False, count, seq, f"record {seq}: {exc}", after_seq)
                if cp.seq != seq - 1 or cp.hash != prev:
                    return VerifyResult(
                        False,
                        count,
                        seq - 1,
                        f"record {seq - 1} differs from the head signed in checkpoint record {seq}"
                        " (the records up to it were rewritten)",
                        after_seq,
                    )
            prev = h
            expected_seq += 1
        return VerifyResult(True, count, from_seq=after_seq)

    @classmethod
    def verify_file(cls, path: str | Path, public_key: str | None) -> VerifyResult:
        """The full walk (``verify``) on a read-only connection of its own: safe to run on another thread while
        the service writes (WAL readers see the last commit). The service runs it in the background after
        start-up, so the records before the last checkpoint are checked too without slowing the start."""
        reader = cls.__new__(cls)
        reader._conn = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True, check_same_thread=False)
        reader.audit_public_key = public_key
        try:
            return reader.verify()
        finally:
            reader._conn.close()

    @classmethod
    def read_only(cls, path: str | Path) -> Journal:
        """An existing journal (or archive) opened for reading only: nothing in the file changes (no schema
        created, no WAL switch), so an archive's SHA-256 recorded by a prune stays true. Writing raises."""
        reader = cls.__new__(cls)
        reader.path = Path(path)
        reader._conn = sqlite3.connect(
            f"{reader.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
        )
        reader.audit_public_key = None
        reader.table_id = ""
        reader._clock = time.time
        reader._chained, reader._acked = {}, set()
        reader.integrity_problems = []
        reader._listeners, reader._failure_listeners = [], []
        reader._in_tx = False
        row = reader._conn.execute("SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
        reader._last_seq, reader._last_hash = (row[0], row[1]) if row else (0, GENESIS_HASH)
        reader._last_event_id = 0
        return reader

    def verify_since_checkpoint(self, public_key: str | None = None) -> VerifyResult:
        """Start-up verification: only the records after the newest checkpoint record that the table's key signed
        and that precedes the newest snapshot (so the snapshot restored and every input replayed after it are
        inside the walk). With no such checkpoint (or no key), the whole chain is walked.

        A checkpoint record not signed by the table's key, or whose signed head differs from the record it
        names, is a failure (a file-level attacker cannot sign)."""
        from controller.audit.checkpoint import CheckpointError, verify_checkpoint

        key = public_key or self.audit_public_key
        if not key:
            return self.verify()
        row = self._conn.execute("SELECT MAX(seq) FROM snapshots").fetchone()
        limit = row[0] + 1 if row and row[0] is not None else self._last_seq
        found = self._conn.execute(
            "SELECT seq, ts, kind, data, prev_hash, hash FROM records"
            " WHERE kind = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
            (CHECKPOINT_KIND, limit),
        ).fetchone()
        if found is None:
            return self.verify()
        c_seq, ts, kind, data, prev, h = found
        if c_seq <= self.first_seq():  # the anchor of a pruned journal: nothing before it to compare with
            return self._verify_with(key)
        if chain_hash(prev, c_seq, ts, kind, data) != h:
            return VerifyResult(False, 0, c_seq, f"record {c_seq} (checkpoint) was modified (hash mismatch)")
        try:
            cp = verify_checkpoint(json.loads(data), key)
        except (CheckpointError, ValueError) as exc:
            return VerifyResult(False, 0, c_seq, f"record {c_seq}: {exc}")
        head = self._record_at(cp.seq)
        if cp.seq != c_seq - 1 or head is None or head[5] != cp.hash or prev != cp.hash:
            return VerifyResult(
                False, 0, cp.seq, f"record {cp.seq} differs from the head signed in checkpoint record {c_seq}"
            )
        result = self._walk(cp.seq, cp.hash, key=key)
        if result.ok and result.records == 0 and self._last_seq > cp.seq:
            return VerifyResult(False, 0, cp.seq + 1, f"record {cp.seq + 1} is missing", cp.seq)
        return result

    def verify_against_checkpoint(self, checkpoint: dict[str, Any], public_key: str | None) -> VerifyResult:
        """The whole chain, and the record the checkpoint names carries the hash it signed.

        ``checkpoint`` is the checkpoint dict (``data`` of the MQTT envelope); ``public_key`` the table's
        trusted key (hex). ``None`` checks the signature against the checkpoint's own key only (it proves the
        journal matches the checkpoint, not who signed it). Catches truncation, rewriting with recomputed hashes,
        deleting everything and a checkpoint re-signed with another key."""
        from controller.audit.checkpoint import CheckpointError, verify_checkpoint

        try:
            cp = verify_checkpoint(checkpoint, public_key)
        except CheckpointError as exc:
            return VerifyResult(False, 0, None, str(exc))
        if self.table_id and cp.table != self.table_id:
            return VerifyResult(False, 0, None, f"checkpoint is for table {cp.table}, not {self.table_id}")
        anchor = self._anchor(cp.public_key)
        if isinstance(anchor, VerifyResult):
            return anchor
        a_seq, a_hash = anchor
        if a_seq and cp.seq < a_seq - 1:
            return VerifyResult(
                False,
                0,
                None,
                f"checkpoint {cp.seq} predates the journal's anchor (record {a_seq}): the records up to it were"
                " pruned; verify it against the journal archive",
            )
        if a_seq and cp.seq == a_seq - 1:  # the anchor itself signs this head: its prev_hash
            anchor_prev = self._record_at(a_seq)[4]  # type: ignore[index]
            if anchor_prev != cp.hash:
                return VerifyResult(
                    False, 1, a_seq, f"record {a_seq} (the anchor) does not chain to checkpoint {cp.seq}"
                )
            return VerifyResult(True, 1, from_seq=a_seq - 1)
        result = self._walk(a_seq, a_hash, until_seq=cp.seq, key=cp.public_key)
        if not result.ok:
            return result
        if result.records < cp.seq - a_seq:
            missing = a_seq + result.records + 1
            return VerifyResult(
                False,
                result.records,
                missing,
                f"record {missing} is missing: the checkpoint covers records up to {cp.seq} (truncated)",
            )
        head = self._record_at(cp.seq)
        assert head is not None
        if head[5] != cp.hash:
            first = self._first_rewritten(cp.seq, cp.public_key)
            return VerifyResult(
                False,
                result.records,
                first,
                f"record {cp.seq} differs from the signed checkpoint: the records up to it were rewritten"
                f" (hashes recomputed) from record {first} on",
            )
        return VerifyResult(True, result.records + (1 if a_seq else 0), from_seq=max(0, a_seq - 1))

    def _first_rewritten(self, up_to: int, key: str) -> int:
        """Narrow a rewrite down with the signed checkpoint records inside the journal: the first record after
        the newest one whose signed head still matches (an attacker cannot sign a new one)."""
        from controller.audit.checkpoint import CheckpointError, verify_checkpoint

        good = 0
        for c_seq, data in self._conn.execute(
            "SELECT seq, data FROM records WHERE kind = ? AND seq <= ? ORDER BY seq", (CHECKPOINT_KIND, up_to)
        ):
            try:
                cp = verify_checkpoint(json.loads(data), key)
            except (CheckpointError, ValueError):
                break
            head = self._record_at(cp.seq)
            head_hash = head[5] if head is not None else None
            if head is None and c_seq == self.first_seq():  # the anchor of a pruned journal
                head_hash = self._record_at(c_seq)[4]  # type: ignore[index]
            if head_hash != cp.hash:
                break
            good = c_seq
        return good + 1

    def last_checkpoint_record(self) -> dict[str, Any] | None:
        """The newest checkpoint record's data (to chain the next checkpoint to it), unchecked."""
        row = self._conn.execute(
            "SELECT data FROM records WHERE kind = ? ORDER BY seq DESC LIMIT 1", (CHECKPOINT_KIND,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error, JournalError):
            self.flush_acks()
        self._conn.close()
