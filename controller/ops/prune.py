"""`tablectl journal prune`: delete from the live journal the records an archive holds, up to a signed checkpoint.

Retention's second half (the first: ``tablectl journal archive``, controller/journal/archive.py). Refused, with the
reason and nothing changed, unless all of this holds:

- the archive verifies (its chain, every checkpoint record signed by the table's key, ending in one), covers every
  record to be deleted (it starts at or before the live journal's first record) and is of this journal: its last
  record carries the hash the live journal's record of the same seq carries;
- the live journal itself verifies with the table's key (a tampered record is never pruned away);
- the journal is not open in any other process: the file's exclusive lock is taken for the whole prune, so the
  service must be stopped (it keeps the head, the outbox and the alert book in memory: a prune under it would
  leave them stale). A running service is refused at once ("open in another process");
- the cut is a ``checkpoint`` record c in the archive, with nothing the table still reads before it: the newest
  chained snapshot is as of c or later (start-up replays the inputs after it), no outbox row waiting for the broker
  was created before c, no kept event inside ``[journal] event_retention_days`` (``cmd/replay``) was published
  before c, and no command record inside the command window (nonces, lock-outs, request ids: ``COMMAND_WINDOW_S``)
  is before c. Without ``up_to`` the newest checkpoint record that allows is chosen; ``up_to`` names one exactly.

One transaction then deletes records before c (record c stays: the anchor, a checkpoint record signed by the table
whose ``prev_hash`` is the signed head), the kept events and snapshots chained by deleted records, carries the alert
book forward (each open alert raised before c, and the last alert for the next id, as ``alert`` records marked
``carried_from_seq``), publishes again each retained state document chained only by a deleted record (same ``type``
and ``data``, a new event id: the publisher republishes a retained document only when the chain proves it; one the
chain does not prove now is left as it is and named) and appends a ``journal_pruned`` record: who, the anchor, what
was deleted, the archive's SHA-256, followed by a checkpoint record signed with the table's key (``--key-file``: the
prune is signed; ``Journal.verify`` with the key requires it). ``Journal.verify`` walks from the anchor after that;
the records before it are only in the archive (and the floor). VACUUM then gives the space back to the file system."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import public_key_hex, sign_checkpoint
from controller.config.model import JournalConfig
from controller.journal.archive import ArchiveError, verify_archive
from controller.journal.checkpointer import EVENT_TYPE as CHECKPOINT_EVENT
from controller.journal.checkpointer import TOPIC as CHECKPOINT_TOPIC
from controller.journal.store import (
    CHECKPOINT_KIND,
    KIND_INDEXED,
    NO_DELETE_TRIGGER,
    PRUNED_KIND,
    Journal,
    JournalError,
    iso_ts,
)
from controller.mqtt.alerts import RECORD_KIND as ALERT_KIND
from controller.mqtt.alerts import Alert, AlertBook
from controller.mqtt.auth import ACCEPTED_RECORD, LOCKOUT_S, LOCKOUT_WINDOW_S, REFUSED_RECORD
from controller.mqtt.command_results import RESULT_RECORD
from controller.ops.status import journal_bytes

# Command records the service reads back at start-up by time: nonces (seconds), lock-outs (window + lock-out) and
# the answers to request ids (a retry older than this is refused as stale, never acted on twice).
COMMAND_WINDOW_S = LOCKOUT_WINDOW_S + LOCKOUT_S
COMMAND_KINDS = (ACCEPTED_RECORD, REFUSED_RECORD, RESULT_RECORD)
DEFAULT_EVENT_RETENTION_DAYS = JournalConfig().event_retention_days


class PruneError(Exception):
    """Why nothing was pruned."""


@dataclass(frozen=True, slots=True)
class Pruned:
    anchor_seq: int  # the journal now starts at this checkpoint record
    first_seq_before: int
    records_deleted: int
    events_deleted: int
    snapshots_deleted: int
    alerts_carried: int
    record_seq: int  # the journal_pruned record
    archive_sha256: str
    bytes_before: int
    bytes_after: int
    lowered_by: str  # why the cut is below the archive's end ("" when it is at the end)


def _os_user() -> str:
    try:
        return getpass.getuser()[:64]
    except (OSError, KeyError):  # no login name and no passwd entry (a container)
        return f"uid {os.getuid()}"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _limits(journal: Journal, now: float, retention_days: int) -> list[tuple[int, str]]:
    """(lowest record that must stay, why) for everything the table still reads from old records."""
    conn = journal._conn
    found: list[tuple[int, str]] = []
    snap = journal.latest_snapshot()
    if snap is None:
        found.append((0, "the journal has no chained snapshot (start-up would replay every input)"))
    else:
        found.append(
            (snap[0], f"the newest snapshot is as of record {snap[0]} (start-up replays the inputs after it)")
        )
    row = conn.execute(
        "SELECT MIN(e.seq), COUNT(*) FROM outbox o JOIN events e ON e.event_id = o.event_id"
    ).fetchone()
    if row[0] is not None:
        found.append(
            (row[0], f"{row[1]} outbox row(s) wait for the broker (oldest chained in record {row[0]})")
        )
    cutoff = now - retention_days * 86400
    row = conn.execute("SELECT MIN(seq) FROM events WHERE ts >= ?", (cutoff,)).fetchone()
    if row[0] is not None:
        found.append(
            (
                row[0],
                f"events inside the {retention_days}-day replay retention are chained from record {row[0]}",
            )
        )
    marks = ",".join("?" * len(COMMAND_KINDS))
    row = conn.execute(
        f"SELECT MIN(seq) FROM records WHERE kind IN ({marks}) AND {KIND_INDEXED} AND ts >= ?",
        (*COMMAND_KINDS, now - COMMAND_WINDOW_S),
    ).fetchone()
    if row[0] is not None:
        found.append((row[0], f"command records of the last {COMMAND_WINDOW_S} s start at record {row[0]}"))
    return found


def _carried_alerts(journal: Journal, cut: int) -> list[dict[str, Any]]:
    """``alert`` records that rebuild, after the cut, the alert book the whole journal gives (open alerts and the
    next alert id). Refuses if they would not."""
    last: dict[int, tuple[int, str, Alert]] = {}  # alert id -> (seq, action, alert) of its latest record
    full = AlertBook()
    for rec in journal.records(kinds=(ALERT_KIND,)):
        try:
            alert = Alert.from_dict(rec.data["alert"])
            full = full.apply(rec.data["action"], alert)
        except (KeyError, TypeError, ValueError):
            continue  # skipped at start-up too (AlertBook.from_records)
        last[alert.alert_id] = (rec.seq, rec.data["action"], alert)
    carried: list[dict[str, Any]] = []
    for alert in full.open:
        seq = last[alert.alert_id][0]
        if seq < cut:
            carried.append({"action": "raised", "alert": alert.to_dict(), "carried_from_seq": seq})
    newest = full.next_id - 1
    if newest in last and last[newest][0] < cut and all(a.alert_id != newest for a in full.open):
        seq, _action, alert = last[newest]
        carried.append({"action": "acknowledged", "alert": alert.to_dict(), "carried_from_seq": seq})
    kept = [r for r in journal.records(after_seq=cut - 1, kinds=(ALERT_KIND,))]
    rebuilt = AlertBook.from_records(kept)
    for doc in carried:
        rebuilt = rebuilt.apply(doc["action"], Alert.from_dict(doc["alert"]))

    def key(book: AlertBook) -> tuple[Any, ...]:
        return book.next_id, sorted((a.alert_id, json.dumps(a.to_dict(), sort_keys=True)) for a in book.open)

    if key(rebuilt) != key(full):
        raise PruneError(
            f"the alert book cannot be carried past record {cut}: acknowledge the open alerts first"
        )
    return carried


def _stale_retained(journal: Journal, cut: int) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Retained state documents chained by a record before the cut: (the ones to publish again, each proven
    against the chain now; the topics of those the chain does not prove, left as they are)."""
    again: list[tuple[str, dict[str, Any]]] = []
    unproven: list[str] = []
    for topic, payload in journal.retained_state().items():
        try:
            env = json.loads(payload)
            event_id = int(env["event_id"])
            row = journal._conn.execute("SELECT seq FROM events WHERE event_id = ?", (event_id,)).fetchone()
        except (ValueError, KeyError, TypeError):
            unproven.append(topic)
            continue
        if row is not None and row[0] >= cut:
            continue  # chained after the cut: still provable
        if not journal.is_chained(event_id, topic, payload, 1, True):
            unproven.append(topic)
            continue
        again.append((topic, env))
    return again, unproven


