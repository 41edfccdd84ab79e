"""Issue 14: the soak's journal disk faults. A short soak whose only faults are the journal's disk filling up
and going read-only as a card is drawn (the journal on an ext4 image of its own, tablebench/bench/journal_disk.py):
each raises the journal_io fault at once (checked by the fault itself: lid locked, light on, a bet refused, a
critical alert), the floor mends the disk and clears the fault, and the reconciliation finds nothing lost: every
card the shoe dealt journaled in its round (the shoe keeps it until committed), no event missing, no round void.
Root only (mounting); elsewhere the soak says in one line that these kinds are skipped, also tested here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tablebench.bench import faults as F
from tablebench.bench.config import BenchConfig
from tablebench.bench.soak import SoakOptions, run_soak

pytestmark = [pytest.mark.hil, pytest.mark.timeout(600)]

OTHERS = tuple(name for name in F.MID_ROUND if name not in F.JOURNAL_DISK)


@pytest.mark.skipif(
    os.geteuid() != 0, reason="mounts an ext4 image for the journal: needs root (CI runs as root)"
)
async def test_soak_with_journal_disk_full_and_read_only_loses_nothing(
    bench: BenchConfig, tmp_path: Path
) -> None:
    if not bench.emulated_shoe:
        pytest.skip("the soak scripts the emulated shoe")
    opts = SoakOptions(rounds=6, seed=8, faults=True, fault_rate=1.0, outage_s=1.0, skip_faults=OTHERS)
    result = await run_soak(bench, tmp_path, opts, progress=lambda s: None)
    text = "\n".join(result.lines())
    assert not result.aborted, text
    assert set(result.faults) <= set(F.JOURNAL_DISK), text
    assert result.journal_disk_faults["full"] >= 1 and result.journal_disk_faults["read_only"] >= 1, text
    rep = result.reconciliation
    assert rep is not None
    assert rep.rounds == rep.settled == 6 and rep.void == 0 and rep.replay_failures == [], text
    assert rep.cards_dealt == rep.cards_journaled and rep.card_mismatches == [], text
    assert rep.gaps == [] and rep.outbox_left == 0 and rep.invalid_messages == [] and rep.chain_ok, text
    assert result.ok, text


def test_without_root_the_soak_says_in_one_line_that_the_journal_disk_faults_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablebench.bench import journal_disk, soak

    monkeypatch.setattr(journal_disk.os, "geteuid", lambda: 1000)
    said: list[str] = []
    faults = dict(F.MID_ROUND)
    disk = soak._journal_disk(tmp_path, SoakOptions(faults=True), faults, said.append)
    assert disk is None and not set(F.JOURNAL_DISK) & set(faults)
    assert said == [
        "soak: journal_disk_full and journal_disk_read_only skipped: the journal disk faults mount an ext4 "
        "image for the journal: needs root (CI runs as root)"
    ]
