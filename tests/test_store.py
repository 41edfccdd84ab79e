"""The journal store: hash chain, atomic outbox, monotonic event ids, snapshots, durability across kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.journal import GENESIS_HASH, Journal, JournalError


def _tamper(path, sql: str, params=()) -> None:
    """Simulate someone editing the database behind the program's back (triggers removed first)."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER records_no_update")
    conn.execute("DROP TRIGGER records_no_delete")
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def _fill(j: Journal, n: int) -> None:
    """``n`` transactions of 2 records each: the card and the ``published`` record chaining its event."""
    for i in range(n):
        with j.transaction() as tx:
            tx.append("card", {"i": i, "code": "AS"})
            tx.publish("events/card", "card", {"i": i})


def test_chain_verifies_and_survives_reopen(tmp_path):
    db = tmp_path / "j.db"
    j = Journal(db, table_id="t1")
    _fill(j, 20)
    last = j.last_hash
    j.close()
    j2 = Journal(db, table_id="t1")
    assert j2.last_seq == 40 and j2.last_hash == last
    _fill(j2, 5)
    assert j2.verify().ok and j2.verify().records == 50


def test_modified_record_is_detected(tmp_path):
    db = tmp_path / "j.db"
    j = Journal(db)
    _fill(j, 10)
    j.close()
    _tamper(db, "UPDATE records SET data = ? WHERE seq = 4", (json.dumps({"i": 3, "code": "KS"}),))
    result = Journal(db).verify()
    assert not result.ok and result.first_bad_seq == 4 and "modified" in result.reason


def test_deleted_record_is_detected(tmp_path):
    db = tmp_path / "j.db"
    j = Journal(db)
    _fill(j, 10)
    j.close()
    _tamper(db, "DELETE FROM records WHERE seq = 7")
    result = Journal(db).verify()
    assert not result.ok and result.first_bad_seq == 7 and "missing" in result.reason


def test_records_are_append_only_for_the_program(tmp_path):
    j = Journal(tmp_path / "j.db")
    _fill(j, 1)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        j._conn.execute("UPDATE records SET kind = 'x'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        j._conn.execute("DELETE FROM records")


def test_failed_transaction_leaves_no_record_and_no_event(tmp_path):
    j = Journal(tmp_path / "j.db")
    _fill(j, 2)
    with pytest.raises(RuntimeError), j.transaction() as tx:
        tx.append("card", {"code": "2H"})
        tx.publish("events/card", "card", {"code": "2H"})
        raise RuntimeError("state machine refused")
    assert j.last_seq == 4 and j.outbox_size() == 2
    _fill(j, 1)  # the chain and the event ids carry on as if the failed transaction never happened
    assert j.verify().ok
    assert [r.event_id for r in j.outbox_pending()] == [1, 2, 3]


def test_event_ids_monotonic_after_ack_and_reopen(tmp_path):
    db = tmp_path / "j.db"
    j = Journal(db)
    _fill(j, 3)
    j.outbox_ack([1, 2, 3])
    assert j.outbox_size() == 0
    j.close()
    j = Journal(db)
    _fill(j, 1)
    (row,) = j.outbox_pending()
    assert row.event_id == 4 and json.loads(row.payload)["event_id"] == 4


def test_acknowledged_rows_leave_at_once_and_are_deleted_with_the_next_commit(tmp_path):
    db = tmp_path / "j.db"
    j = Journal(db)
    _fill(j, 3)
    j.outbox_ack([1, 2])
    assert j.outbox_size() == 1 and [r.event_id for r in j.outbox_pending()] == [3]  # never sent again
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 3  # the deletes wait for a commit
    _fill(j, 1)
    assert raw.execute("SELECT event_id FROM outbox ORDER BY event_id").fetchall() == [(3,), (4,)]
    j.outbox_ack([3])
    j.flush_acks()  # a quiet table: the publisher flushes on its own
    assert raw.execute("SELECT event_id FROM outbox").fetchall() == [(4,)]
    raw.close()


def test_acknowledgement_lost_in_a_crash_means_a_resend_not_a_loss(tmp_path):
    db = tmp_path / "j.db"
    j = Journal(db)
    _fill(j, 2)
    j.outbox_ack([1])
    j._conn.close()  # the process dies before the delete was written (no close(), no flush)
    j = Journal(db)
    assert [r.event_id for r in j.outbox_pending()] == [1, 2]  # sent again; consumers dedupe by event_id


def test_failed_commit_keeps_the_acknowledgements_for_the_next_one(tmp_path):
    j = Journal(tmp_path / "j.db")
    _fill(j, 2)
    j.outbox_ack([1])
    with pytest.raises(RuntimeError), j.transaction() as tx:
        tx.append("card", {"i": 9})
        raise RuntimeError("boom")
    assert [r.event_id for r in j.outbox_pending()] == [2]
    _fill(j, 1)
    assert j._conn.execute("SELECT event_id FROM outbox ORDER BY event_id").fetchall() == [(2,), (3,)]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    data=st.dictionaries(st.text(max_size=6), _json, max_size=4), table=st.text(max_size=8), kind=st.text()
)
def test_precomputed_document_text_gives_the_same_payload(tmp_path_factory, data, table, kind):
    """The core hands state documents over as canonical JSON text; the envelope must be byte-identical to
    the one built from the dict, or consumers and the hash-chained retained store would see two forms."""
    from controller.canonical import canonical

    j = Journal(tmp_path_factory.mktemp("j") / "j.db", table_id=table)
    j._clock = lambda: 1767225600.123
    with j.transaction() as tx:
        a = tx.publish("state/x", kind, data, retain=True)
        b = tx.publish("state/x", kind, {}, retain=True, data_text=canonical(data))
    # byte for byte canonical (the events' hash chain hashes these bytes); they differ only in id and chain
    assert a.payload == canonical(json.loads(a.payload)) and b.payload == canonical(json.loads(b.payload))
    same = {k: v for k, v in json.loads(a.payload).items() if k not in ("event_id", "prev", "chain")}
    assert same == {k: v for k, v in json.loads(b.payload).items() if k not in ("event_id", "prev", "chain")}
    assert json.loads(b.payload)["prev"] == json.loads(a.payload)["chain"]
    assert json.loads(b.payload)["data"] == data
    j.close()


