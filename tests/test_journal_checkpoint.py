"""Signed checkpoints anchor the journal off the table (issue 13 §1).

Each attack here is made as a file-level attacker would make it: on a real journal file written by a real
TableController with the Checkpointer, with sqlite3, the append-only triggers dropped, rows rewritten or deleted
and the hash chain recomputed with the algorithm from the source (it is public). The plain `journal verify`
cannot see a rewrite with recomputed hashes, a truncation or an emptied journal; with the checkpoint saved from
``audit/checkpoint`` it names the record."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import follows, parse_checkpoint, public_key_hex, sign_checkpoint
from controller.audit.keys import load_or_create, public_key_from_manifest, public_key_hex_of
from controller.journal.checkpointer import TOPIC, Checkpointer
from controller.journal.store import Journal, chain_hash, iso_ts
from controller.shell import TableController
from controller.table import inputs
from drivers import events as ev

ROOT = Path(__file__).resolve().parent.parent
HANDS = [["2C", "TS", "6D", "7S", "8C"], ["9H", "AD", "7D", "QC"], ["TS", "TH", "9H", "7D"]]


def tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


class Table:
    """A real TableController on a journal with the table's audit key and a Checkpointer."""

    def __init__(
        self, db: Path, key_file: Path, *, snapshot_every: int = 100, interval_s: float = 60
    ) -> None:
        self.key = load_or_create(key_file)
        self.public_key = public_key_hex(self.key.public_key())
        self.journal = Journal(db, table_id="T1", audit_public_key=self.public_key)
        self.tc = TableController(self.journal, None, snapshot_every=snapshot_every)
        self.cp = Checkpointer(self.journal, self.key, site="S1", table="T1", interval_s=interval_s)
        self._seq = iter(range(1, 100_000))

    async def start(self) -> None:
        self.cp.start()
        await self.tc.start()

    async def card(self, code: str) -> None:
        await self.tc.submit(inputs.DeviceInput(ev.CardOut(code[0], code[1], next(self._seq))))

    async def dev(self, e: ev.DeviceEvent) -> None:
        await self.tc.submit(inputs.DeviceInput(e))

    async def open(self) -> None:
        await self.tc.supervisor_action("ana", "open_table", {"profile": "pt-2001"})
        for e in (
            ev.LidChanged(ev.LidState.OPEN),
            ev.DiscardInserted(156),
            ev.DiscardInserted(156),
            ev.LidChanged(ev.LidState.CLOSED),
            ev.ShuffleFinished(312),
        ):
            await self.dev(e)

    async def round(self, n: int) -> None:
        """One settled round (a bet of 500 * (n + 1) on seat 2), discards back in."""
        tc = self.tc
        await tc.dealer_input("place_bet", {"seat": 2, "amount": 500 * (n + 1)})
        await tc.dealer_input("no_more_bets")
        for code in HANDS[n % len(HANDS)]:  # the first after the shuffle burns one card (PT-2001 r.10)
            await self.card(code)
        while tc.core.state == "players":
            await tc.dealer_input("stand")
        while tc.core.state == "dealer":
            await self.card(["5H", "4H", "3C", "2H"][tc.core.round.card_count % 4])
        assert tc.core.state == "settled"
        await self.dev(ev.LidChanged(ev.LidState.OPEN))
        await self.dev(ev.DiscardInserted(tc.core.out))
        await self.dev(ev.LidChanged(ev.LidState.CLOSED))
        await tc.dealer_input("next_round")

    async def checkpoints_at_least(self, n: int) -> None:
        async with asyncio.timeout(10):
            while self.cp.written < n:
                await asyncio.sleep(0.01)

    def checkpoint_envelope(self) -> str:
        """The newest audit/checkpoint payload exactly as the table publishes it (the outbox row)."""
        rows = [r for r in self.journal.outbox_pending(limit=100_000) if r.topic == TOPIC]
        return rows[-1].payload


