"""Issue 13 §2 (configuration pinning) and §1's start-up checks, as attacks on the real stack.

Each test performs the attack an insider with write access to the table's files would try, against the
real `tablectl run` with the emulated shoe and a real mosquitto, and fails on the code before the fix:
- the rule profile changed on disk (blackjack paid 1:1) and the manifest re-recorded, then a restart with a
  session open: before, the changed profile was loaded in recovery and used; now the `integrity` fault;
- open_table with a file path or a profile not listed in the integrity manifest: before, loaded; now refused
  with the reason and journaled;
- a record rewritten (hashes left as they were) or a snapshot's JSON corrupted, then a restart: before, a
  silent start or a crash; now the service comes up in the `integrity` fault naming the record.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from controller.client import CommandFailed
from tablebench.bench.driver import Dealer
from tablebench.bench.rig import Rig
from tablebench.stack import ROOT, TABLECTL
from tests.support.rig import journal_rows, no_invalid_messages, open_alert, until

PROFILES = ROOT / "firmware_configs" / "profiles"


def _rig(bench, tmp_path: Path) -> tuple[Rig, Path]:
    """A rig whose rule profiles are a copy the test may change (never the repository's)."""
    profiles = tmp_path / "profiles"
    shutil.copytree(PROFILES, profiles)
    rig = Rig(bench, tmp_path / "rig")
    rig.stack.opts.config_overrides = {
        **rig.stack.opts.config_overrides,
        "table": {"profiles_dir": str(profiles)},
    }
    return rig, profiles


def _faults(view) -> list[str]:
    return list((view.states.get("table") or {}).get("faults", []))


async def _restart(rig: Rig) -> None:
    rig.stack.stop_controller()
    await rig.monitor.wait_for(lambda v: v.status == "offline", 30)
    rig.stack.start_controller()
    await rig.wait_online()


async def test_profile_changed_under_an_open_session_is_an_integrity_fault_not_a_1_to_1_payout(
    bench, tmp_path
) -> None:
    rig, profiles = _rig(bench, tmp_path)
    await rig.start()
    try:
        dealer = Dealer(rig)
        await dealer.open_session()

        # The insider: blackjack pays 1:1 (PT-2001 r.21 says 3:2), and the manifest re-recorded to match.
        rig.stack.stop_controller()
        prof = profiles / "pt-2001.toml"
        text = prof.read_text()
        assert 'blackjack = "3/2"' in text
        prof.write_text(text.replace('blackjack = "3/2"', 'blackjack = "1/1"'))
        manifest = rig.stack.workdir / "integrity.json"
        subprocess.run(
            [*TABLECTL, "config", "record", str(rig.stack.config_path), "--manifest", str(manifest)],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        rig.stack.start_controller()
        await rig.wait_online()

        await until(
            rig, lambda v: (v.states.get("table") or {}).get("state") == "integrity", "integrity state"
        )
        assert "integrity" in _faults(rig.monitor.view)
        await until(rig, lambda v: open_alert(v, "integrity") is not None, "integrity alert")
        alert = open_alert(rig.monitor.view, "integrity")
        assert alert["severity"] == "critical" and "pinned" in alert["reason"]
        assert any("profile" in p for p in alert["details"]["problems"])
        assert (await rig.gpio("read", name="warning_light"))["value"] is True
        assert (await rig.gpio("read", name="lid_lock"))["value"] is True
        with pytest.raises(CommandFailed, match="dealing blocked: integrity"):
            await rig.dealer.dealer("place_bet", seat=1, amount=1000)

        # Until a supervisor closes the table: the session ends with the rules it was opened with.
        await rig.sv("close_table")
        await until(rig, lambda v: "integrity" not in _faults(v), "fault ended by close_table")
        pinned = journal_rows(rig.journal_path, "configuration_pinned")  # journaled with open_table
        assert pinned and pinned[-1]["profile"] == "pt-2001" and len(pinned[-1]["profile_sha256"]) == 64
        cleared = journal_rows(rig.journal_path, "integrity_cleared")
        assert cleared and cleared[-1]["user"] == "alice" and cleared[-1]["by"] == "close_table"
        no_invalid_messages(rig)
    finally:
        await rig.stop()


async def test_open_table_takes_only_a_listed_profile_name_never_a_path(bench, tmp_path) -> None:
    rig, profiles = _rig(bench, tmp_path)
    await rig.start()
    try:
        evil = tmp_path / "evil.toml"
        evil.write_text(
            (profiles / "pt-2001.toml").read_text().replace('blackjack = "3/2"', 'blackjack = "1/1"')
        )
        for profile, reason in (
            (str(evil), "never a path"),
            ("../../evil", "never a path"),
            ("mo-2004", "this table is configured for pt-2001"),  # a real profile, not the approved one
        ):
            with pytest.raises(CommandFailed, match=reason):
                await rig.sv("open_table", profile=profile)
        assert (rig.monitor.view.states.get("table") or {}).get("state") == "closed"
        refused = journal_rows(rig.journal_path, "command_refused")
        assert [r["profile"] for r in refused] == [str(evil), "../../evil", "mo-2004"]
        assert all(r["user"] == "alice" and r["action"] == "open_table" and r["reason"] for r in refused)
        no_invalid_messages(rig)
    finally:
        await rig.stop()


def _rewrite_record(journal: Path) -> int:
    """Change a record's data and leave its hash: what an editor of the file does."""
    conn = sqlite3.connect(journal)
    try:
        conn.execute("DROP TRIGGER IF EXISTS records_no_update")
        seq = conn.execute("SELECT MIN(seq) FROM records WHERE kind = 'input'").fetchone()[0]
        data = json.loads(conn.execute("SELECT data FROM records WHERE seq = ?", (seq,)).fetchone()[0])
        data["forged"] = True
        conn.execute("UPDATE records SET data = ? WHERE seq = ?", (json.dumps(data), seq))
        conn.commit()
        return int(seq)
    finally:
        conn.close()


def _corrupt_snapshot(journal: Path) -> int:
    conn = sqlite3.connect(journal)
    try:
        seq = conn.execute("SELECT seq FROM records ORDER BY seq DESC LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT OR REPLACE INTO snapshots(seq, ts, state) VALUES (?, 0, ?)", (seq, '{"state": "betting"')
        )
        conn.commit()
        return int(seq)
    finally:
        conn.close()


@pytest.mark.parametrize("attack", ["rewrite_record", "corrupt_snapshot", "inconsistent_snapshot"])
async def test_broken_journal_at_start_up_is_an_integrity_fault_never_a_crash_or_a_silent_start(
    bench, tmp_path, attack
) -> None:
    rig, _ = _rig(bench, tmp_path)
    await rig.start()
    try:
        rig.stack.stop_controller()
        await rig.monitor.wait_for(lambda v: v.status == "offline", 30)
        if attack == "rewrite_record":
            seq = _rewrite_record(rig.journal_path)
            expect = f"record {seq}"
        elif attack == "corrupt_snapshot":
            seq = _corrupt_snapshot(rig.journal_path)
            expect = f"record {seq}"
        else:  # valid JSON, but not a state the core can restore
            conn = sqlite3.connect(rig.journal_path)
            seq = conn.execute("SELECT MAX(seq) FROM records").fetchone()[0]
            conn.execute(
                "INSERT OR REPLACE INTO snapshots(seq, ts, state) VALUES (?, 0, ?)", (seq, '{"state": 7}')
            )
            conn.commit()
            conn.close()
            expect = f"record {seq}"
        rig.stack.start_controller()
        await rig.wait_online()
        await until(rig, lambda v: "integrity" in _faults(v), "integrity fault")
        await until(rig, lambda v: open_alert(v, "integrity") is not None, "integrity alert")
        alert = open_alert(rig.monitor.view, "integrity")
        assert alert["severity"] == "critical" and expect in alert["reason"], alert
        if attack != "rewrite_record":
            assert "snapshot" in alert["reason"], alert
        assert (await rig.gpio("read", name="warning_light"))["value"] is True
        assert (await rig.gpio("read", name="lid_lock"))["value"] is True
        with pytest.raises(CommandFailed, match="integrity"):
            await rig.sv("open_table", profile="pt-2001")
        assert rig.stack.controller_proc.poll() is None  # running, not crashed
        await rig.sv("clear_integrity")  # closed table: a supervisor looked into it
        await until(rig, lambda v: "integrity" not in _faults(v), "cleared")
        no_invalid_messages(rig)
    finally:
        await rig.stop()
