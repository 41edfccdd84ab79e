"""CPU per card of the table's own code, in one process: the card workload (benchmarks/_workload.py) through
``TableController`` as the service drives it (shoe events via ``handle_events``, one per commit; dealer and
supervisor inputs via ``submit``), a real journal on disk, no MQTT and no pty. The outbox is acknowledged after
every commit, as PUBACKs would. Also: how long the loop is held after a commit before its next pass, where the
MQTT link writes what the commit handed it (a card's publish waits that long). ``--profile`` adds the functions
that cost most (cProfile). ``--core``: the same inputs applied to a bare ``TableCore`` (no shell, no journal),
the state documents taken once per shoe event as the shell takes them: the core's own CPU per card.

    python benchmarks/cpu_per_card.py [--quick] [--cards N] [--fsync] [--profile] [--core]

Without ``--fsync`` the journal runs with ``synchronous=OFF``: the figure is then the Python and SQLite CPU of a
card, not the disk's wait (latency.py and throughput.py measure that).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._workload import RoundWorkload, opening_inputs
from controller.journal import Journal
from controller.rules.profiles import load_profile
from controller.shell.controller import TableController
from controller.table import inputs
from controller.table.core import TableCore


async def run(cards: int, *, fsync: bool, profile: cProfile.Profile | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        journal = Journal(Path(tmp) / "journal.db", table_id="cpu1")
        if not fsync:
            journal._conn.execute("PRAGMA synchronous=OFF")
        clock = iter(itertools.count(1_790_000_000, 0.5))
        tc = TableController(journal, None, snapshot_every=100, clock=lambda: next(clock))

        async def give(inp: inputs.Input) -> None:
            if isinstance(inp, inputs.DeviceInput):
                await tc.handle_events([inp.event])
            else:
                await tc.submit(inp)
            # as after PUBACK
            journal.outbox_ack([row.event_id for row in journal.outbox_pending(limit=1000)])
            await asyncio.sleep(0)  # the loop's next pass, as the pump's wait for the shoe's next event

        loop = asyncio.get_running_loop()
        # from a commit to the loop's next pass, where the MQTT link writes what the commit handed it
        held: list[float] = []

        def on_commit(_tx: object) -> None:
            t = time.perf_counter()
            loop.call_soon(lambda: held.append(time.perf_counter() - t))

        journal.add_commit_listener(on_commit)
        for inp in opening_inputs():
            await give(inp)
        workload, given = RoundWorkload(), 0
        held.clear()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if profile is not None:
            profile.enable()
        while workload.cards < cards:
            await give(workload.next_input(tc.core))
            given += 1
        if profile is not None:
            profile.disable()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        held.sort()
        return {
            "held_p50_ms": held[len(held) // 2] * 1e3,
            "held_p99_ms": held[int(len(held) * 0.99)] * 1e3,
            "held_p99.5_ms": held[int(len(held) * 0.995)] * 1e3,
            "held_max_ms": held[-1] * 1e3,
            "cards": workload.cards,
            "inputs": given,
            "cpu_per_card_us": cpu / workload.cards * 1e6,
            "wall_per_card_us": wall / workload.cards * 1e6,
        }


def run_core(cards: int, *, profile: cProfile.Profile | None) -> dict[str, float]:
    """The core alone: each shoe event applied with ``states=False`` and its documents taken after it (a burst of
    one, as ``TableController.handle_events`` with one event), the other inputs with their documents."""
    core, now = TableCore(load_profile), 1_790_000_000.0
    for inp in opening_inputs():
        now += 0.5
        core.apply(inp, now)
    workload, given = RoundWorkload(), 0
    cpu0 = time.process_time()
    if profile is not None:
        profile.enable()
    while workload.cards < cards:
        inp = workload.next_input(core)
        now += 0.5
        if isinstance(inp, inputs.DeviceInput):
            core.apply(inp, now, states=False)
            core.publish_states()
        else:
            core.apply(inp, now)
        given += 1
    if profile is not None:
        profile.disable()
    cpu = time.process_time() - cpu0
    return {"cards": workload.cards, "inputs": given, "core_cpu_per_card_us": cpu / workload.cards * 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="300 cards")
    ap.add_argument("--cards", type=int, default=5000)
    ap.add_argument("--fsync", action="store_true", help="journal with synchronous=FULL, as in the service")
    ap.add_argument("--profile", action="store_true", help="print the 30 functions with the most own time")
    ap.add_argument("--core", action="store_true", help="the bare TableCore only (no shell, no journal)")
    args = ap.parse_args()
    cards = 300 if args.quick else args.cards
    profile = cProfile.Profile() if args.profile else None
    if args.core:
        figures = run_core(cards, profile=profile)
        print("== CPU per card, the bare TableCore (no shell, no journal)")
        print("  " + "  ".join(f"{k}={v:.0f}" for k, v in figures.items()))
        if profile is not None:
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return 0
    figures = asyncio.run(run(cards, fsync=args.fsync, profile=profile))
    print("== CPU per card, TableController + journal in one process (no MQTT, no pty)")
    print("  " + "  ".join(f"{k}={v:.0f}" for k, v in figures.items() if not k.startswith("held")))
    print(
        "  commit -> next loop pass (the MQTT write): "
        + "  ".join(f"{k[5:]}={v:.2f}" for k, v in figures.items() if k.startswith("held"))
    )
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