async def signed_journal(tmp_path: Path, rounds: int = 3) -> tuple[Path, Path, str, dict]:
    """A journal of ``rounds`` settled rounds, each ended by a checkpoint; the last checkpoint is saved as the
    floor would keep it (the raw MQTT payload), and one more round follows it. Returns (db, checkpoint file,
    the table's public key, the checkpoint)."""
    db, key_file = tmp_path / "journal.db", tmp_path / "audit_key.pem"
    t = Table(db, key_file)
    await t.start()
    await t.open()
    for n in range(rounds):
        await t.round(n)
        await t.checkpoints_at_least(n + 1)
    envelope = t.checkpoint_envelope()
    cp_file = tmp_path / "checkpoint.json"
    cp_file.write_text(envelope)
    await t.round(rounds)  # records after the saved checkpoint
    await t.checkpoints_at_least(rounds + 1)
    t.tc.journal.close()
    return db, cp_file, t.public_key, json.loads(envelope)["data"]


def attacker(db: Path) -> sqlite3.Connection:
    """The file, as someone with write access opens it: the append-only triggers are only in the file."""
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER IF EXISTS records_no_update")
    conn.execute("DROP TRIGGER IF EXISTS records_no_delete")
    return conn


def recompute_chain(conn: sqlite3.Connection, from_seq: int) -> None:
    """Rehash every record from ``from_seq`` on so that the plain chain verifies again."""
    prev = conn.execute("SELECT hash FROM records WHERE seq = ?", (from_seq - 1,)).fetchone()
    prev_hash = prev[0] if prev else "0" * 64
    rows = conn.execute(
        "SELECT seq, ts, kind, data FROM records WHERE seq >= ? ORDER BY seq", (from_seq,)
    ).fetchall()
    for seq, ts, kind, data in rows:
        h = chain_hash(prev_hash, seq, ts, kind, data)
        conn.execute("UPDATE records SET prev_hash = ?, hash = ? WHERE seq = ?", (prev_hash, h, seq))
        prev_hash = h
    conn.commit()


def first_bet_seq(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT seq FROM records WHERE kind = 'bet_placed' ORDER BY seq LIMIT 1").fetchone()[
        0
    ]


# ---- the CLI with a checkpoint ----


async def test_untouched_journal_verifies_against_its_checkpoint(tmp_path: Path) -> None:
    db, cp_file, pub, cp = await signed_journal(tmp_path)
    ok = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(cp_file), "--public-key", pub)
    assert ok.returncode == 0, ok.stderr
    keyed = tablectl("journal", "verify", "--db", str(db), "--public-key", pub)
    assert keyed.returncode == 0 and re.search(
        r"checkpoint records? signed by the given public key", keyed.stdout
    ), keyed
    assert " 0 checkpoint" not in keyed.stdout, keyed.stdout
    assert f"up to checkpoint {cp['seq']} match the signed head" in ok.stdout
    # the bare data dict (as the floor archive stores it) works too
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(cp))
    assert (
        tablectl(
            "journal", "verify", "--db", str(db), "--checkpoint", str(bare), "--public-key", pub
        ).returncode
        == 0
    )


async def test_rewrite_with_recomputed_hashes_passes_the_chain_but_not_the_checkpoint(tmp_path: Path) -> None:
    db, cp_file, pub, _cp = await signed_journal(tmp_path)
    conn = attacker(db)
    seq = first_bet_seq(conn)
    conn.execute(
        "UPDATE records SET data = replace(data, '\"amount\":500', '\"amount\":5000') WHERE seq = ?", (seq,)
    )
    recompute_chain(conn, seq)
    conn.close()
    plain = tablectl("journal", "verify", "--db", str(db))
    assert plain.returncode == 0, "the unanchored chain cannot see a rewrite with recomputed hashes"
    # given the table's key, the checkpoint records on the way (signed before the rewrite) no longer match
    keyed = tablectl("journal", "verify", "--db", str(db), "--public-key", pub)
    assert keyed.returncode == 1, keyed.stdout + keyed.stderr
    assert keyed.stderr.strip().startswith("journal BROKEN at record "), keyed.stderr
    bad = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(cp_file), "--public-key", pub)
    assert bad.returncode == 1
    line = bad.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith("journal BROKEN at record ")
    assert "rewritten" in line


