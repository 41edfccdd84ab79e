"""Verification of the journal's chain: the walk from the genesis (or, after a prune, from its anchor), the
start-up walk from the last signed checkpoint, and the check against a checkpoint held outside the file.

Free functions over the journal's connection; ``Journal`` (controller/journal/store.py) calls them with its own
connection and keys. Signed checkpoints are controller/audit/checkpoint.py's, imported when a walk needs them.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from controller.journal.records import (
    CHECKPOINT_KIND,
    GENESIS_HASH,
    KIND_INDEXED,
    PRUNED_KIND,
    PUBLISHED_KIND,
    chain_hash,
    first_seq,
    record_at,
)


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    records: int  # records walked
    first_bad_seq: int | None = None
    reason: str = ""
    from_seq: int = 0  # the walk started after this record (0: from the genesis)


def verify_chain(conn: sqlite3.Connection, key: str | None) -> VerifyResult:
    """The whole chain from its anchor (``Journal.verify``); with ``key``, every checkpoint record on the way too."""
    anchor = find_anchor(conn, key)
    if isinstance(anchor, VerifyResult):
        return anchor
    a_seq, a_hash = anchor
    result = walk(conn, a_seq, a_hash, key=key)
    if a_seq == 0:
        return result
    return VerifyResult(
        result.ok, result.records + 1, result.first_bad_seq, result.reason, from_seq=a_seq - 1
    )


def find_anchor(conn: sqlite3.Connection, key: str | None) -> tuple[int, str] | VerifyResult:
    """Where the walk starts: (0, genesis) for a journal holding record 1; after a prune (controller/journal/
    prune.py) its first record, which must be a ``checkpoint`` record that the newest ``journal_pruned``
    record names as the anchor, intact, and (with ``key``) signed by the table with the head it names being
    its own ``prev_hash``. Returns (anchor seq, anchor hash), or the failure."""
    from controller.audit.checkpoint import CheckpointError, verify_checkpoint

    row = conn.execute(
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
    found = conn.execute(
        f"SELECT seq, data FROM records WHERE kind = ? AND {KIND_INDEXED} ORDER BY seq DESC LIMIT 1",
        (PRUNED_KIND,),
    ).fetchone()
    try:
        pruned = json.loads(found[1]) if found else None
    except ValueError:
        pruned = None
    if not isinstance(pruned, dict) or pruned.get("anchor_seq") != seq or pruned.get("anchor_hash") != h:
        return broken(f"{missing} and no journal_pruned record names record {seq} as the anchor")
    signed = record_at(conn, found[0] + 1)
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


def walk(
    conn: sqlite3.Connection,
    after_seq: int,
    prev: str,
    *,
    until_seq: int | None = None,
    key: str | None = None,
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
    for seq, ts, kind, data, prev_hash, h in conn.execute(sql + " ORDER BY seq", params):
        count += 1
        if seq != expected_seq:
            return VerifyResult(False, count, expected_seq, f"record {expected_seq} is missing", after_seq)
        if prev_hash != prev:
            return VerifyResult(
                False, count, seq, f"record {seq} does not chain to record {seq - 1}", after_seq
            )
        if chain_hash(prev, seq, ts, kind, data) != h:
            return VerifyResult(False, count, seq, f"record {seq} was modified (hash mismatch)", after_seq)
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


def trusted_until(conn: sqlite3.Connection, key: str | None) -> int:
    """The last record that verified data reaches: the newest checkpoint record signed by ``key`` before the
    first break of the chain walked from its anchor (every record up to it chains, every checkpoint record up
    to it is signed and signs its head). Without a key, the record before the first break. 0: none (nothing
    verified: the state starts empty). The whole journal when nothing is broken."""
    anchor = find_anchor(conn, key)
    if isinstance(anchor, VerifyResult):
        return 0
    a_seq, a_hash = anchor
    result = walk(conn, a_seq, a_hash, key=key)
    last = conn.execute("SELECT MAX(seq) FROM records").fetchone()[0] or 0
    bad = last + 1 if result.ok else (result.first_bad_seq or a_seq)
    if key is None:
        return max(0, bad - 1)
    row = conn.execute(
        f"SELECT MAX(seq) FROM records WHERE kind = ? AND {KIND_INDEXED} AND seq < ? AND seq >= ?",
        (CHECKPOINT_KIND, bad, a_seq),
    ).fetchone()
    return int(row[0] or 0) if not result.ok else last


def verify_chain_since_checkpoint(conn: sqlite3.Connection, key: str, last_seq: int) -> VerifyResult | None:
    """Start-up verification: only the records after the newest checkpoint record that the table's key signed
    and that precedes the newest snapshot (so the snapshot restored and every input replayed after it are
    inside the walk). None: no such checkpoint, the caller walks the whole chain (``verify_chain``).

    A checkpoint record not signed by the table's key, or whose signed head differs from the record it
    names, is a failure (a file-level attacker cannot sign)."""
    from controller.audit.checkpoint import CheckpointError, verify_checkpoint

    row = conn.execute("SELECT MAX(seq) FROM snapshots").fetchone()
    limit = row[0] + 1 if row and row[0] is not None else last_seq
    found = conn.execute(
        "SELECT seq, ts, kind, data, prev_hash, hash FROM records"
        f" WHERE kind = ? AND {KIND_INDEXED} AND seq <= ? ORDER BY seq DESC LIMIT 1",
        (CHECKPOINT_KIND, limit),
    ).fetchone()
    if found is None:
        return None
    c_seq, ts, kind, data, prev, h = found
    if c_seq <= first_seq(conn):  # the anchor of a pruned journal: nothing before it to compare with
        return verify_chain(conn, key)
    if chain_hash(prev, c_seq, ts, kind, data) != h:
        return VerifyResult(False, 0, c_seq, f"record {c_seq} (checkpoint) was modified (hash mismatch)")
    try:
        cp = verify_checkpoint(json.loads(data), key)
    except (CheckpointError, ValueError) as exc:
        return VerifyResult(False, 0, c_seq, f"record {c_seq}: {exc}")
    head = record_at(conn, cp.seq)
    if cp.seq != c_seq - 1 or head is None or head[5] != cp.hash or prev != cp.hash:
        return VerifyResult(
            False, 0, cp.seq, f"record {cp.seq} differs from the head signed in checkpoint record {c_seq}"
        )
    result = walk(conn, cp.seq, cp.hash, key=key)
    if result.ok and result.records == 0 and last_seq > cp.seq:
        return VerifyResult(False, 0, cp.seq + 1, f"record {cp.seq + 1} is missing", cp.seq)
    return result


def verify_chain_against_checkpoint(
    conn: sqlite3.Connection, checkpoint: dict[str, Any], public_key: str | None, table_id: str
) -> VerifyResult:
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
    if table_id and cp.table != table_id:
        return VerifyResult(False, 0, None, f"checkpoint is for table {cp.table}, not {table_id}")
    anchor = find_anchor(conn, cp.public_key)
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
        anchor_prev = record_at(conn, a_seq)[4]  # type: ignore[index]  # the anchor a_seq is a kept record
        if anchor_prev != cp.hash:
            return VerifyResult(
                False, 1, a_seq, f"record {a_seq} (the anchor) does not chain to checkpoint {cp.seq}"
            )
        return VerifyResult(True, 1, from_seq=a_seq - 1)
    result = walk(conn, a_seq, a_hash, until_seq=cp.seq, key=cp.public_key)
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
    head = record_at(conn, cp.seq)
    assert head is not None
    if head[5] != cp.hash:
        first = first_rewritten(conn, cp.seq, cp.public_key)
        return VerifyResult(
            False,
            result.records,
            first,
            f"record {cp.seq} differs from the signed checkpoint: the records up to it were rewritten"
            f" (hashes recomputed) from record {first} on",
        )
    return VerifyResult(True, result.records + (1 if a_seq else 0), from_seq=max(0, a_seq - 1))


def first_rewritten(conn: sqlite3.Connection, up_to: int, key: str) -> int:
    """Narrow a rewrite down with the signed checkpoint records inside the journal: the first record after
    the newest one whose signed head still matches (an attacker cannot sign a new one)."""
    from controller.audit.checkpoint import CheckpointError, verify_checkpoint

    good = 0
    for c_seq, data in conn.execute(
        f"SELECT seq, data FROM records WHERE kind = ? AND {KIND_INDEXED} AND seq <= ? ORDER BY seq",
        (CHECKPOINT_KIND, up_to),
    ):
        try:
            cp = verify_checkpoint(json.loads(data), key)
        except (CheckpointError, ValueError):
            break
        head = record_at(conn, cp.seq)
        head_hash = head[5] if head is not None else None
        if head is None and c_seq == first_seq(conn):  # the anchor of a pruned journal
            head_hash = record_at(conn, c_seq)[4]  # type: ignore[index]  # c_seq is first_seq: kept
        if head_hash != cp.hash:
            break
        good = c_seq
    return good + 1


def kept_event_is_chained(conn: sqlite3.Connection, event_id: int, digest: str) -> bool:
    """The kept row ``event_id`` (table ``events``) names an intact ``published`` record that holds ``digest``
    (``event_digest`` of the row) for it (``Journal.is_chained``, for a row this process did not commit)."""
    row = conn.execute("SELECT seq FROM events WHERE event_id = ?", (event_id,)).fetchone()
    return row is not None and published_holds(conn, row[0], event_id, digest)


def published_holds(conn: sqlite3.Connection, seq: int, event_id: int, digest: str) -> bool:
    """Record ``seq`` is an intact ``published`` record holding ``digest`` for event ``event_id``."""
    rec = record_at(conn, seq)
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
