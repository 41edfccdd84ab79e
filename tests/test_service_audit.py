"""The real service (`tablectl run`, real mosquitto, emulated shoe): it publishes signed checkpoints that verify
against the key in the integrity manifest, and a journal rewritten behind its back (hashes recomputed) does not
start silently: a critical ``journal_integrity`` alert names the record (issue 13 §1)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from support.broker import Recorder

from controller.audit.checkpoint import verify_checkpoint
from controller.audit.keys import public_key_from_manifest
from controller.journal.store import chain_hash
from controller.topics import Topics
from tablebench.stack import Stack, StackOptions

ROOT = Path(__file__).resolve().parent.parent


def tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


async def test_service_publishes_checkpoints_and_alerts_on_a_rewritten_journal(tmp_path: Path) -> None:
    opts = StackOptions(jackpot=False, config_overrides={"audit": {"checkpoint_interval_s": 1}})
    stack = Stack(tmp_path, opts).start()
    try:
        assert stack.broker is not None
        topics = Topics(opts.site, opts.table_id)
        rec = Recorder(stack.broker, "monitor", topics, filters=("audit/#", "alerts/open")).start()
        # start-up journals the restart input: within the interval the head is signed and published (retained)
        await rec.await_for(lambda m: any(t == "audit/checkpoint" for t, _, _ in m), timeout=30)
        envelope = rec.on("audit/checkpoint")[-1]
        manifest = tmp_path / "integrity.json"
        key = public_key_from_manifest(manifest)
        assert key is not None
        cp = verify_checkpoint(envelope["data"], key)
        assert cp.table == opts.table_id and rec.invalid == []
        saved = tmp_path / "checkpoint.json"
        saved.write_text(json.dumps(envelope))
        assert stack.stop_controller() == 0
        db = tmp_path / "state" / "journal.db"
        ok = tablectl(
            "journal", "verify", "--db", str(db), "--checkpoint", str(saved), "--manifest", str(manifest)
        )
        assert ok.returncode == 0, ok.stderr

        # the attack: the first record rewritten, every hash after it recomputed
        conn = sqlite3.connect(db)
        conn.execute("DROP TRIGGER records_no_update")
        conn.execute("UPDATE records SET data = replace(data, 'restart', 'restarT') WHERE seq = 1")
        prev = "0" * 64
        for seq, ts, kind, data in conn.execute(
            "SELECT seq, ts, kind, data FROM records ORDER BY seq"
        ).fetchall():
            h = chain_hash(prev, seq, ts, kind, data)
            conn.execute("UPDATE records SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, h, seq))
            prev = h
        conn.commit()
        conn.close()
        assert tablectl("journal", "verify", "--db", str(db)).returncode == 0  # the plain chain is fooled
        bad = tablectl(
            "journal", "verify", "--db", str(db), "--checkpoint", str(saved), "--manifest", str(manifest)
        )
        assert bad.returncode == 1 and "journal BROKEN at record" in bad.stderr

        stack.start_controller()

        def integrity_alert(_m) -> bool:
            docs = rec.on("alerts/open")
            # the integrity fault's alert (the integrity fault: lid locked, dealing refused until a supervisor acts)
            return bool(docs) and any(a["kind"] == "integrity" for a in docs[-1]["data"]["alerts"])

        try:
            await rec.await_for(integrity_alert, timeout=30)
        except AssertionError:
            raise AssertionError("no integrity fault alert:\n" + stack.controller_log()) from None
        alert = next(a for a in rec.on("alerts/open")[-1]["data"]["alerts"] if a["kind"] == "integrity")
        assert alert["severity"] == "critical" and "record" in alert["reason"]
        rec.stop()
    finally:
        stack.stop()


async def test_a_journal_cut_short_while_stopped_is_caught_by_the_brokers_checkpoint(tmp_path: Path) -> None:
    """Truncating the tail (the last checkpoint records with it) leaves a chain that verifies on its own; the
    checkpoint the broker still holds (retained) does not match it: the integrity fault, critical alert."""
    opts = StackOptions(jackpot=False, config_overrides={"audit": {"checkpoint_interval_s": 1}})
    stack = Stack(tmp_path, opts).start()
    try:
        assert stack.broker is not None
        topics = Topics(opts.site, opts.table_id)
        rec = Recorder(stack.broker, "monitor", topics, filters=("audit/#", "alerts/open")).start()
        await rec.await_for(lambda m: any(t == "audit/checkpoint" for t, _, _ in m), timeout=30)
        assert stack.stop_controller() == 0
        rec.stop()
        last = Recorder(stack.broker, "monitor", topics, filters=("audit/checkpoint",)).start()
        await last.await_for(lambda m: len(m) >= 1)  # the retained one: the newest the table published
        cp = last.on("audit/checkpoint")[-1]["data"]
        last.stop()
        db = tmp_path / "state" / "journal.db"
        conn = sqlite3.connect(db)
        conn.execute("DROP TRIGGER records_no_delete")
        conn.execute("DELETE FROM records WHERE seq >= ?", (cp["seq"] - 1,))
        conn.execute("DELETE FROM snapshots WHERE seq >= ?", (cp["seq"] - 1,))
        conn.commit()
        conn.close()
        assert tablectl("journal", "verify", "--db", str(db)).returncode == 0  # the cut chain still chains

        rec = Recorder(stack.broker, "monitor", topics, filters=("alerts/open",)).start()
        stack.start_controller()

        def truncated(_m) -> bool:
            docs = rec.on("alerts/open")
            return bool(docs) and any(
                a["kind"] == "integrity"
                and "truncated" in a["reason"]  # the fault (the integrity fault), alerted
                for a in docs[-1]["data"]["alerts"]
            )

        try:
            await rec.await_for(truncated, timeout=30)
        except AssertionError:
            raise AssertionError("no integrity fault alert:\n" + stack.controller_log()) from None
        rec.stop()
    finally:
        stack.stop()