async def test_truncation_before_the_checkpoint_is_named(tmp_path: Path) -> None:
    db, cp_file, pub, cp = await signed_journal(tmp_path)
    keep = cp["seq"] - 10
    conn = attacker(db)
    conn.execute("DELETE FROM records WHERE seq > ?", (keep,))
    conn.commit()
    conn.close()
    assert tablectl("journal", "verify", "--db", str(db)).returncode == 0  # a shorter chain still chains
    bad = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(cp_file), "--public-key", pub)
    assert bad.returncode == 1
    assert f"record {keep + 1} is missing" in bad.stderr and "truncated" in bad.stderr


async def test_emptied_journal_is_named(tmp_path: Path) -> None:
    db, cp_file, pub, _ = await signed_journal(tmp_path, rounds=1)
    conn = attacker(db)
    conn.execute("DELETE FROM records")
    conn.commit()
    conn.close()
    plain = tablectl("journal", "verify", "--db", str(db))
    assert plain.returncode == 0 and "0 records" in plain.stdout
    bad = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(cp_file), "--public-key", pub)
    assert bad.returncode == 1 and "record 1 is missing" in bad.stderr


async def test_forged_rows_inserted_before_the_checkpoint_are_found(tmp_path: Path) -> None:
    """A forged bet slipped in mid-journal, the records after it renumbered and the chain recomputed."""
    db, cp_file, pub, _cp = await signed_journal(tmp_path)
    conn = attacker(db)
    at = first_bet_seq(conn) + 1
    conn.execute("UPDATE records SET seq = seq + 1000000 WHERE seq >= ?", (at,))
    conn.execute("UPDATE records SET seq = seq - 1000000 + 1 WHERE seq >= 1000000")
    conn.execute(
        "INSERT INTO records(seq, ts, kind, data, prev_hash, hash) VALUES (?, 0, 'bet_placed', ?, '', '')",
        (at, json.dumps({"seat": 3, "amount": 100000})),
    )
    recompute_chain(conn, at)
    conn.close()
    assert tablectl("journal", "verify", "--db", str(db)).returncode == 0
    bad = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(cp_file), "--public-key", pub)
    assert bad.returncode == 1 and "journal BROKEN at record" in bad.stderr


async def test_checkpoint_resigned_with_another_key_is_refused(tmp_path: Path) -> None:
    """The attacker rewrites the journal, then signs a checkpoint of the forged head with a key of their own."""
    db, _cp_file, pub, cp = await signed_journal(tmp_path)
    conn = attacker(db)
    seq = first_bet_seq(conn)
    conn.execute(
        "UPDATE records SET data = replace(data, '\"amount\":500', '\"amount\":5000') WHERE seq = ?", (seq,)
    )
    recompute_chain(conn, seq)
    forged_head = conn.execute("SELECT hash FROM records WHERE seq = ?", (cp["seq"],)).fetchone()[0]
    conn.close()
    mine = Ed25519PrivateKey.generate()
    forged = sign_checkpoint(
        mine,
        site="S1",
        table="T1",
        seq=cp["seq"],
        hash=forged_head,
        last_event_id=cp["last_event_id"],
        prev_seq=cp["prev_seq"],
        prev_hash=cp["prev_hash"],
        ts=cp["ts"],
    )
    forged_file = tmp_path / "forged.json"
    forged_file.write_text(json.dumps(forged.to_dict()))
    bad = tablectl(
        "journal", "verify", "--db", str(db), "--checkpoint", str(forged_file), "--public-key", pub
    )
    assert bad.returncode == 1
    assert "not by the table's key" in bad.stderr and f"checkpoint {cp['seq']}" in bad.stderr
    # the same with the key from the integrity manifest
    manifest = tmp_path / "integrity.json"
    manifest.write_text(json.dumps({"format": "tablectl-integrity/1", "audit_public_key": pub}))
    bad = tablectl(
        "journal", "verify", "--db", str(db), "--checkpoint", str(forged_file), "--manifest", str(manifest)
    )
    assert bad.returncode == 1 and "not by the table's key" in bad.stderr


