"""The journal's hash chain: its record kinds, the row types read back, the digests, and reading one record.

Each record's ``hash = sha256(prev_hash | seq | ts | kind | data)`` (``chain_hash``), starting from
``GENESIS_HASH``; each outbox row's digest (``event_digest``) is chained in a ``published`` record."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

GENESIS_HASH = "0" * 64

PUBLISHED_KIND = "published"  # the record chaining the digests of one transaction's outbox rows
SNAPSHOT_KIND = "snapshot"  # the record chaining a snapshot's digest
CHECKPOINT_KIND = "checkpoint"  # a signed checkpoint (controller/audit/checkpoint.py) of the head before it
PRUNED_KIND = "journal_pruned"  # records before ``anchor_seq`` were deleted (controller/ops/prune.py)

# The kinds every card's commit writes (its input, the card: controller/table/record_kinds.py, and the published
# digests) are left out of the kind index: a leaf of it each cost that commit a page of the log (issue 44). They
# are read by seq (after a snapshot, or the newest). SQLite uses a partial index only for a query that repeats its
# condition: a query for other kinds adds ``KIND_INDEXED`` (``kind_in`` does).
UNINDEXED_KINDS = frozenset({"input", "card", PUBLISHED_KIND})
KIND_INDEXED = "kind NOT IN ('input', 'card', 'published')"


def kind_in(kinds: tuple[str, ...]) -> str:
    """The condition "kind is one of ``kinds``" (a ``?`` for each), with ``KIND_INDEXED`` when the index has them."""
    marks = ",".join("?" * len(kinds))
    return f"kind IN ({marks})" + ("" if UNINDEXED_KINDS & set(kinds) else f" AND {KIND_INDEXED}")


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


def event_digest(topic: str, payload: str, qos: int, retain: bool) -> str:
    """What the chain records of one outbox row: the topic, QoS, retain flag and exact payload text."""
    # one text, encoded and hashed in one call: the same bytes as the header and the payload hashed in turn
    return hashlib.sha256(f"{topic}\n{int(qos)}\n{int(bool(retain))}\n{payload}".encode()).hexdigest()


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def chain_hash(prev_hash: str, seq: int, ts: float, kind: str, data_text: str) -> str:
    # one text, encoded and hashed in one call (a card's commit hashes three): the same bytes as in turn
    return hashlib.sha256(f"{prev_hash}|{seq}|{ts!r}|{kind}|{data_text}".encode()).hexdigest()


# A record as stored: (seq, ts, kind, data text, prev_hash, hash).
RawRecord = tuple[int, float, str, str, str, str]


def record_at(conn: sqlite3.Connection, seq: int) -> RawRecord | None:
    row: RawRecord | None = conn.execute(
        "SELECT seq, ts, kind, data, prev_hash, hash FROM records WHERE seq = ?", (seq,)
    ).fetchone()
    return row


def first_seq(conn: sqlite3.Connection) -> int:
    """The first record kept: 1, or the anchor after a prune (0: no record)."""
    row = conn.execute("SELECT MIN(seq) FROM records").fetchone()
    return row[0] or 0


def read_records(conn: sqlite3.Connection, after_seq: int, kinds: tuple[str, ...] | None) -> Iterator[Record]:
    """The records after ``after_seq`` (of ``kinds`` only, if given), in seq order, data decoded."""
    sql = "SELECT seq, ts, kind, data, prev_hash, hash FROM records WHERE seq > ?"
    params: list[Any] = [after_seq]
    if kinds:
        sql += f" AND {kind_in(kinds)}"
        params.extend(kinds)
    sql += " ORDER BY seq"
    for seq, ts, kind, data, prev, h in conn.execute(sql, params):
        yield Record(seq, ts, kind, json.loads(data), prev, h)
