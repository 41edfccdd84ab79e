"""Every `tablectl journal verify` mode fails on every tampering it can see (issue 27 §4), on a journal written
by the real service (`tablectl run`, emulated shoe on a pty, real mosquitto) over two rounds.

- key only (`--manifest`): every checkpoint record deleted and the hash chain recomputed was reported ok ("0
  checkpoint records"); now the checkpoint records the journal's own rules require (one after every round end,
  before the next round starts; one at least every `[audit] checkpoint_interval_s` while records are written)
  are missing: BROKEN.
- with a checkpoint (`--checkpoint`): a record after the checkpoint with a broken hash was reported ok; now the
  records after it are walked too and reported.
The untouched journal passes every mode (no false alarm on what the service really writes)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from controller.journal.store import chain_hash

pytestmark = [pytest.mark.hil, pytest.mark.timeout(240)]

CONTINUOUS = {"kind": "continuous", "decks": 6, "seed": 5, "start_empty": True}
ROOT = Path(__file__).resolve().parent.parent


def verify(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "journal", "verify", "--db", str(db), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _writable(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER IF EXISTS records_no_update")
    conn.execute("DROP TRIGGER IF EXISTS records_no_delete")
    return conn


def delete_checkpoints_and_rechain(db: Path) -> None:
    """The attack on the key-only mode: no checkpoint record left, renumbered, every hash recomputed."""
    conn = _writable(db)
    rows = conn.execute(
        "SELECT ts, kind, data FROM records WHERE kind != 'checkpoint' ORDER BY seq"
    ).fetchall()
    conn.execute("DELETE FROM records")
    conn.execute("DELETE FROM snapshots")  # their seqs moved: the forger drops them (the state replays)
    prev = "0" * 64
    for seq, (ts, kind, data) in enumerate(rows, start=1):
        h = chain_hash(prev, seq, ts, kind, data)
        conn.execute(
            "INSERT INTO records(seq, ts, kind, data, prev_hash, hash) VALUES (?,?,?,?,?,?)",
            (seq, ts, kind, data, prev, h),
        )
        prev = h
    conn.commit()
    conn.close()


def break_a_record_after(db: Path, cp_seq: int) -> int:
    """A record after the checkpoint edited in place (its hash left): returns its seq."""
    conn = _writable(db)
    seq = conn.execute("SELECT MAX(seq) FROM records").fetchone()[0]
    assert seq > cp_seq + 1, "no record after the checkpoint"
    target = cp_seq + 1
    conn.execute("UPDATE records SET data = json_set(data, '$.forged', 1) WHERE seq = ?", (target,))
    conn.commit()
    conn.close()
    return target


async def test_every_verify_mode_fails_on_the_tampering_it_can_see(table, tmp_path: Path) -> None:
    async with table(scenario=CONTINUOUS) as (rig, d):
        await d.open_session()
        for _ in range(2):
            rid = await d.play_round({1: 1000, 2: 500})
            d.rounds.append(rid)
            await d.finish_round()
        manifest = rig.workdir / "integrity.json"
        journal = rig.journal_path
    assert manifest.exists() and journal.exists()

    clean = tmp_path / "clean.db"
    shutil.copy(journal, clean)
    conn = sqlite3.connect(clean)
    checkpoints = [
        (seq, json.loads(data))
        for seq, data in conn.execute("SELECT seq, data FROM records WHERE kind = 'checkpoint' ORDER BY seq")
    ]
    ends = conn.execute("SELECT COUNT(*) FROM records WHERE kind = 'round_settled'").fetchone()[0]
    conn.close()
    assert len(checkpoints) >= 2 and ends == 2, (checkpoints, ends)
    _, cp = checkpoints[-2]  # an older checkpoint: records (and a checkpoint record) follow it
    cp_file = tmp_path / "checkpoint.json"
    cp_file.write_text(json.dumps(cp))

    for mode in (["--manifest", str(manifest)], ["--checkpoint", str(cp_file), "--manifest", str(manifest)]):
        ok = verify(clean, *mode)
        assert ok.returncode == 0, (mode, ok.stderr)

    # key only: every checkpoint record deleted, chain recomputed
    gone = tmp_path / "no-checkpoints.db"
    shutil.copy(journal, gone)
    delete_checkpoints_and_rechain(gone)
    assert verify(gone).returncode == 0  # the plain chain is fooled, as documented
    bad = verify(gone, "--manifest", str(manifest))
    assert bad.returncode == 1, bad.stdout
    assert "checkpoint records deleted?" in bad.stderr, bad.stderr

    # with a checkpoint: a broken record after it
    after = tmp_path / "after.db"
    shutil.copy(journal, after)
    broken = break_a_record_after(after, cp["seq"])
    bad = verify(after, "--checkpoint", str(cp_file), "--manifest", str(manifest))
    assert bad.returncode == 1, bad.stdout
    assert f"record {broken} (after checkpoint {cp['seq']})" in bad.stderr, bad.stderr
    reported = verify(clean, "--checkpoint", str(cp_file), "--manifest", str(manifest)).stdout
    assert "after it chain to it" in reported, reported  # and the records after it are reported