async def test_bad_checkpoint_arguments_give_one_clear_line(tmp_path: Path) -> None:
    db, cp_file, pub, _ = await signed_journal(tmp_path, rounds=1)
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2")
    res = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(junk), "--public-key", pub)
    assert res.returncode == 2 and "not JSON" in res.stderr
    res = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(cp_file), "--public-key", "zz")
    assert res.returncode == 2 and "64 hex" in res.stderr
    altered = json.loads(cp_file.read_text())
    altered["data"]["seq"] -= 1
    junk.write_text(json.dumps(altered))
    res = tablectl("journal", "verify", "--db", str(db), "--checkpoint", str(junk), "--public-key", pub)
    assert res.returncode == 1 and "bad signature" in res.stderr


# ---- start-up verification ----


async def test_start_up_verification_catches_a_rewrite_before_the_last_checkpoint(tmp_path: Path) -> None:
    db, _, pub, _cp = await signed_journal(tmp_path)
    assert Journal(db, audit_public_key=pub).verify_since_checkpoint().ok
    conn = attacker(db)
    seq = first_bet_seq(conn)
    conn.execute(
        "UPDATE records SET data = replace(data, '\"amount\":500', '\"amount\":5000') WHERE seq = ?", (seq,)
    )
    recompute_chain(conn, seq)
    conn.close()
    assert Journal(db).verify().ok  # without the key, nothing to see
    result = Journal(db, audit_public_key=pub).verify_since_checkpoint()
    assert not result.ok and result.first_bad_seq is not None and result.first_bad_seq >= seq
    assert "signed in checkpoint record" in result.reason
    assert not Journal(db, audit_public_key=pub).verify().ok


async def test_start_up_verification_refuses_a_checkpoint_record_signed_by_another_key(
    tmp_path: Path,
) -> None:
    db, _, _pub, _ = await signed_journal(tmp_path, rounds=1)
    other = public_key_hex(Ed25519PrivateKey.generate().public_key())
    result = Journal(db, audit_public_key=other).verify_since_checkpoint()
    assert not result.ok and "not by the table's key" in result.reason


