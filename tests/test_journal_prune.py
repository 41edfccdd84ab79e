"""`tablectl journal prune` (issue 16): records an archive holds are deleted up to a signed checkpoint; the journal
then verifies from that anchor, a controller starts on it and keeps appending; every refusal leaves it untouched.

Real journal files written by a real TableController with the Checkpointer (the helpers of
test_journal_checkpoint); the attacks are made with sqlite3 on the files, as a file-level attacker would."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from test_journal_checkpoint import Table, attacker, recompute_chain, tablectl

from controller.audit.keys import load_key
from controller.journal.store import Journal, chain_hash
from controller.mqtt.alerts import AlertManager
from controller.mqtt.anchor import BrokerAnchor
from controller.mqtt.auth import ACCEPTED_RECORD
from controller.mqtt.link import InboundMessage
from controller.mqtt.replay import ReplayServer
from controller.mqtt.schemas import check
from controller.ops.prune import PruneError, prune
from controller.ops.status import Status, human, prometheus
from controller.topics import Topics
from drivers import events as ev

DAY = 86400.0
PAST = 40 * DAY  # the session is played this long ago: outside the 30-day replay retention


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ack_outbox(journal: Journal) -> None:
    """The broker acknowledged every event (PUBACK): nothing waits in the outbox."""
    journal.outbox_ack([r.event_id for r in journal.outbox_pending(limit=1_000_000)])
    journal.flush_acks()


async def recorded_session(
    tmp_path: Path,
    rounds: int = 6,
    *,
    past: float = PAST,
    ack: bool = True,
    snapshot_every: int = 10,
    command_now: bool = False,
    stopped: bool = True,
):
    """A session played ``past`` seconds ago: rounds each ended by a checkpoint, a snapshot every 10 inputs, one
    alert acknowledged and one still open. ``command_now``: a command accepted just now, after the first round.
    ``stopped``: the table stopped in order (its stop saves a snapshot), else it was killed.
    Returns (db, key file, public key, the alert book)."""
    db, key_file = tmp_path / "journal.db", tmp_path / "audit_key.pem"
    t = Table(db, key_file, snapshot_every=snapshot_every)
    t.journal._clock = lambda: time.time() - past
    alerts = AlertManager(t.journal, clock=t.journal._clock)
    await t.start()
    await t.open()
    done = alerts.raise_alert("jam", "warning", "jam at the exit")
    alerts.acknowledge(done.alert_id, "ana")
    alerts.raise_alert("forced_lid", "critical", "lid forced while locked")  # still open
    for n in range(rounds):
        await t.round(n)
        await t.checkpoints_at_least(n + 1)
        if command_now and n == 0:
            clock, t.journal._clock = t.journal._clock, time.time
            with t.journal.transaction() as tx:  # as controller/mqtt/auth.py records an accepted command
                tx.append(ACCEPTED_RECORD, {"user": "ana", "role": "supervisor", "action": "open_table",
                                            "nonce": "n" * 32, "ts": int(time.time()), "request_id": "r1"})  # fmt: skip
            t.journal._clock = clock
    if ack:
        ack_outbox(t.journal)
    book = alerts.book
    if stopped:
        await t.tc.stop()
    t.journal.close()
    return db, key_file, t.public_key, book


def make_archive(db: Path, to: Path, key: str) -> Path:
    run = tablectl("journal", "archive", "--db", str(db), "--to", str(to), "--public-key", key)
    assert run.returncode == 0, run.stderr
    return to


def raise_bet(conn: sqlite3.Connection, seq: int) -> None:
    """The attacker's edit: the bet in record ``seq`` raised by 1000.00."""
    doc = json.loads(conn.execute("SELECT data FROM records WHERE seq = ?", (seq,)).fetchone()[0])
    doc["amount"] = doc.get("amount", 0) + 100_000
    conn.execute("UPDATE records SET data = ? WHERE seq = ?", (json.dumps(doc), seq))
    conn.commit()


