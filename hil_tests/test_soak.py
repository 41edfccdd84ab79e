"""The small soak CI runs: 20 rounds on the real service with faults injected at random, then the
reconciliation `tablectl bench soak` prints (bench/tablebench/bench/reconcile.py). The 10,000-round run is the
documented command (docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablebench.bench.config import BenchConfig
from tablebench.bench.soak import SoakOptions, run_soak
from tablebench.procs import running

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

OPTS = SoakOptions(rounds=20, seed=7, faults=True, fault_rate=0.5, outage_s=1.0)


async def test_soak_20_rounds_with_faults_reconciles(bench: BenchConfig, tmp_path: Path) -> None:
    if not bench.emulated_shoe:
        pytest.skip("the soak scripts the emulated shoe")
    result = await run_soak(bench, tmp_path, OPTS, progress=lambda s: None)
    rep = result.reconciliation
    text = "\n".join(result.lines())
    assert not result.aborted, text
    assert result.rounds_played == 20 and sum(result.faults.values()) > 0, text
    assert rep is not None
    assert rep.rounds == rep.settled + rep.void == 20 and rep.replay_failures == [], text
    assert rep.cards_dealt == rep.cards_journaled and rep.card_mismatches == [], text
    assert rep.gaps == [] and rep.outbox_left == 0 and rep.invalid_messages == [] and rep.chain_ok, text
    assert not rep.jackpot.startswith("MISMATCH"), text


async def test_consumer_sees_event_ids_in_order_after_dedupe(bench: BenchConfig, tmp_path: Path) -> None:
    """docs/mqtt.md: after dedupe a consumer sees every event id once, in order (the outbox is resent before
    any retained republish after a (re)connect)."""
    if not bench.emulated_shoe:
        pytest.skip("the soak scripts the emulated shoe")
    result = await run_soak(bench, tmp_path, SoakOptions(rounds=2, seed=1), progress=lambda s: None)
    assert result.reconciliation is not None
    assert result.reconciliation.out_of_order == 0, result.reconciliation.order_examples


def test_a_soak_stopped_with_sigterm_stops_every_process_it_started(tmp_path: Path) -> None:
    """`kill` of a running soak: the service, the emulators and the broker the rig started stop with it (they
    were left running, holding their ports and pseudo-terminals)."""
    import signal
    import subprocess
    import time

    from tablebench.stack import ROOT, TABLECTL

    workdir = tmp_path / "soak"
    proc = subprocess.Popen(
        [*TABLECTL, "bench", "soak", "--rounds", "500", "--workdir", str(workdir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def started() -> list[str]:
        out = subprocess.run(["pgrep", "-f", str(workdir)], capture_output=True, text=True).stdout
        return [pid for pid in out.split() if int(pid) != proc.pid]

    try:
        deadline = time.monotonic() + 60
        while not ((workdir / "state" / "journal.db").exists() and started()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started(), "the soak never started its processes"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)  # the soak's own bound is STOP_GRACE_S (45 s)
        assert proc.returncode == 130, out
        deadline = time.monotonic() + 20
        while started() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started() == [], f"left running: {started()}\n{out}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in started():  # a failing run must not leave them behind either
            subprocess.run(["kill", "-9", pid], check=False)


def test_a_soak_that_cannot_stop_in_order_still_kills_what_it_started(tmp_path: Path) -> None:
    """After SIGTERM the orderly stop gets its grace; past it (something held the process, e.g. a loaded machine),
    the soak leaves with 130 and SIGKILLs every process below it (a child and a grandchild here), never leaving
    them running."""
    import subprocess
    import sys
    import time

    pids = tmp_path / "pids"
    program = f"""
import asyncio, subprocess, sys, time
from tablebench.bench.cli import _stop_within
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; g = subprocess.Popen(['sleep', '300']); print(g.pid, flush=True); time.sleep(300)"],
    stdout=subprocess.PIPE, text=True)
grandchild = child.stdout.readline().strip()
open({str(pids)!r}, "w").write(f"{{child.pid}} {{grandchild}}")
async def main():
    task = asyncio.current_task()
    _stop_within(0.5, task)  # as SIGTERM does
    await asyncio.to_thread(time.sleep, 300)  # a thread the cancel cannot stop
asyncio.run(main())
"""
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, proc.stdout + proc.stderr
    assert "killed 2 process(es) it had started" in proc.stdout
    started = [int(p) for p in pids.read_text().split()]
    deadline = time.monotonic() + 10
    while any(running(p) for p in started):
        assert time.monotonic() < deadline, f"left running: {started}"
        time.sleep(0.1)