def prune(
    db: str | Path,
    archive_file: str | Path,
    public_key: str,
    signing_key: Ed25519PrivateKey,
    *,
    by: str,
    up_to: int | None = None,
    event_retention_days: int = DEFAULT_EVENT_RETENTION_DAYS,
    clock: Callable[[], float] = time.time,
) -> Pruned:
    """Delete the records before a checkpoint record the archive ends in or holds (see the module's docstring)."""
    db, archive_path = Path(db), Path(archive_file)
    if not 0 < len(by) <= 64 or not by.isprintable():
        raise PruneError("--by: the person responsible, 1-64 printable characters")
    if public_key_hex(signing_key.public_key()) != public_key.lower():
        raise PruneError("the key file is not the table's audit key (the trusted public key differs)")
    bytes_before = journal_bytes(db)
    try:
        archive_sha = file_sha256(archive_path)
        arch = verify_archive(archive_path, public_key)
        if file_sha256(archive_path) != archive_sha:
            raise ArchiveError(f"{archive_path}: changed while it was being checked")
    except OSError as exc:
        raise PruneError(f"archive refused: {archive_path}: cannot be read: {exc.strerror or exc}") from None
    except ArchiveError as exc:
        raise PruneError(f"archive refused: {exc}") from None
    try:
        journal = Journal(db, audit_public_key=public_key, clock=clock, exclusive=True)
    except (JournalError, sqlite3.Error) as exc:
        raise PruneError(f"{exc}: stop it first (systemctl stop tablectl); nothing pruned") from None
    try:
        first = journal.first_seq()
        if arch.checkpoint_seq <= first:
            raise PruneError(
                f"nothing to prune: the archive ends at record {arch.checkpoint_seq}, the journal starts at record"
                f" {first} (an archive of an earlier prune?)"
            )
        head = journal._record_at(arch.checkpoint_seq)
        if head is None or head[5] != arch.checkpoint_hash:
            what = "is not in the journal" if head is None else "differs in the journal"
            raise PruneError(
                f"archive refused: its last record {arch.checkpoint_seq} {what} (an archive of another table or of"
                " a rewritten journal)"
            )
        if arch.first_seq > first:
            raise PruneError(
                f"archive refused: it starts at record {arch.first_seq}, the journal at {first}: records {first} to"
                f" {arch.first_seq - 1} would be deleted without a copy"
            )
        result = journal.verify()
        if not result.ok:
            raise PruneError(
                f"the journal does not verify (BROKEN at record {result.first_bad_seq}: {result.reason}):"
                " nothing is pruned from a journal that does not verify"
            )
        candidates = [
            seq
            for (seq,) in journal._conn.execute(
                f"SELECT seq FROM records WHERE kind = ? AND {KIND_INDEXED} AND seq > ? AND seq <= ? ORDER BY seq",
                (CHECKPOINT_KIND, first, arch.checkpoint_seq),
            )
        ]
        if up_to is not None and up_to not in candidates:
            newest = candidates[-1] if candidates else first
            raise PruneError(
                f"record {up_to} is not a signed checkpoint record between the journal's first record {first} and the"
                f" archive's end {arch.checkpoint_seq} (the newest one there: {newest}): the journal is cut only at one"
            )
        if not candidates:
            raise PruneError(
                f"nothing to prune: the archive ends at record {arch.checkpoint_seq}, the journal starts at {first}"
            )
        limits = _limits(journal, clock(), event_retention_days)
        limit, why = min(limits) if limits else (journal.last_seq + 1, "")
        allowed = [c for c in candidates if c <= limit and (up_to is None or c == up_to)]
        if not allowed:
            raise PruneError(f"cannot cut at record {up_to or candidates[-1]}: {why}; nothing pruned")
        cut = allowed[-1]
        lowered = why if cut < candidates[-1] else ""
        carried = _carried_alerts(journal, cut)
        retained, unproven = _stale_retained(journal, cut)
        anchor = journal._record_at(cut)
        assert anchor is not None
        anchor_cp = json.loads(anchor[3])
        last_event_id = anchor_cp.get("last_event_id", 0)
        prev_cp = journal.last_checkpoint_record() or {}
        conn = journal._conn
        events = conn.execute("SELECT COUNT(*) FROM events WHERE seq < ?", (cut,)).fetchone()[0]
        snapshots = conn.execute("SELECT COUNT(*) FROM snapshots WHERE seq < ?", (cut,)).fetchone()[0]
        with journal.transaction() as tx:
            for doc in carried:
                tx.append(ALERT_KIND, doc)
            for topic, env in retained:  # the same document again, chained by this transaction's records
                tx.publish(topic, str(env["type"]), env["data"], retain=True)
            rec = tx.append(
                PRUNED_KIND,
                {
                    "by": by,
                    "os_user": _os_user(),
                    "host": socket.gethostname()[:64],
                    "at": iso_ts(clock()),
                    "anchor_seq": cut,
                    "anchor_hash": anchor[5],
                    "first_seq_before": first,
                    "records_deleted": cut - first,
                    "events_deleted": events,
                    "snapshots_deleted": snapshots,
                    "last_event_id_pruned": last_event_id,
                    "alerts_carried": len(carried),
                    "retained_republished": [topic for topic, _env in retained],
                    "retained_unproven": unproven,
                    "archive_sha256": archive_sha,
                    "archive_name": archive_path.name[:200],
                    "archive_first_seq": arch.first_seq,
                    "archive_last_seq": arch.checkpoint_seq,
                },
            )
            # signed at once: a journal_pruned record no checkpoint signs is not a prune (verify.find_anchor), so one
            # appended by someone without the key after cutting the front of the journal does not pass
            cp = sign_checkpoint(
                signing_key,
                site=str(anchor_cp["site"]),
                table=str(anchor_cp["table"]),
                seq=journal.last_seq,
                hash=journal.last_hash,
                last_event_id=journal.last_event_id,
                prev_seq=int(prev_cp.get("seq", 0)),
                prev_hash=str(prev_cp.get("hash", "0" * 64)),
                ts=iso_ts(clock()),
                event_chain=journal.last_event_chain,
            )
            tx.append(CHECKPOINT_KIND, cp.to_dict())
            tx.publish(CHECKPOINT_TOPIC, CHECKPOINT_EVENT, cp.to_dict(), retain=True)
            tx.execute("DROP TRIGGER records_no_delete")
            tx.execute("DELETE FROM records WHERE seq < ?", (cut,))
            tx.execute(NO_DELETE_TRIGGER)
            tx.execute("DELETE FROM events WHERE seq < ?", (cut,))
            tx.execute("DELETE FROM snapshots WHERE seq < ?", (cut,))
        check = journal.verify()
        if not check.ok:  # cannot happen unless the code above is wrong: say so loudly
            raise PruneError(f"after the prune the journal does not verify: {check.reason}")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        journal.close()
    return Pruned(
        cut, first, cut - first, events, snapshots, len(carried), rec.seq, archive_sha, bytes_before,
        journal_bytes(db), lowered,
    )  # fmt: skip