def records(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT * FROM records ORDER BY seq").fetchall()
    finally:
        conn.close()


async def test_prune_after_a_recorded_session_then_verify_restart_and_append(tmp_path: Path) -> None:
    db, key_file, key, book_before = await recorded_session(tmp_path)
    before = records(db)
    conn = sqlite3.connect(db)
    saved = [json.loads(p) for (p,) in conn.execute(
        "SELECT payload FROM events WHERE topic = 'audit/checkpoint' ORDER BY event_id")]  # fmt: skip
    conn.close()
    arch = make_archive(db, tmp_path / "archive.db", key)
    unpruned = tmp_path / "unpruned.db"
    shutil.copy(db, unpruned)

    run = tablectl("journal", "prune", "--db", str(db), "--archive", str(arch), "--public-key", key,
                   "--by", "ana (supervisor)", "--key-file", str(key_file))  # fmt: skip
    assert run.returncode == 0, run.stderr
    print(run.stdout)  # the size figure: "journal N -> M bytes"
    m = re.search(
        r"records 1 to (\d+) deleted.*checkpoint record (\d+).*journal (\d+) -> (\d+) bytes", run.stdout
    )
    assert m, run.stdout
    anchor, size_before, size_after = int(m[2]), int(m[3]), int(m[4])
    assert int(m[1]) == anchor - 1 and size_after < size_before

    after = records(db)
    assert after[0][0] == anchor and after[0][2] == "checkpoint"
    assert after[: len(before) - anchor + 1] == before[anchor - 1 :]  # the kept records are untouched
    pruned = [json.loads(r[3]) for r in after if r[2] == "journal_pruned"]
    assert len(pruned) == 1
    assert pruned[0]["anchor_seq"] == anchor and pruned[0]["by"] == "ana (supervisor)"
    # the archive checked again later (an auditor): reading it changes nothing, its SHA-256 stays the recorded one
    assert tablectl("journal", "verify", "--db", str(arch), "--public-key", key).returncode == 0
    assert pruned[0]["archive_sha256"] == file_digest(arch) and pruned[0]["records_deleted"] == anchor - 1

    # every retained state document is still proven by the chain (those chained by deleted records published again)
    assert pruned[0]["retained_republished"] and pruned[0]["retained_unproven"] == []
    j = Journal(db)
    try:
        for topic, payload in j.retained_state().items():
            assert j.is_chained(json.loads(payload)["event_id"], topic, payload, 1, True), topic
    finally:
        j.close()

    # verify: from the anchor, with and without the key
    plain = tablectl("journal", "verify", "--db", str(db))
    assert plain.returncode == 0 and f"{len(after)} records, hash chain intact" in plain.stdout, plain
    assert f"from its anchor, checkpoint record {anchor}" in plain.stdout
    assert "anchor's signature was not checked" in plain.stderr

    # against checkpoints saved from audit/checkpoint: one from before the anchor is for the archive, the one the
    # anchor carries and a later one verify
    by_seq = {cp["data"]["seq"]: cp for cp in saved}
    for seq, want in ((min(by_seq), "predates the journal's anchor"), (anchor - 1, "match the signed head"),
                      (max(by_seq), "match the signed head")):  # fmt: skip
        cp_file = tmp_path / f"cp-{seq}.json"
        cp_file.write_text(json.dumps(by_seq[seq]))
        run = tablectl(
            "journal", "verify", "--db", str(db), "--checkpoint", str(cp_file), "--public-key", key
        )
        assert want in run.stdout + run.stderr and run.returncode == (1 if "predates" in want else 0), run
    keyed = tablectl("journal", "verify", "--db", str(db), "--public-key", key)
    assert keyed.returncode == 0 and "signed by the given public key" in keyed.stdout, keyed
    assert Journal.verify_file(db, key).ok

    # start-up: the checks, the state recovered (snapshot + inputs) as from the whole journal, the alert book
    # carried (the open alert and the next id)
    control = Table(unpruned, key_file, snapshot_every=10)
    control.tc.recover()
    t = Table(db, key_file, snapshot_every=10)
    assert t.journal.verify_since_checkpoint().ok
    alerts = AlertManager(t.journal)
    assert alerts.book == book_before
    assert [a.kind for a in alerts.book.open] == ["forced_lid"]
    t.tc.recover()
    assert t.tc.core.snapshot() == control.tc.core.snapshot()
    assert t.tc.replayed < 20  # from the snapshot, not from the first record
    assert t.tc.recovery_problems == [] and t.journal.integrity_problems == []
    control.journal.close()
    # keeps appending: inputs, a signed checkpoint; the next alert gets a new id
    await t.start()
    await t.dev(ev.LidChanged(ev.LidState.OPEN))
    await t.dev(ev.LidChanged(ev.LidState.CLOSED))
    assert t.cp.write() is not None  # signs the new head (the prune record and what followed)
    new = alerts.raise_alert("jam", "warning", "another jam")
    assert new.alert_id == book_before.next_id
    ack_outbox(t.journal)
    t.journal.save_snapshot(t.tc.core.snapshot())  # as the controller does every snapshot_every inputs
    await t.tc.stop()
    t.journal.close()
    assert tablectl("journal", "verify", "--db", str(db), "--public-key", key).returncode == 0

    # the next archive starts at the anchor and a second prune follows on
    arch2 = make_archive(db, tmp_path / "archive-2.db", key)
    second = prune(db, arch2, key, load_key(key_file), by="bo", clock=lambda: time.time() + 60 * DAY)
    assert second.first_seq_before == anchor and second.anchor_seq > anchor
    assert tablectl("journal", "verify", "--db", str(db), "--public-key", key).returncode == 0


def untouched(db: Path):
    """The file's records, events and snapshots, to compare after a refusal."""
    conn = sqlite3.connect(db)
    try:
        return [conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("records", "events", "snapshots")]
    finally:
        conn.close()


async def test_forged_or_foreign_archives_are_refused_and_the_journal_is_untouched(tmp_path: Path) -> None:
    db, kf, key, _book = await recorded_session(tmp_path / "a")
    arch = make_archive(db, tmp_path / "archive.db", key)
    state = untouched(db)

    def refused(archive_file: Path, *extra: str, key: str = key, key_file: Path = kf) -> str:
        run = tablectl("journal", "prune", "--db", str(db), "--archive", str(archive_file), "--public-key", key,
                       "--key-file", str(key_file), "--by", "mallory", *extra)  # fmt: skip
        assert run.returncode == 1, run
        assert len(run.stderr.splitlines()) == 1 and "Traceback" not in run.stderr
        assert untouched(db) == state
        return run.stderr

    # a bet changed in the archive, its chain recomputed: the signed checkpoints inside do not match it
    forged = tmp_path / "forged.db"
    shutil.copy(arch, forged)
    conn = attacker(forged)
    seq = conn.execute("SELECT seq FROM records WHERE kind = 'bet_placed' ORDER BY seq LIMIT 1").fetchone()[0]
    raise_bet(conn, seq)
    recompute_chain(conn, seq)
    conn.close()
    assert "archive refused" in refused(forged) and "BROKEN at record" in refused(forged)

    # the archive's last records cut off: it no longer ends in a signed checkpoint
    short = tmp_path / "short.db"
    shutil.copy(arch, short)
    conn = attacker(short)
    conn.execute("DELETE FROM records WHERE seq = (SELECT MAX(seq) FROM records)")
    conn.commit()
    conn.close()
    assert "does not end in a signed checkpoint" in refused(short)

    # another table's archive (its own key), and one checked against our key
    other_db, other_kf, other_key, _b2 = await recorded_session(tmp_path / "b")
    other = make_archive(other_db, tmp_path / "other.db", other_key)
    assert "not by the table's key" in refused(other)
    assert "another table" in refused(other, key=other_key, key_file=other_kf)
    # the table's public key with another key file: the prune could not be signed by the table
    assert "not the table's audit key" in refused(arch, key_file=other_kf)

    # up to a record past the newest checkpoint (the head), or not a checkpoint record
    head = state[0][-1][0]
    assert "is not a signed checkpoint record" in refused(arch, "--up-to", str(head))
    assert "is not a signed checkpoint record" in refused(arch, "--up-to", "3")

    # usage errors: exit 2, one line
    for args, want in ((["--archive", str(tmp_path / "none.db")], "no such file"),
                       (["--archive", str(arch), "--event-retention-days", "0"], "1 to 3650")):  # fmt: skip
        run = tablectl("journal", "prune", "--db", str(db), "--public-key", key, "--key-file", str(kf),
                       "--by", "ana", *args)  # fmt: skip
        assert run.returncode == 2 and want in run.stderr and len(run.stderr.splitlines()) == 1, run
    assert untouched(db) == state

    # and the archive used honestly still works on the untouched journal
    assert prune(db, arch, key, load_key(kf), by="ana").anchor_seq > 1


async def test_what_the_table_still_needs_is_never_pruned(tmp_path: Path) -> None:
    # a session of today: its events are inside the replay retention, its commands... refused with the reason
    db, kf, key, _b = await recorded_session(tmp_path / "today", past=0)
    arch = make_archive(db, tmp_path / "today.db", key)
    state = untouched(db)
    with pytest.raises(PruneError, match="replay retention"):
        prune(db, arch, key, load_key(kf), by="ana")
    assert untouched(db) == state
    # forty days later it may go
    assert prune(db, arch, key, load_key(kf), by="ana", clock=lambda: time.time() + PAST).anchor_seq > 1

    # outbox rows the broker never acknowledged
    db, kf, key, _b = await recorded_session(tmp_path / "unacked", ack=False)
    arch = make_archive(db, tmp_path / "unacked.db", key)
    state = untouched(db)
    with pytest.raises(PruneError, match="outbox row"):
        prune(db, arch, key, load_key(kf), by="ana")
    assert untouched(db) == state

    # a command accepted minutes ago (its nonce and request id are still checked against the journal)
    db, kf, key, _b = await recorded_session(tmp_path / "command", command_now=True)
    arch = make_archive(db, tmp_path / "command.db", key)
    state = untouched(db)
    conn = sqlite3.connect(db)
    command = conn.execute("SELECT seq FROM records WHERE kind = ?", (ACCEPTED_RECORD,)).fetchone()[0]
    newest = conn.execute("SELECT MAX(seq) FROM records WHERE kind = 'checkpoint'").fetchone()[0]
    conn.close()
    with pytest.raises(PruneError, match=f"cannot cut at record {newest}: command records of the last"):
        prune(db, arch, key, load_key(kf), by="ana", up_to=newest)
    assert untouched(db) == state
    done = prune(db, arch, key, load_key(kf), by="ana")  # without --up-to: the newest cut before it
    assert 1 < done.anchor_seq <= command and "command records" in done.lowered_by

    # no snapshot yet (killed before its first, never stopped in order): start-up would replay every input
    db, kf, key, _b = await recorded_session(tmp_path / "nosnap", snapshot_every=100_000, stopped=False)
    arch = make_archive(db, tmp_path / "nosnap.db", key)
    state = untouched(db)
    with pytest.raises(PruneError, match="no chained snapshot"):
        prune(db, arch, key, load_key(kf), by="ana")
    assert untouched(db) == state

    # the service running (the journal open in another connection): refused at once
    db, kf, key, _b = await recorded_session(tmp_path / "running")
    arch = make_archive(db, tmp_path / "running.db", key)
    state = untouched(db)
    service = Journal(db)
    try:
        run = tablectl("journal", "prune", "--db", str(db), "--archive", str(arch), "--public-key", key,
                       "--by", "ana", "--key-file", str(kf))  # fmt: skip
        assert run.returncode == 1 and "open in another process" in run.stderr, run
        with pytest.raises(PruneError, match="open in another process"):
            prune(db, arch, key, load_key(kf), by="ana")
    finally:
        service.close()
    assert untouched(db) == state


async def test_the_cut_stays_at_or_before_the_newest_snapshot(tmp_path: Path) -> None:
    db, kf, key, _b = await recorded_session(tmp_path)
    conn = sqlite3.connect(db)
    snap = conn.execute("SELECT MAX(seq) FROM snapshots").fetchone()[0]
    newest_cp = conn.execute("SELECT MAX(seq) FROM records WHERE kind = 'checkpoint'").fetchone()[0]
    conn.close()
    arch = make_archive(db, tmp_path / "archive.db", key)
    done = prune(db, arch, key, load_key(kf), by="ana")
    assert done.anchor_seq <= snap
    if done.anchor_seq < newest_cp:
        assert "snapshot" in done.lowered_by
    j = Journal(db)
    try:
        latest = j.latest_snapshot()
        assert latest is not None and latest[0] >= done.anchor_seq
    finally:
        j.close()


async def test_tampering_after_a_prune_is_still_found(tmp_path: Path) -> None:
    db, kf, key, _b = await recorded_session(tmp_path)
    arch = make_archive(db, tmp_path / "archive.db", key)
    early = [r[0] for r in records(db) if r[2] == "checkpoint"][1]  # rounds with bets stay after the cut
    done = prune(db, arch, key, load_key(kf), by="ana", up_to=early)
    clean = tmp_path / "clean.db"
    shutil.copy(db, clean)

    # a kept bet rewritten, the chain recomputed: the signed checkpoint records after it catch it
    conn = attacker(db)
    seq = conn.execute(
        "SELECT seq FROM records WHERE kind = 'bet_placed' AND seq > ? ORDER BY seq LIMIT 1",
        (done.anchor_seq,),
    ).fetchone()[0]
    raise_bet(conn, seq)
    conn.close()
    bad = tablectl("journal", "verify", "--db", str(db))
    assert bad.returncode == 1 and f"BROKEN at record {seq}" in bad.stderr, bad
    conn = attacker(db)
    recompute_chain(conn, seq)
    conn.close()
    keyed = tablectl("journal", "verify", "--db", str(db), "--public-key", key)
    assert keyed.returncode == 1 and "BROKEN at record" in keyed.stderr, keyed
    assert not Journal.verify_file(db, key).ok

    # more deleted at the front than the prune recorded: the anchor is gone
    shutil.copy(clean, db)
    conn = attacker(db)
    conn.execute("DELETE FROM records WHERE seq <= ?", (done.anchor_seq,))
    conn.commit()
    conn.close()
    bad = tablectl("journal", "verify", "--db", str(db), "--public-key", key)
    assert bad.returncode == 1 and "are missing" in bad.stderr, bad

    # a whole journal cut at a checkpoint with no prune recorded (records deleted behind the table's back)
    fresh = tmp_path / "fresh"
    db2, _kf2, key2, _b = await recorded_session(fresh)
    conn = attacker(db2)
    cut = conn.execute("SELECT MAX(seq) FROM records WHERE kind = 'checkpoint'").fetchone()[0]
    conn.execute("DELETE FROM records WHERE seq < ?", (cut,))
    conn.commit()
    conn.close()
    bad = tablectl("journal", "verify", "--db", str(db2), "--public-key", key2)
    assert bad.returncode == 1 and "no journal_pruned record names" in bad.stderr, bad

    # ... and a journal_pruned record forged after it, naming that anchor: without the table's key it is not signed
    conn = attacker(db2)
    anchor_hash = conn.execute("SELECT hash FROM records WHERE seq = ?", (cut,)).fetchone()[0]
    head_seq, head_hash = conn.execute("SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
    data = json.dumps({"anchor_seq": cut, "anchor_hash": anchor_hash, "by": "mallory"})
    ts = time.time()
    conn.execute(
        "INSERT INTO records VALUES (?,?,?,?,?,?)",
        (head_seq + 1, ts, "journal_pruned", data, head_hash,
         chain_hash(head_hash, head_seq + 1, ts, "journal_pruned", data)),
    )  # fmt: skip
    conn.commit()
    conn.close()
    assert tablectl("journal", "verify", "--db", str(db2)).returncode == 0  # the plain chain is fooled
    bad = tablectl("journal", "verify", "--db", str(db2), "--public-key", key2)
    assert bad.returncode == 1 and "is not signed" in bad.stderr, bad


async def test_the_brokers_checkpoint_from_before_the_prune_is_not_a_mismatch(tmp_path: Path) -> None:
    db, kf, key, _b = await recorded_session(tmp_path)
    conn = sqlite3.connect(db)
    payloads = [
        p
        for (p,) in conn.execute(
            "SELECT payload FROM events WHERE topic = 'audit/checkpoint' ORDER BY event_id"
        )
    ]
    conn.close()
    arch = make_archive(db, tmp_path / "archive.db", key)
    done = prune(db, arch, key, load_key(kf), by="ana")
    journal = Journal(db)
    try:
        anchor = BrokerAnchor(journal, link=None, public_key=key, on_mismatch=lambda *_: None)  # type: ignore[arg-type]
        for payload in payloads:
            cp = json.loads(payload)["data"]
            _seq, reason = anchor.check(payload.encode())
            assert reason is None, (cp["seq"], done.anchor_seq, reason)
        # a checkpoint naming a head the journal does not have is still a mismatch
        last = json.loads(payloads[-1])
        _seq, reason = anchor.check(json.dumps(last).replace(last["data"]["hash"], "f" * 64).encode())
        assert reason is not None
    finally:
        journal.close()


class AnswerLink:
    """What ReplayServer.serve needs of the MQTT link: the table's topics and a publish that keeps the answers."""

    def __init__(self) -> None:
        self.topics = Topics("S1", "T1")
        self.sent: list[tuple[str, str]] = []

    def publish(self, topic: str, payload: str, **_kw: object) -> int:
        self.sent.append((topic, payload))
        return len(self.sent)


async def test_replay_of_a_pruned_range_answers_pruned_see_archive(tmp_path: Path) -> None:
    db, kf, key, _b = await recorded_session(tmp_path)
    arch = make_archive(db, tmp_path / "archive.db", key)
    prune(db, arch, key, load_key(kf), by="ana")
    journal = Journal(db)
    try:
        pruned_to = journal.last_prune()["last_event_id_pruned"]
        kept = journal.kept_events(pruned_to + 1, journal.last_event_id)
        assert pruned_to > 10 and kept and kept[0].event_id == pruned_to + 1
        link = AnswerLink()
        server = ReplayServer(journal, link, retention_days=30)  # type: ignore[arg-type]
        answer_topic = link.topics.abs("cmd/replay/response/monitor")
        forged: list[int] = []
        server.on_forged = lambda event_id, _reason: forged.append(event_id)
        request = {"request_id": "r1", "from_event_id": pruned_to - 5, "to_event_id": pruned_to + 2}
        msg = InboundMessage("x", "cmd/replay", json.dumps(request).encode(), False, answer_topic)
        await server.serve(msg, "monitor", answer_topic)
        *events, (_t, closing_text) = link.sent
        closing = json.loads(closing_text)
        check("cmd_replay_response.schema.json", closing, "closing")
        assert closing["ok"] and closing["missing"] == list(range(pruned_to - 5, pruned_to + 1))
        assert closing["pruned"]["up_to_event_id"] == pruned_to and "archive" in closing["pruned"]["see"]
        assert [json.loads(p)["event_id"] for _t, p in events] == [pruned_to + 1, pruned_to + 2]
        assert forged == []  # nothing pruned is taken for a forged row

        # a range after the prune: no "pruned" note
        link.sent.clear()
        request = {"request_id": "r2", "from_event_id": pruned_to + 1, "to_event_id": pruned_to + 3}
        msg = InboundMessage("x", "cmd/replay", json.dumps(request).encode(), False, answer_topic)
        await server.serve(msg, "monitor", answer_topic)
        closing = json.loads(link.sent[-1][1])
        assert closing["ok"] and closing["missing"] == [] and "pruned" not in closing
    finally:
        journal.close()


def test_status_shows_where_a_pruned_journal_starts() -> None:
    status = Status(site="S1", table="T1", version="x", pid=1, started_at=0.0, written_at=10.0, text="ok",
                    shoe_link_up=True, broker_connected=True, journal_bytes=77824, journal_records=400,
                    last_checkpoint_seq=390, last_checkpoint_ts=None, outbox_depth=0,
                    journal_first_seq=232)  # fmt: skip
    assert "records 232 to 400 (169; pruned before 232, see the archive), 77824 bytes" in human(status, 10.0)
    assert 'tablectl_journal_first_seq{site="S1",table="T1"} 232' in prometheus(status, 10.0)
    assert Status.from_json(status.to_json()) == status
    unpruned = Status.from_json(json.dumps({k: v for k, v in json.loads(status.to_json()).items()
                                            if k != "journal_first_seq"}))  # fmt: skip
    assert "journal: 400 records, 77824 bytes" in human(unpruned, 10.0)  # a document from before this field


def test_kept_events_of_the_current_retained_documents_outlive_the_replay_retention(tmp_path: Path) -> None:
    """``is_chained`` proves a retained document through its kept row before the publisher republishes it: the
    hourly prune of kept events must not remove that row, however old (a quiet topic keeps its document)."""
    now = [1_000_000.0]
    journal = Journal(tmp_path / "j.db", table_id="T1", clock=lambda: now[0])
    try:
        with journal.transaction() as tx:
            quiet = tx.publish("state/jam", "jam", {"jammed": False}, retain=True)
            old = tx.publish("events/card", "card", {"n": 1})
        journal.outbox_ack([quiet.event_id, old.event_id])
        now[0] += 40 * DAY
        assert journal.prune_events(now[0] - 30 * DAY) == 1
        assert journal.kept_events(old.event_id, old.event_id) == []
        payload = journal.retained_state()["state/jam"]
        assert journal.is_chained(quiet.event_id, "state/jam", payload, 1, True)
    finally:
        journal.close()


def test_the_prune_of_kept_events_without_a_time_index_keeps_every_event_inside_the_retention(
    tmp_path: Path,
) -> None:
    """The kept events have no index on ``ts`` (it cost every card commit a page, issue 44): the prune bisects
    ``event_id`` for its bound. Events older than the retention go; none younger does, even after the clock stepped
    back (an older one after the step may only be kept longer)."""
    now = [1_000_000.0]
    journal = Journal(tmp_path / "j.db", table_id="T1", clock=lambda: now[0])
    try:
        ids: list[tuple[int, float]] = []
        for step in (
            *[DAY] * 10,
            -3 * DAY,
            *[DAY] * 5,
        ):  # one day between commits, then the clock back 3 days
            now[0] += step
            with journal.transaction() as tx:
                ids.append((tx.publish("events/card", "card", {"n": len(ids)}).event_id, now[0]))
        journal.outbox_ack([e for e, _ in ids])
        assert journal._conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events'"
        ).fetchone() == (0,)
        cutoff = ids[7][1]  # before the step: events 0..6 are older
        gone = journal.prune_events(cutoff)
        kept = {e for e, _ in ids if journal.kept_events(e, e)}
        assert gone == 7
        assert kept == {e for e, _ in ids[7:]}
        # after the step, events 10..12 carry times before event 9's: with the cutoff at event 9, whatever goes is
        # older than the cutoff, every event at or after it stays, and everything before event 9 goes
        cutoff = ids[9][1]
        before = kept
        gone = journal.prune_events(cutoff)
        kept = {e for e, _ in ids if journal.kept_events(e, e)}
        assert gone == len(before - kept) > 0
        assert all(ts < cutoff for e, ts in ids if e in before - kept)
        assert not {e for e, _ in ids[:9]} & kept
        assert {e for e, ts in ids if ts >= cutoff} <= kept
    finally:
        journal.close()


async def test_an_archive_of_a_pruned_journal_must_reach_the_prunes_signed_record(tmp_path: Path) -> None:
    """After a prune the journal starts at its anchor, proven by the journal_pruned record and the checkpoint
    signing it. An archive asked to end before them (--before) is refused up front with what to ask instead,
    never written and then found broken by its own check; asked for that point, it verifies."""
    db, key_file, key, _book = await recorded_session(tmp_path)
    arch = make_archive(db, tmp_path / "archive.db", key)
    early = [r[0] for r in records(db) if r[2] == "checkpoint"][1]  # cut early: checkpoints stay after it
    run = tablectl("journal", "prune", "--db", str(db), "--archive", str(arch), "--public-key", key,
                   "--by", "ana (supervisor)", "--key-file", str(key_file), "--up-to", str(early))  # fmt: skip
    assert run.returncode == 0, run.stderr
    after = records(db)
    anchor = after[0][0]
    pruned_seq = next(r[0] for r in after if r[2] == "journal_pruned")
    between = [r[0] for r in after if r[2] == "checkpoint" and anchor < r[0] < pruned_seq]
    assert between, "the session's checkpoints after the anchor"
    refused = tablectl("journal", "archive", "--db", str(db), "--to", str(tmp_path / "early.db"),
                       "--public-key", key, "--before", str(between[-1]))  # fmt: skip
    assert refused.returncode == 1, refused
    assert (
        f"journal_pruned record {pruned_seq}" in refused.stderr
        and f"--before {pruned_seq + 1}" in refused.stderr
    )
    assert not (tmp_path / "early.db").exists()
    ok = tablectl("journal", "archive", "--db", str(db), "--to", str(tmp_path / "next.db"),
                  "--public-key", key, "--before", str(pruned_seq + 1))  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert (
        tablectl("journal", "verify", "--db", str(tmp_path / "next.db"), "--public-key", key).returncode == 0
    )
