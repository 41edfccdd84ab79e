"""Snapshots restored only when the chain covers them: each snapshot's SHA-256 is in the ``snapshot`` record right
after its seq (written by ``Journal.save_snapshot``); one that does not match is never restored, an older one is
tried instead."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from controller.journal.records import (
    SNAPSHOT_KIND,
    JournalIntegrityError,
    chain_hash,
    record_at,
    text_digest,
)

SNAPSHOT_FALLBACKS = 8  # older snapshots tried when the newest is not covered by the chain


def chained_snapshot(
    conn: sqlite3.Connection, problems: list[JournalIntegrityError], *, before_seq: int | None = None
) -> tuple[int, dict[str, Any]] | None:
    """The newest snapshot whose digest is chained (seq, state); each newer one that is not is added to
    ``problems``. None: no such snapshot among the newest ``SNAPSHOT_FALLBACKS``. ``before_seq``: only a
    snapshot whose digest record comes before it (inside the verified part of the journal)."""
    rows = conn.execute(
        "SELECT seq, state FROM snapshots WHERE seq + 1 < ? ORDER BY seq DESC LIMIT ?",
        (before_seq if before_seq is not None else 2**62, SNAPSHOT_FALLBACKS),
    ).fetchall()
    for seq, text in rows:
        problem = snapshot_problem(conn, seq, text)
        if problem is None:
            return seq, json.loads(text)
        problems.append(problem)
    return None


def snapshot_problem(conn: sqlite3.Connection, seq: int, text: str) -> JournalIntegrityError | None:
    rec = record_at(conn, seq + 1)
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
