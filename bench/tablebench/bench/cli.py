"""`tablectl bench`: the hardware-in-the-loop bench from the command line (docs/bench.md).

tablectl bench soak --rounds N [--seed S] [--faults] [--bench FILE] [--outage-seconds S] [--workdir DIR]
tablectl bench show [--bench FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

from tablebench.bench.config import BenchError, load_bench
from tablebench.procs import stat_fields

# its line in `tablectl --help` (entry point tablectl.commands, bench/pyproject.toml)
HELP = "hardware-in-the-loop bench: soak and scripted runs"


# `tablectl bench ... --help`'s examples (controller/cli/examples.py shows them)
EXAMPLES = {
    ("bench",): (
        ("tablectl bench soak --rounds 50 --faults", "fifty rounds with random faults, then reconcile"),
    ),
    ("bench", "soak"): (
        (
            "tablectl bench soak --rounds 200 --faults --seed 7",
            "a repeatable soak: the same bets, cards and faults",
        ),
        ("tablectl bench soak --faults --skip-fault power_loss", "random faults except a power loss"),
    ),
    ("bench", "show"): (
        ("tablectl bench show --bench hil_tests/benches/emulated.toml", "what the bench holds"),
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench_cmd", metavar="ACTION")
    soak = sub.add_parser("soak", help="play N rounds (optionally with random faults), then reconcile")
    soak.add_argument("--rounds", type=int, default=20, help="rounds to play (default 20)")
    soak.add_argument("--seed", type=int, default=1, help="seed of bets, card orders and faults")
    soak.add_argument("--faults", action="store_true", help="inject faults at random moments")
    soak.add_argument("--fault-rate", type=float, default=0.2, help="share of rounds with a fault (0..1)")
    soak.add_argument("--outage-seconds", type=float, default=2.0, help="length of each broker outage")
    soak.add_argument("--profile", help="rule profile (default: the bench file's)")
    soak.add_argument(
        "--skip-fault",
        action="append",
        default=[],
        metavar="NAME",
        help="leave this fault out (repeatable), by its name in docs/bench.md's list of faults (the two "
        "journal disk faults need root: the journal on a disk of its own)",
    )
    soak.add_argument("--bench", help="bench description (default hil_tests/benches/emulated.toml)")
    soak.add_argument("--workdir", help="keep the run's files here (default: a temporary directory)")
    show = sub.add_parser("show", help="print the parsed bench description")
    show.add_argument("--bench", help="bench description (TOML)")


def main(args: argparse.Namespace) -> int:
    try:
        bench = load_bench(getattr(args, "bench", None))
    except BenchError as exc:
        print(f"tablectl bench: {exc}")
        return 2
    if args.bench_cmd == "show":
        for key, value in vars(bench).items():
            print(f"{key:14} {value}")
        return 0
    if args.bench_cmd != "soak":
        print("tablectl bench: choose an action: soak, show")
        return 2
    if args.rounds < 1 or not 0 <= args.fault_rate <= 1 or args.outage_seconds < 0:
        print("tablectl bench soak: --rounds >= 1, --fault-rate in 0..1, --outage-seconds >= 0")
        return 2
    if not bench.emulated_shoe:
        print(
            "tablectl bench soak: needs the emulated shoe (scripted cards, faults); this bench has a real one"
        )
        return 2
    from tablebench.bench.soak import SoakOptions, run_soak

    opts = SoakOptions(
        rounds=args.rounds,
        seed=args.seed,
        faults=args.faults,
        fault_rate=args.fault_rate,
        outage_s=args.outage_seconds,
        profile=args.profile,
        skip_faults=tuple(args.skip_fault),
    )
    with tempfile.TemporaryDirectory(prefix="tablectl-soak-") as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        print(f"bench {bench.name}: soak {opts.rounds} rounds, seed {opts.seed}, faults {opts.faults}")

        # SIGTERM ends the soak like Ctrl-C: the run is cancelled at its next await (never in the middle of
        # starting a process) and the rig stops the service, the emulators and the broker it started (the default
        # action would kill this process alone and leave them running).
        async def soak_until_sigterm() -> Any:
            loop, task = asyncio.get_running_loop(), asyncio.current_task()
            assert task is not None
            loop.add_signal_handler(signal.SIGTERM, lambda: _stop_within(STOP_GRACE_S, task))
            return await run_soak(bench, workdir, opts, progress=lambda s: print(s, flush=True))

        try:
            result = asyncio.run(soak_until_sigterm())
        except (KeyboardInterrupt, asyncio.CancelledError):
            print("tablectl bench soak: interrupted; the bench's processes are stopped", flush=True)
            return 130
        for line in result.lines():
            print(line)
    return 0 if result.ok else 1


STOP_GRACE_S = (
    45.0  # SIGTERM: the orderly stop (rig, service, emulators, broker) gets this long, then exit 130
)


def _stop_within(grace_s: float, task: asyncio.Task[Any]) -> None:
    """Cancel the run (the rig stops what it started); if something still holds the process after ``grace_s``
    (a thread that cannot be cancelled), leave anyway with the interrupted exit code."""
    task.cancel()

    def leave() -> None:
        killed = kill_descendants()
        print(
            f"tablectl bench soak: interrupted; not stopped after {grace_s:.0f} s, leaving"
            f" (killed {len(killed)} process(es) it had started)",
            flush=True,
        )
        os._exit(130)

    timer = threading.Timer(grace_s, leave)
    timer.daemon = True
    timer.start()


def _children_of() -> dict[int, list[int]]:
    """parent pid -> its children's pids, from /proc (Linux: where the bench runs)."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        fields = stat_fields(entry.name) if entry.name.isdigit() else None
        if fields is not None:  # a process (not gone meanwhile)
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def kill_descendants(pid: int | None = None) -> list[int]:
    """SIGKILL every process below ``pid`` (default: this one), children first found, and return their pids: a
    soak that could not stop in order must not leave the service, emulators or broker holding their ports."""
    tree = _children_of()
    found: list[int] = []
    todo = [os.getpid() if pid is None else pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    for child in found:
        with contextlib.suppress(ProcessLookupError):  # gone meanwhile
            os.kill(child, signal.SIGKILL)
    return found
