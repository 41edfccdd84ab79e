"""SQLite journal with a hash chain, a transactional outbox and snapshots.

Why one database: a state change, the records that explain it and the MQTT events that report it must
commit together (or not at all), so that nothing is published before it is durable and nothing durable
goes unpublished.

The tables (``records``, ``outbox``, ``retained``, ``snapshots``, ``events``, ``meta``) are described in
controller/journal/schema.py; the outbox's ids (never reused) in controller/journal/outbox.py.

Everything restored or published is covered by the chain: each transaction that publishes ends with a
``published`` record holding the SHA-256 of every outbox row it created, and the publisher sends a row (or a
retained document, or a replayed event) only when it matches (``is_chained``). A file-level attacker who inserts
an outbox row cannot make the table publish it. Signed ``checkpoint`` records (controller/audit/) anchor the
chain off the table; ``verify_since_checkpoint`` checks only the records after the last one at start-up.

The connection belongs to one thread (the asyncio loop's); WAL + synchronous=FULL makes each COMMIT
durable. ``start_wal_checkpoints`` moves the copying of the log into the database file to a thread of its own
(wal_checkpoints.py), out of the cards' commits. ``Journal`` is the API (its names are importable from here); below
it: records.py (the chain's record kinds, row types and hashes), schema.py, transaction.py (one atomic unit),
snapshots.py (restored only when chained), verify.py (the chain walks and the checkpoint checks)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from controller.canonical import canonical
from controller.journal.event_chain import last_head
from controller.journal.outbox import last_event_id, migrate_outbox
from controller.journal.records import (
    CHECKPOINT_KIND,
    GENESIS_HASH,
    KIND_INDEXED,
    PRUNED_KIND,
    SNAPSHOT_KIND,
    JournalError,
    JournalIntegrityError,
    OutboxRow,
    RawRecord,
    Record,
    chain_hash,
    event_digest,
    first_seq,
    kind_in,
    read_records,
    record_at,
    text_digest,
)
from controller.journal.schema import NO_DELETE_TRIGGER, SCHEMA
from controller.journal.snapshots import chained_snapshot
from controller.journal.transaction import Transaction, iso_ts
from controller.journal.verify import (
    VerifyResult,
    kept_event_is_chained,
    trusted_until,
    verify_chain,
    verify_chain_against_checkpoint,
    verify_chain_since_checkpoint,
    walk,
)
from controller.journal.wal_checkpoints import COMMITS, IDLE_S, LIMIT_PAGES, POLL_S, WalCheckpoints

# Imported from here across the project: the journal's API, whichever module below defines each name.
__all__ = [
    "CHECKPOINT_KIND",
    "GENESIS_HASH",
    "KIND_INDEXED",
    "NO_DELETE_TRIGGER",
    "PRUNED_KIND",
    "Journal",
    "JournalError",
    "JournalIntegrityError",
    "OutboxRow",
    "Record",
    "Transaction",
    "VerifyResult",
    "chain_hash",
    "iso_ts",
]

ACK_FLUSH_ROWS = 512  # acknowledged outbox rows held for deletion at most (see Journal.outbox_ack)


def first_event_at(conn: sqlite3.Connection, ts: float) -> int:
    """The first kept event's id whose ``ts`` (the clock at its commit) is at or after ``ts``, by bisection over
    ``event_id`` (``ts`` grows with it while the clock does not step back), or one past the last id: the bound for
    ``prune_events`` without an index on ``ts``. The prune checks ``ts`` too, so a clock that stepped back only
    keeps rows longer, never prunes one early."""
    lo, hi = conn.execute("SELECT MIN(event_id), MAX(event_id) FROM events").fetchone()
    if lo is None:
        return 0
    hi += 1  # the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        row = conn.execute(
            "SELECT event_id, ts FROM events WHERE event_id >= ? ORDER BY event_id LIMIT 1", (mid,)
        ).fetchone()  # a row exists: the last id is >= mid
        if row[1] >= ts:
            hi = mid
        else:
            lo = row[0] + 1
    return int(lo)


class Journal:
    # The open transaction (its records are written before a read); a class default for the readers made without
    # ``__init__`` (``verify_file``, ``read_only``, controller/journal/archive.py).
    _tx: Transaction | None = None

    def __init__(
        self,
        path: str | Path,
        *,
        table_id: str = "",
        clock: Callable[[], float] = time.time,
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
        self._exclusive = exclusive
        self._wal_checkpoints: WalCheckpoints | None = None
        if exclusive:
            self._lock_exclusively()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(SCHEMA)
        migrate_outbox(self._conn, clock())  # once, for a journal from before issue 44
        self._in_tx = False
        self._tx = None
        self._listeners: list[Callable[[Transaction], None]] = []
        self._failure_listeners: list[Callable[[BaseException], None]] = []
        # Outbox rows the broker acknowledged, not yet deleted: the deletes ride in the next transaction
        # (or flush_acks()) instead of costing a write transaction of their own per PUBACK batch.
        self._acked: set[int] = set()
        row = self._conn.execute("SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
        self._last_seq: int = row[0] if row else 0
        self._last_hash: str = row[1] if row else GENESIS_HASH
        self._last_event_id = last_event_id(self._conn)  # never reused: controller/journal/outbox.py
        self._last_chain = last_head(self._conn)  # the published events' chain (journal/event_chain.py)

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
        saved = (self._last_seq, self._last_hash, self._last_event_id, self._last_chain)
        self._conn.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        tx = self._tx = Transaction(self)
        acked = list(self._acked)
        try:
            yield tx
            if tx.events:
                tx._chain_events()
            tx.write_records()
            if acked:
                self._conn.executemany("DELETE FROM outbox WHERE event_id = ?", [(e,) for e in acked])
            self._conn.execute("COMMIT")
        except BaseException as exc:
            if self._conn.in_transaction:  # SQLite already rolled back after SQLITE_FULL / an I/O error: a
                with contextlib.suppress(sqlite3.Error):  # ROLLBACK then hides the cause (issue 14 item 3)
                    self._conn.execute("ROLLBACK")
            self._last_seq, self._last_hash, self._last_event_id, self._last_chain = saved
            self._write_failed(exc)
            raise
        finally:
            self._in_tx, self._tx = False, None
        if self._wal_checkpoints is not None:
            self._wal_checkpoints.committed()
        self._acked.difference_update(acked)
        if tx.events:
            self._chained.update(zip([row.event_id for row in tx.events], tx._digests, strict=True))
        for listener in list(self._listeners):
            listener(tx)

    def start_wal_checkpoints(
        self, *, every_commits: int = COMMITS, idle_s: float = IDLE_S, poll_s: float = POLL_S
    ) -> WalCheckpoints:
        """Checkpoint the WAL on a thread of its own from now on, never inside this connection's COMMIT (unless
        that thread falls ``LIMIT_PAGES`` behind): controller/journal/wal_checkpoints.py. ``close`` stops it."""
        if self._exclusive:
            raise JournalError(
                "no WAL checkpoint thread on a journal opened exclusively (it checkpoints itself)"
            )
        checkpoints = self._wal_checkpoints or WalCheckpoints(
            self.path, every_commits=every_commits, idle_s=idle_s, poll_s=poll_s
        )
        checkpoints.start()  # nothing if it runs already
        self._conn.execute(f"PRAGMA wal_autocheckpoint={LIMIT_PAGES}")
        self._wal_checkpoints = checkpoints
        return checkpoints

    @property
    def wal_checkpoints(self) -> WalCheckpoints | None:
        """The WAL checkpoint thread, if started."""
        return self._wal_checkpoints

    def add_failure_listener(self, callback: Callable[[BaseException], None]) -> None:
        """``callback(exc)`` when a write fails in the database or the OS (disk full, read-only, I/O error),
        whichever part wrote: the service turns it into the journal_io fault (issue 14 item 3)."""
        self._failure_listeners.append(callback)

    def _write_failed(self, exc: BaseException) -> None:
        if isinstance(exc, sqlite3.Error | OSError):
            for listener in list(self._failure_listeners):
                with contextlib.suppress(Exception):
                    listener(exc)

    def add_commit_listener(self, callback: Callable[[Transaction], None]) -> None:
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
    @property
    def _reader(self) -> sqlite3.Connection:
        """The connection for a read of the records: inside a transaction, the records it appended are written
        first (``Transaction.write_records``), so the read sees them."""
        if self._tx is not None:
            self._tx.write_records()
        return self._conn

    def first_seq(self) -> int:
        """The first record kept: 1, or the anchor after a prune (0: no record)."""
        return first_seq(self._reader)

    def last_prune(self) -> dict[str, Any] | None:
        """The newest ``journal_pruned`` record's data (what was deleted, up to which anchor), unchecked."""
        return self._newest_data(PRUNED_KIND)

    def _newest_data(self, kind: str) -> dict[str, Any] | None:
        """The data of the newest record of ``kind`` (an indexed kind), unchecked; None when there is none."""
        row = self._reader.execute(
            f"SELECT data FROM records WHERE kind = ? AND {KIND_INDEXED} ORDER BY seq DESC LIMIT 1", (kind,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def last_seq_on_disk(self) -> int:
        """Ask the database itself (a health probe: the file is there and answers)."""
        row = self._reader.execute("SELECT MAX(seq) FROM records").fetchone()
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

    @property
    def last_event_chain(self) -> str:
        """The published events' chain value at ``last_event_id`` (what a checkpoint signs with it)."""
        return self._last_chain

    def latest_snapshot(self, before_seq: int | None = None) -> tuple[int, dict[str, Any]] | None:
        """The newest snapshot whose digest is chained (the ``snapshot`` record right after its seq, itself
        intact). One that is not is never restored: it is named in ``integrity_problems`` and an older one (or
        none: replay from the first record) is used instead, so the state comes from chained data only.
        ``before_seq``: only one whose digest record is before that record (the verified part)."""
        return chained_snapshot(self._reader, self.integrity_problems, before_seq=before_seq)

    def trusted_until(self) -> int:
        """The last record covered by a valid signed checkpoint before the chain's first break (the whole
        journal when nothing is broken): what may become live state after an integrity fault."""
        return trusted_until(self._reader, self.audit_public_key)

    def last_record(self, kind: str, until_seq: int | None = None) -> Record | None:
        """The newest record of ``kind`` (at or before ``until_seq``)."""
        row = self._reader.execute(
            f"SELECT MAX(seq) FROM records WHERE {kind_in((kind,))} AND seq <= ?",
            (kind, until_seq if until_seq is not None else 2**62),
        ).fetchone()
        if not row or row[0] is None:
            return None
        return next(iter(self.records(after_seq=row[0] - 1, kinds=(kind,))), None)

    def _record_at(self, seq: int) -> RawRecord | None:
        return record_at(self._reader, seq)

    # ---- what may be published ----
    def is_chained(self, event_id: int, topic: str, payload: str, qos: int, retain: bool) -> bool:
        """This exact row (an outbox row, a retained document, a kept event) is one the chain records: its
        digest is in the ``published`` record of the transaction that created it. A row inserted or edited in
        the file by anyone else is not."""
        digest = event_digest(topic, payload, qos, retain)
        known = self._chained.get(event_id)
        if known is not None:
            return known == digest
        return kept_event_is_chained(self._reader, event_id, digest)

    def forget_chained(self, event_ids: list[int]) -> None:
        """Acknowledged rows: their digests need not stay in memory (a later look-up reads the chain)."""
        for e in event_ids:
            self._chained.pop(e, None)

    # ---- kept events (re-fetch) ----
    def kept_events(self, from_event_id: int, to_event_id: int) -> list[OutboxRow]:
        """Kept envelopes with ids in [from, to], in id order (whether each is chained is the caller's check)."""
        rows = self._reader.execute(
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
            "DELETE FROM events WHERE event_id < ? AND ts < ? AND event_id NOT IN (SELECT event_id FROM outbox)"
            " AND event_id NOT IN (SELECT json_extract(payload, '$.event_id') FROM retained)",
            (first_event_at(self._conn, older_than_ts), older_than_ts),
        )
        return cur.rowcount

    def records(self, after_seq: int = 0, kinds: tuple[str, ...] | None = None) -> Iterator[Record]:
        return read_records(self._reader, after_seq, kinds)

    def outbox_pending(self, after_event_id: int = 0, limit: int = 200) -> list[OutboxRow]:
        """Rows not yet acknowledged, oldest first (acknowledged rows awaiting their delete are left out)."""
        # The envelope is the kept event of the same id (one missing there reads as an empty row: the publisher
        # refuses it as not chained, and reports it).
        rows = self._conn.execute(
            "SELECT o.event_id, COALESCE(e.topic, ''), COALESCE(e.payload, ''), COALESCE(e.qos, 1),"
            " COALESCE(e.retain, 0) FROM outbox o LEFT JOIN events e ON e.event_id = o.event_id"
            " WHERE o.event_id > ? ORDER BY o.event_id LIMIT ?",
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
        if self._wal_checkpoints is not None:
            self._wal_checkpoints.committed()
        self._acked.difference_update(ids)

    def outbox_size(self) -> int:
        """Rows still waiting for the broker's acknowledgement."""
        rows: int = self._conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
        return max(0, rows - len(self._acked))

    def retained_state(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT topic, payload FROM retained ORDER BY topic"))

    def verify(self) -> VerifyResult:
        """Walk the whole chain: a modified, inserted or deleted record is reported with its seq.

        On its own this cannot tell a journal rewritten with recomputed hashes (or truncated) from a true one:
        that takes a signed checkpoint from outside the file (``verify_against_checkpoint``). With the table's
        key known (``audit_public_key``), every checkpoint record on the way must be signed by it and match the
        head it signs."""
        return verify_chain(self._reader, self.audit_public_key)

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
        reader._exclusive, reader._wal_checkpoints = False, None
        row = reader._conn.execute("SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
        reader._last_seq, reader._last_hash = (row[0], row[1]) if row else (0, GENESIS_HASH)
        reader._last_event_id = 0
        reader._last_chain = last_head(reader._conn)
        return reader

    def verify_since_checkpoint(self, public_key: str | None = None) -> VerifyResult:
        """Start-up verification: only the records after the newest checkpoint record that the table's key signed
        and that precedes the newest snapshot (so the snapshot restored and every input replayed after it are
        inside the walk). With no such checkpoint (or no key), the whole chain is walked.

        A checkpoint record not signed by the table's key, or whose signed head differs from the record it
        names, is a failure (a file-level attacker cannot sign)."""
        key = public_key or self.audit_public_key
        if not key:
            return self.verify()
        result = verify_chain_since_checkpoint(self._reader, key, self._last_seq)
        return self.verify() if result is None else result

    def verify_after(self, seq: int) -> VerifyResult:
        """The records after record ``seq`` (the head a checkpoint signed): each chains to the one before, and
        with ``audit_public_key`` every checkpoint record among them is signed and signs its head."""
        head = record_at(self._reader, seq)
        anchor = record_at(self._reader, seq + 1) if head is None and seq + 1 == self.first_seq() else None
        if head is None and anchor is None:
            return VerifyResult(False, 0, seq, f"record {seq} is missing", seq)
        # after a prune the anchor (record seq + 1) holds the signed head as its prev_hash
        prev = head[5] if head is not None else anchor[4]  # type: ignore[index]  # both None returned above
        return walk(self._reader, seq, prev, key=self.audit_public_key)

    def verify_against_checkpoint(self, checkpoint: dict[str, Any], public_key: str | None) -> VerifyResult:
        """The whole chain, and the record the checkpoint names carries the hash it signed.

        ``checkpoint`` is the checkpoint dict (``data`` of the MQTT envelope); ``public_key`` the table's
        trusted key (hex). ``None`` checks the signature against the checkpoint's own key only (it proves the
        journal matches the checkpoint, not who signed it). Catches truncation, rewriting with recomputed hashes,
        deleting everything and a checkpoint re-signed with another key."""
        return verify_chain_against_checkpoint(self._reader, checkpoint, public_key, self.table_id)

    def last_checkpoint_record(self) -> dict[str, Any] | None:
        """The newest checkpoint record's data (to chain the next checkpoint to it), unchecked."""
        return self._newest_data(CHECKPOINT_KIND)

    def close(self) -> None:
        if self._wal_checkpoints is not None:  # before the last commit: the close checkpoints what is left
            self._wal_checkpoints.stop()
            self._wal_checkpoints = None
        with contextlib.suppress(sqlite3.Error, JournalError):
            self.flush_acks()
        self._conn.close()
