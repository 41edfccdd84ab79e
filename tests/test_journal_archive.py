"""`tablectl journal archive`: records up to a signed checkpoint copied into a new file and proved there (the
chain from the genesis, every checkpoint signed by the table's key, ending in one); a tampered archive fails."""

from __future__ import annotations

import json
import sqlite3

import pytest
from test_journal_checkpoint import attacker, recompute_chain, signed_journal, tablectl

from controller.journal.archive import ArchiveError, verify_archive


async def test_archive_copies_up_to_a_signed_checkpoint_and_verifies(tmp_path):
    db, _cp_file, key, _cp = await signed_journal(tmp_path, rounds=3)
    conn = sqlite3.connect(db)
    checkpoints = [s for (s,) in conn.execute("SELECT seq FROM records WHERE kind='checkpoint' ORDER BY seq")]
    last_seq = conn.execute("SELECT MAX(seq) FROM records").fetchone()[0]
    conn.close()
    assert len(checkpoints) >= 2

    # up to the newest checkpoint at or before a seq between the first two
    out = tmp_path / "archive-1.db"
    run = tablectl("journal", "archive", "--db", str(db), "--to", str(out), "--before",
                   str(checkpoints[1] - 1), "--public-key", key)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert f"up to checkpoint record {checkpoints[0]}" in run.stdout
    done = verify_archive(out, key)
    assert done.records == done.checkpoint_seq == checkpoints[0]
    a = sqlite3.connect(out)
    live = sqlite3.connect(db)
    q = "SELECT seq, ts, kind, data, prev_hash, hash FROM records WHERE seq <= ? ORDER BY seq"
    assert a.execute(q, (last_seq,)).fetchall() == live.execute(q, (checkpoints[0],)).fetchall()
    a.close()
    live.close()
    assert tablectl("journal", "verify", "--db", str(out), "--public-key", key).returncode == 0

    # never overwritten
    again = tablectl("journal", "archive", "--db", str(db), "--to", str(out), "--public-key", key)
    assert again.returncode == 1 and "already exists" in again.stderr

    # the whole journal up to its newest checkpoint
    full = tmp_path / "archive-2.db"
    assert (
        tablectl("journal", "archive", "--db", str(db), "--to", str(full), "--public-key", key).returncode
        == 0
    )
    assert verify_archive(full, key).checkpoint_seq == checkpoints[-1]


async def test_a_tampered_archive_or_a_foreign_key_is_detected(tmp_path):
    db, _cp_file, key, _cp = await signed_journal(tmp_path, rounds=2)
    out = tmp_path / "archive.db"
    assert (
        tablectl("journal", "archive", "--db", str(db), "--to", str(out), "--public-key", key).returncode == 0
    )
    other = "ab" * 32
    wrong = tablectl(
        "journal", "archive", "--db", str(db), "--to", str(tmp_path / "x.db"), "--public-key", other
    )
    assert wrong.returncode == 1 and not (tmp_path / "x.db").exists()
    assert len(wrong.stderr.splitlines()) == 1 and "Traceback" not in wrong.stderr

    # a bet changed in the archive and the chain recomputed: the signed checkpoints no longer match
    conn = attacker(out)
    seq, data = conn.execute(
        "SELECT seq, data FROM records WHERE kind = 'bet_placed' ORDER BY seq LIMIT 1"
    ).fetchone()
    doc = json.loads(data)
    doc["amount"] = doc.get("amount", 0) + 100_000
    conn.execute("UPDATE records SET data = ? WHERE seq = ?", (json.dumps(doc), seq))
    conn.commit()
    recompute_chain(conn, seq)
    conn.close()
    with pytest.raises(ArchiveError, match="BROKEN at record"):
        verify_archive(out, key)


async def test_refused_without_a_checkpoint_or_a_key(tmp_path):
    db, _cp_file, key, _cp = await signed_journal(tmp_path, rounds=1)
    run = tablectl("journal", "archive", "--db", str(db), "--to", str(tmp_path / "a.db"), "--before", "1",
                   "--public-key", key)  # fmt: skip
    assert run.returncode == 1 and "no signed checkpoint" in run.stderr
    nokey = tablectl("journal", "archive", "--db", str(db), "--to", str(tmp_path / "a.db"))
    assert nokey.returncode == 2
    missing = tablectl("journal", "archive", "--db", str(tmp_path / "nope.db"), "--to", str(tmp_path / "a.db"),
                       "--public-key", key)  # fmt: skip
    assert missing.returncode == 2 and not (tmp_path / "a.db").exists()