def test_retained_state_keeps_latest_payload(tmp_path):
    j = Journal(tmp_path / "j.db", table_id="T7")
    with j.transaction() as tx:
        tx.publish("state/lid", "lid", {"state": "open"}, retain=True)
    with j.transaction() as tx:
        tx.publish("state/lid", "lid", {"state": "locked"}, retain=True)
    retained = j.retained_state()
    assert list(retained) == ["state/lid"]
    doc = json.loads(retained["state/lid"])
    assert doc["data"] == {"state": "locked"} and doc["table"] == "T7" and doc["event_id"] == 2


def test_snapshot_marks_position_in_chain(tmp_path):
    j = Journal(tmp_path / "j.db")
    assert j.latest_snapshot() is None
    _fill(j, 5)
    j.save_snapshot({"phase": "betting"})
    _fill(j, 3)
    seq, state = j.latest_snapshot()
    assert seq == 10 and state == {"phase": "betting"}
    # record 11 chains the snapshot's digest; then 3 transactions of 2 records
    assert [r.seq for r in j.records(after_seq=seq)] == [11, 12, 13, 14, 15, 16, 17]
    assert next(j.records(after_seq=seq)).kind == "snapshot"


def test_nested_transaction_refused(tmp_path):
    j = Journal(tmp_path / "j.db")
    with j.transaction(), pytest.raises(JournalError), j.transaction():
        pass


def test_commit_listener_runs_after_commit_only(tmp_path):
    j = Journal(tmp_path / "j.db")
    seen = []
    j.add_commit_listener(lambda tx: seen.append((len(tx.records), j.outbox_size())))
    _fill(j, 1)
    with pytest.raises(ValueError), j.transaction() as tx:
        tx.append("x", {})
        raise ValueError
    assert seen == [(2, 1)]  # the card and the ``published`` record


@settings(max_examples=40, deadline=None)
@given(seq=st.integers(1, 6), byte=st.integers(0, 255))
def test_any_change_to_any_record_breaks_the_chain(tmp_path_factory, seq, byte):
    db = tmp_path_factory.mktemp("j") / "j.db"
    j = Journal(db, clock=lambda: 1000.0)
    _fill(j, 6)
    j.close()
    conn = sqlite3.connect(db)
    (data,) = conn.execute("SELECT data FROM records WHERE seq = ?", (seq,)).fetchone()
    conn.close()
    changed = data[:-1] + chr(byte) if chr(byte) != data[-1] else data[:-1] + "!"
    _tamper(db, "UPDATE records SET data = ? WHERE seq = ?", (changed, seq))
    assert Journal(db).verify().first_bad_seq == seq


def test_committed_records_survive_kill_9(tmp_path):
    """A writer killed with SIGKILL mid-stream loses nothing it committed, and the chain stays valid."""
    db = tmp_path / "j.db"
    script = textwrap.dedent(
        f"""
        import sys
        from controller.journal import Journal
        j = Journal({str(db)!r})
        i = 0
        while True:
            with j.transaction() as tx:
                tx.append("card", {{"i": i}})
                tx.publish("events/card", "card", {{"i": i}})
            print(i, flush=True)
            i += 1
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    committed = -1
    for line in proc.stdout:
        committed = int(line)
        if committed >= 200:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    j = Journal(db)
    assert j.verify().ok
    assert j.last_seq >= committed + 1  # everything reported as committed is there
    ids = [r.event_id for r in j.outbox_pending(limit=10_000)]
    assert ids == list(range(1, len(ids) + 1)) and 2 * len(ids) == j.last_seq  # + one ``published`` each
    assert j.last_hash != GENESIS_HASH