async def test_forged_snapshot_is_not_restored(tmp_path: Path) -> None:
    """The snapshot edited in the file (cards inside x10), kept valid JSON: recovery does not use it and the
    journal names it; the state comes from the chained inputs instead (issue 13 §1)."""
    db, key_file = tmp_path / "journal.db", tmp_path / "audit_key.pem"
    t = Table(db, key_file, snapshot_every=5)
    await t.start()
    await t.open()
    await t.round(0)
    honest = t.tc.core.snapshot()
    t.journal.close()
    conn = attacker(db)
    snap_seq, state = conn.execute("SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
    assert '"inside":' in state
    doc = json.loads(state)
    doc["inside"] = doc["inside"] * 10
    conn.execute("UPDATE snapshots SET state = ? WHERE seq = ?", (json.dumps(doc, sort_keys=True), snap_seq))
    conn.commit()
    conn.close()
    journal = Journal(db, table_id="T1")
    tc = TableController(journal, None)
    tc.recover()
    assert tc.core.snapshot()["inside"] == honest["inside"]
    assert [p.seq for p in journal.integrity_problems][:1] == [snap_seq]
    assert "does not match its chained digest" in journal.integrity_problems[0].reason


async def test_forged_snapshot_with_recomputed_chain_fails_start_up_verification(tmp_path: Path) -> None:
    db, key_file = tmp_path / "journal.db", tmp_path / "audit_key.pem"
    t = Table(db, key_file, snapshot_every=5)
    await t.start()
    await t.open()
    await t.round(0)
    await t.checkpoints_at_least(1)
    await t.round(1)
    await t.checkpoints_at_least(2)
    t.journal.close()
    conn = attacker(db)
    snap_seq, state = conn.execute("SELECT seq, state FROM snapshots ORDER BY seq LIMIT 1").fetchone()
    doc = json.loads(state)
    doc["inside"] *= 10
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    conn.execute("UPDATE snapshots SET state = ? WHERE seq = ?", (text, snap_seq))

    conn.execute(
        "UPDATE records SET data = ? WHERE seq = ?",
        (
            json.dumps({"as_of_seq": snap_seq, "sha256": hashlib.sha256(text.encode()).hexdigest()}),
            snap_seq + 1,
        ),
    )
    conn.execute("DELETE FROM snapshots WHERE seq > ?", (snap_seq,))  # make the forged one the newest
    recompute_chain(conn, snap_seq + 1)
    conn.close()
    result = Journal(db, audit_public_key=t.public_key).verify_since_checkpoint()
    assert not result.ok and "signed in checkpoint record" in result.reason


# ---- the checkpointer ----


async def test_checkpoint_at_round_end_chained_signed_and_linked(tmp_path: Path) -> None:
    t = Table(tmp_path / "journal.db", tmp_path / "audit_key.pem")
    await t.start()
    await t.open()
    assert t.cp.written == 0  # no round ended, the interval has not passed
    await t.round(0)
    await t.checkpoints_at_least(1)
    await t.round(1)
    await t.checkpoints_at_least(2)
    recs = [r for r in t.journal.records() if r.kind == "checkpoint"]
    assert len(recs) == 2
    first, second = (parse_checkpoint(r.data) for r in recs)
    assert follows(second, first) and first.prev_seq == 0
    for rec, cp in zip(recs, (first, second), strict=True):
        head = next(t.journal.records(after_seq=cp.seq - 1))
        assert head.seq == rec.seq - 1 and head.hash == cp.hash  # the record just before it, as signed
    envelopes = [json.loads(r.payload) for r in t.journal.outbox_pending(limit=10_000) if r.topic == TOPIC]
    assert [e["data"] for e in envelopes] == [first.to_dict(), second.to_dict()]
    assert all(e["type"] == "checkpoint" for e in envelopes)
    rows = [r for r in t.journal.outbox_pending(limit=10_000) if r.topic == TOPIC]
    assert all(r.retain and r.qos == 1 for r in rows)
    assert t.journal.verify().ok


async def test_checkpoint_every_interval_while_written_and_none_when_idle(tmp_path: Path) -> None:
    t = Table(tmp_path / "journal.db", tmp_path / "audit_key.pem", interval_s=0.3)
    await t.start()
    await t.tc.supervisor_action("ana", "open_table", {"profile": "pt-2001"})  # records, no round end
    await t.checkpoints_at_least(1)
    head = t.journal.last_seq
    await asyncio.sleep(1.0)  # idle: nothing new to sign
    assert t.cp.written == 1 and t.journal.last_seq == head
    await t.dev(ev.LidChanged(ev.LidState.OPEN))
    await t.checkpoints_at_least(2)


def test_key_file_made_once_0600_and_its_public_key_recorded_in_the_manifest(tmp_path: Path) -> None:
    key_file = tmp_path / "state" / "audit_key.pem"
    assert public_key_hex_of(key_file) is None
    key = load_or_create(key_file)
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert public_key_hex(load_or_create(key_file).public_key()) == public_key_hex(key.public_key())
    assert public_key_hex_of(key_file) == public_key_hex(key.public_key())
    os.chmod(key_file, 0o644)  # loosened by someone: tightened at the next load
    load_or_create(key_file)
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600


def test_config_record_puts_the_audit_public_key_in_the_manifest(tmp_path: Path) -> None:
    from controller.ops.manifest import write_manifest

    src = ROOT / "firmware_configs" / "table.example.toml"
    if not src.exists():
        src = next((ROOT / "firmware_configs").glob("*.toml"))
    text = src.read_text()
    cfg = tmp_path / "table.toml"
    cfg.write_text(text)
    manifest = tmp_path / "integrity.json"
    doc = write_manifest(cfg, manifest)
    key = doc["audit_public_key"]
    assert key and public_key_from_manifest(manifest) == key
    # it is the key the service signs with: [audit] key_file, default <state_dir>/audit_key.pem
    from controller.config.load import load_config

    loaded = load_config(cfg, check_files=False)
    assert public_key_hex_of(loaded.audit.key_file) == key


def test_iso_ts_is_the_checkpoint_time_format() -> None:
    assert iso_ts(0) == "1970-01-01T00:00:00.000Z"
