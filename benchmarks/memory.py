"""Memory (RSS) over many rounds: the pure table core + the real journal, in this process.

Each input goes through ``TableController.submit`` (the core and ONE journal transaction with its records and
outbox events), a snapshot every 100 inputs, and the outbox rows are acknowledged as the publisher would after
PUBACK. The full stack is not used: at ~25 ms of fsync + core per round a 100,000-round
run would take hours. ``--no-fsync`` (synchronous=OFF) speeds it up without changing what is held in memory.
RSS is sampled 20 times; the figure to look at is the growth after the first 10 % (warm-up).

    python benchmarks/memory.py [--quick] [--rounds N] [--no-fsync]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import rss_kib
from benchmarks._workload import RoundWorkload, opening_inputs
from controller.journal import Journal
from controller.shell.controller import TableController
from controller.table.inputs import Input


def run(rounds: int, fsync: bool) -> list[tuple[int, int]]:
    return asyncio.run(_run(rounds, fsync))


async def _run(rounds: int, fsync: bool) -> list[tuple[int, int]]:
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        j = Journal(Path(tmp) / "journal.db", table_id="mem1")
        if not fsync:
            j._conn.execute("PRAGMA synchronous=OFF")
        clock = iter(itertools.count(1_790_000_000, 0.5))
        # The real commit path: TableController.submit (core + one journal transaction per input + snapshots).
        tc = TableController(j, None, snapshot_every=100, clock=lambda: next(clock))

        async def apply(inp: Input) -> None:
            await tc.submit(inp)
            j.outbox_ack([row.event_id for row in j.outbox_pending(limit=1000)])  # as after PUBACK

        for inp in opening_inputs():
            await apply(inp)
        wl = RoundWorkload()
        samples: list[tuple[int, int]] = []
        every = max(1, rounds // 20)
        while wl.rounds < rounds:
            before = wl.rounds
            await apply(wl.next_input(tc.core))
            if wl.rounds != before and wl.rounds % every == 0:
                gc.collect()
                samples.append((wl.rounds, rss_kib()))
        j.close()
        return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="60 rounds")
    ap.add_argument("--rounds", type=int, default=None, help="default 100,000")
    ap.add_argument("--no-fsync", action="store_true")
    a = ap.parse_args()
    rounds = a.rounds or (60 if a.quick else 100_000)
    t0 = time.monotonic()
    samples = run(rounds, fsync=not a.no_fsync)
    el = time.monotonic() - t0
    per_round = el / rounds * 1e3
    print(f"\n== RSS over {rounds} rounds (core + journal in-process, {el:.0f} s, {per_round:.1f} ms/round)")
    print("  " + "  ".join(f"{r}:{kib // 1024}MiB" for r, kib in samples))
    warm = samples[max(0, len(samples) // 10)]
    last = samples[-1]
    growth = (last[1] - warm[1]) / max(1, last[0] - warm[0]) * 1000
    print(
        f"  after warm-up (round {warm[0]}): {warm[1]} KiB -> {last[1]} KiB at round {last[0]}"
        f" = {growth:+.1f} KiB per 1000 rounds"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
