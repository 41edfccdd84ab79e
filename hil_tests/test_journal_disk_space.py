"""Issue 27 §6: the journal's filesystem watched, on the real service (`tablectl run`, emulated shoe on a pty,
real mosquitto) with its state directory on a small tmpfs (size and nr_inodes limits; mounting needs root, CI
runs as root). Before, a full disk was noticed only when a write failed (SQLite reused its WAL's space and the
table dealt on with no warning). Now: free space and inodes in `tablectl status` and the metrics; a warning
alert below the first threshold (space or inodes); below the second no new round, the round in progress
finishing first; freed, rounds start again and the disk_space alerts close themselves."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.client import CommandFailed
from tablebench.bench.driver import Dealer
from tablebench.bench.rig import Rig

pytestmark = [
    pytest.mark.hil,
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        os.geteuid() != 0, reason="mounts a tmpfs for the journal: needs root (CI runs as root)"
    ),
]

MB = 1024 * 1024
LIMITS = {
    "disk_warn_free_mb": 24,
    "disk_refuse_free_mb": 12,
    "disk_warn_free_inodes": 150,
    "disk_refuse_free_inodes": 20,
}
ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def small_tmpfs(mountpoint: Path) -> Iterator[Path]:
    mountpoint.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=400", "tmpfs", str(mountpoint)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)


def fill_to(directory: Path, free_mb: int) -> Path:
    """A filler file leaving about ``free_mb`` free."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    filler = directory / f"filler-{free_mb}"
    with filler.open("wb") as fh:
        left = max(0, free - free_mb * MB)
        chunk = b"\0" * MB
        while left > 0:
            fh.write(chunk[: min(MB, left)])
            left -= MB
    return filler


def status(state: Path) -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli", "status", "--state-dir", str(state), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def disk_alerts(view) -> list[dict]:
    return [a for a in view.alerts_open if a.get("kind") == "disk_space"]


async def until(rig: Rig, pred, what: str, timeout: float = 40.0) -> None:
    try:
        await rig.monitor.wait_for(pred, timeout)
    except TimeoutError:
        raise AssertionError(f"{what}: not seen\n{rig.stack.controller_log(30)}") from None


async def test_journal_disk_space_warned_then_no_new_round_and_the_round_in_progress_finishes(
    bench, tmp_path
) -> None:
    workdir = tmp_path / "rig"
    with small_tmpfs(workdir / "state") as state:
        rig = Rig(bench, workdir, scenario={"kind": "continuous", "decks": 6, "seed": 3, "start_empty": True})
        rig.stack.opts.config_overrides["journal"] = dict(LIMITS)
        await rig.start()
        try:
            d = Dealer(rig)
            doc = status(state)
            for _ in range(120):  # the watch's first measurement reaches the status file within seconds
                if doc.get("disk_free_bytes") is not None:
                    break
                await asyncio.sleep(0.25)
                doc = status(state)
            assert doc["disk_free_bytes"] > LIMITS["disk_warn_free_mb"] * MB and doc["disk_free_inodes"] > 150
            prom = subprocess.run(
                [sys.executable, "-m", "controller.cli", "status", "--state-dir", str(state), "--prometheus"],
                cwd=ROOT, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert (
                "tablectl_journal_disk_free_bytes" in prom.stdout
                and "tablectl_journal_disk_free_inodes" in prom.stdout
            )

            # inodes: many small files (a runaway writer): the warning
            small = state / "many"
            small.mkdir()
            n = 0
            while os.statvfs(state).f_favail >= LIMITS["disk_warn_free_inodes"] - 10:
                (small / str(n)).touch()
                n += 1
            await until(
                rig, lambda v: any(a["severity"] == "warning" for a in disk_alerts(v)), "inode warning"
            )
            for f in small.iterdir():
                f.unlink()
            small.rmdir()

            await d.open_session()
            await d.cmd("place_bet", seat=1, amount=1000)
            rid = str((await d.cmd("no_more_bets"))["result"]["round_id"])  # a round in progress

            fill_to(state, 18)  # below the warning threshold
            await until(rig, lambda v: any("MB" in a["reason"] for a in disk_alerts(v)), "space warning")
            fill_to(state, 8)  # below the refusal threshold
            await until(
                rig, lambda v: any(a["severity"] == "critical" for a in disk_alerts(v)), "critical alert"
            )
            assert status(state)["disk_free_bytes"] < LIMITS["disk_refuse_free_mb"] * MB

            await d.play_out(rid)  # the round in progress finishes
            await d.finish_round()
            with pytest.raises(CommandFailed, match="journal disk low"):
                await rig.dealer.dealer("place_bet", seat=1, amount=1000)  # no new round

            for filler in state.glob("filler-*"):
                filler.unlink()
            for _ in range(100):  # freed: rounds start again once the watch has measured it
                try:
                    await rig.dealer.dealer("place_bet", seat=1, amount=1000)
                    break
                except CommandFailed as exc:
                    assert "journal disk low" in exc.reason, exc.reason
                    await asyncio.sleep(0.5)  # the watch measures every few seconds
            else:
                pytest.fail("place_bet still refused after the space was freed")
            # issue 42: the alerts whose cause is gone close themselves (acknowledged by tablectl), as
            # journal_io's do: no "no new round until space is freed" left open while rounds run again
            await until(rig, lambda v: not disk_alerts(v), "disk_space alerts closed once space was freed")
        finally:
            await rig.stop()
