"""The broker's retained checkpoint anchors the journal (issue 13 §1; controller/mqtt/anchor.py): a journal cut
below it, or rewritten, is the integrity fault. Found by a 300-round soak (seed 21, fault rate 0.5): a service
that started on an empty journal, then saw the broker restart (its retained copy of the table's OWN newest
checkpoint delivered again), took that copy for a journal cut at start-up and raised the integrity fault."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from test_journal_prune import recorded_session

from controller.journal.store import Journal
from controller.mqtt.anchor import BrokerAnchor


def _checkpoints(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        q = "SELECT payload FROM events WHERE topic = 'audit/checkpoint' ORDER BY event_id"
        return [p for (p,) in conn.execute(q)]
    finally:
        conn.close()


async def test_the_tables_own_checkpoint_redelivered_after_a_broker_restart_is_no_cut(tmp_path: Path) -> None:
    db, _kf, key, _b = await recorded_session(tmp_path)
    payloads = _checkpoints(db)
    assert payloads
    journal = Journal(db)
    try:
        # the service started on an empty journal (head 0) and wrote every record and checkpoint since
        anchor = BrokerAnchor(journal, link=None, public_key=key, on_mismatch=lambda *_: None, start_head=0)  # type: ignore[arg-type]
        for payload in payloads:
            _seq, reason = anchor.check(payload.encode())
            assert reason is None, reason

        # a checkpoint of a record the journal does not have: cut (truncated)
        newest = json.loads(payloads[-1])
        beyond = json.loads(payloads[-1])
        beyond["data"]["seq"] = journal.last_seq + 50
        _seq, reason = anchor.check(json.dumps(beyond).encode())
        assert (
            reason is not None
        )  # the signature no longer matches the altered document, or the record is missing
        # the journal rewritten after start-up (a record the checkpoint names, with another hash): found
        forged = json.dumps(newest).replace(newest["data"]["hash"], "0" * 64)
        _seq, reason = anchor.check(forged.encode())
        assert reason is not None
    finally:
        journal.close()


async def test_a_journal_cut_below_the_brokers_checkpoint_is_still_found(tmp_path: Path) -> None:
    db, _kf, key, _b = await recorded_session(tmp_path)
    newest = _checkpoints(db)[-1]
    seq = json.loads(newest)["data"]["seq"]
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER records_no_delete")  # the insider's cut, service stopped: they own the file
    for table in ("events", "snapshots"):
        conn.execute(f"DELETE FROM {table} WHERE seq >= ?", (seq,))
    conn.execute("DELETE FROM records WHERE seq >= ?", (seq,))
    conn.commit()
    conn.close()
    journal = Journal(db)
    try:
        anchor = BrokerAnchor(journal, link=None, public_key=key, on_mismatch=lambda *_: None)  # type: ignore[arg-type]
        _seq, reason = anchor.check(newest.encode())
        assert reason is not None and f"record {seq} is missing" in reason and "truncated" in reason
    finally:
        journal.close()
