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


def append(cur: psycopg.Cursor, link: str, head: Head, kind: str, data: dict[str, Any]) -> Head:
    """Append one record after ``head`` (the caller holds the link's row lock); returns the new head."""
    seq = head.seq + 1
    digest = record_hash(head.hash, link, seq, kind, data)
    cur.execute(
        "INSERT INTO progressive_journal (link, seq, kind, data, prev_hash, hash) VALUES (%s, %s, %s, %s, %s, %s)",
        (link, seq, kind, Jsonb(data), head.hash, digest),
    )
    return Head(seq, digest)


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
