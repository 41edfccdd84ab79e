"""The link's journal (``progressive_journal``): every change and every refusal, appended only, hash-chained.

Each record's ``hash`` is the SHA-256 of the previous record's hash followed by the record's canonical JSON
(``{"data", "kind", "link", "seq"}``, controller/canonical.py), so an edited, removed or reordered record breaks
the chain (``verify``). The head (``journal_seq``, ``journal_hash``) lives in the link's row, written in the same
transaction as the record."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from controller.canonical import canonical

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class Head:
    seq: int
    hash: str


def record_hash(prev_hash: str, link: str, seq: int, kind: str, data: dict[str, Any]) -> str:
    body = canonical({"data": data, "kind": kind, "link": link, "seq": seq})
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


Row = tuple[str, int, str, Jsonb, str, str]
_INSERT = (
    "INSERT INTO progressive_journal (link, seq, kind, data, prev_hash, hash) VALUES (%s, %s, %s, %s, %s, %s)"
)


def chain(link: str, head: Head, kind: str, data: dict[str, Any]) -> tuple[Head, Row]:
    """The record after ``head`` and the new head (nothing written: ``insert`` writes the rows)."""
    seq = head.seq + 1
    digest = record_hash(head.hash, link, seq, kind, data)
    return Head(seq, digest), (link, seq, kind, Jsonb(data), head.hash, digest)


def insert(cur: psycopg.Cursor, rows: list[Row]) -> None:
    if rows:
        cur.executemany(_INSERT, rows)  # pipelined: one round trip for the batch


def append(cur: psycopg.Cursor, link: str, head: Head, kind: str, data: dict[str, Any]) -> Head:
    """Append one record after ``head`` (the caller holds the link's row lock); returns the new head."""
    new, row = chain(link, head, kind, data)
    cur.execute(_INSERT, row)
    return new


def verify(conn: psycopg.Connection, link: str) -> list[str]:
    """Breaks of the link's journal chain, one sentence each (empty: intact)."""
    problems: list[str] = []
    expected, prev = GENESIS, 0
    rows = conn.execute(
        "SELECT seq, kind, data, prev_hash, hash FROM progressive_journal WHERE link = %s ORDER BY seq",
        (link,),
    )
    for seq, kind, data, prev_hash, digest in rows:
        if seq != prev + 1:
            problems.append(f"record {prev + 1}: missing (next is {seq})")
        if prev_hash != expected or record_hash(prev_hash, link, seq, kind, data) != digest:
            problems.append(f"record {seq}: its hash does not follow the chain")
        expected, prev = digest, seq
    return problems
