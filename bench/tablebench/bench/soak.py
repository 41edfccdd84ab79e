"""`tablectl bench soak`: N rounds on the real service with faults injected at random, then reconciliation.

The table runs a continuous shuffler loaded empty through its window (PT-2001 r.53-54); each round has 1-3
seats with random bets (integer minor units), sometimes a scripted card order (pairs, aces, small cards), and,
with ``--faults``, one fault at a random step: jam, forced lid, kill -9 of the controller, broker outage,
serial unplug, lost acks, unreadable card, a 1e-3 bit-error rate, kill -9 between a card's arrival and its
commit, broker SIGKILL, power loss (service and broker killed together), a sustained 3e-3 bit-error rate, the
journal's disk full or read-only as a card is drawn (the journal on an ext4 image of its own: root only). The
consumer whose view is reconciled is the rig's monitor: its own account on a persistent MQTT 3.1.1 session,
every event id checked against the journal's. At the end the session is closed (deck
check, PT-2001 r.55) and `reconcile` proves nothing was lost or misattributed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from tablebench.bench import faults as F
from tablebench.bench import journal_disk
from tablebench.bench.config import BenchConfig
from tablebench.bench.driver import BenchTimeout, Dealer
from tablebench.bench.journal_disk import JournalDisk
from tablebench.bench.journal_probe import last_committed_event_id
from tablebench.bench.reconcile import Reconciliation, reconcile
from tablebench.bench.rig import Rig
from tablebench.emulator.control_client import ControlCallError

SCRIPTS = (
    ["8S", "8H", "2C", "8D", "8C"],  # seat 1 pair of eights after the burn: a split (PT-2001 r.26)
    ["5S", "6H", "9C", "5D"],  # small cards: doubles and hits
    ["AS", "KH", "AD"],  # aces: blackjack / insurance offers (r.33)
    ["TS", "TH", "6C", "TD", "9C"],  # stiff hands against a small card
)


@dataclass
class SoakOptions:
    rounds: int = 20
    seed: int = 1
    faults: bool = False
    fault_rate: float = 0.2
    outage_s: float = 1.0
    profile: str | None = None
    skip_faults: tuple[str, ...] = ()


@dataclass
class SoakResult:
    rounds_played: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    reconciliation: Reconciliation | None = None
    kills_before_commit: int = 0  # kill -9 that landed between a card's ack and its commit
    journal_disk_faults: Counter[str] = field(default_factory=Counter)  # that met a card: full, read_only
    written_off: list[int] = field(default_factory=list)  # event ids a broker crash destroyed
    refetched: list[int] = field(default_factory=list)  # event ids the observer got only by asking again
    aborted: str = ""  # why the run stopped early (the product failed under a fault)

    @property
    def ok(self) -> bool:
        return not self.aborted and self.reconciliation is not None and self.reconciliation.ok

    def lines(self) -> list[str]:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        out = [
            f"soak: {self.rounds_played} rounds in {self.seconds:.0f} s",
            f"  faults injected        {sum(self.faults.values())}: {faults}",
        ]
        if self.faults.get("kill_before_commit"):
            out.append(
                f"  kill -9 before commit {self.kills_before_commit} landed between a card's ack and its commit"
            )
        if self.journal_disk_faults:
            done = ", ".join(f"{k} {v}" for k, v in sorted(self.journal_disk_faults.items()))
            out.append(f"  journal disk faults    {done} met a card drawn (journal_io raised, cleared)")
        if self.refetched:
            out.append(
                f"  refetched by observer  {len(self.refetched)} event id(s) asked for again (cmd/replay)"
            )
        if self.written_off:
            out.append(
                f"  lost to the observer   {len(self.written_off)} event id(s) a broker crash destroyed: "
                f"{self.written_off[:20]}"
            )
        if self.aborted:
            out.append(f"[FAIL] run aborted: {self.aborted}")
        if self.reconciliation is not None:
            out += self.reconciliation.lines()
        return out


def _bets(rng: random.Random) -> dict[int, int]:
    seats = sorted(rng.sample(range(1, 8), rng.randint(1, 3)))
    return {s: rng.randrange(500, 5001, 500) for s in seats}  # PT-2001 r.14: multiples of the minimum


async def _wait_outbox_empty(path: Path, tries: int = 500) -> None:
    def size() -> int:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM outbox").fetchone()[0])
        finally:
            conn.close()

    for _ in range(tries):
        if await asyncio.to_thread(size) == 0:
            return
        await asyncio.sleep(0.02)


async def reconcile_rig(d: Dealer) -> Reconciliation:
    """Let every event reach the consumer, stop the service cleanly, then reconcile (module docstring)."""
    rig = d.rig
    dealt = await rig.ctl().dealt() if rig.shoe is not None else None
    alive = rig.stack.controller_proc is not None and rig.stack.controller_proc.poll() is None
    if alive:
        await _wait_outbox_empty(rig.journal_path)
        with contextlib.suppress(BenchTimeout):  # what did not arrive shows up as gaps below
            await d.barrier()
        target = last_committed_event_id(str(rig.journal_path))
        with contextlib.suppress(TimeoutError):  # what the observer never got shows up as gaps below
            await rig.observer.wait_for(lambda v: rig.observer.received.contiguous >= target, 15)
        seen = rig.observer.received.seen
        # a consumer that finds a gap asks the table for it again (docs/reliability.md); what the table does
        # not serve stays a gap
        await rig.observer.refetch([i for i in range(rig.initial_event_id + 1, target + 1) if i not in seen])
    await asyncio.to_thread(rig.stack.stop_controller)
    mon = rig.observer  # its own session, used for nothing else: every id it got against the journal
    return reconcile(
        rig.journal_path,
        dealt=dealt,
        first_seen_ids=mon.first_seen_ids(),
        received=sum(1 for e, _, _ in mon.received.log if isinstance(e, int)),
        invalid=mon.received.invalid,
        table_id=rig.bench.table_id,
        since=rig.initial_event_id,
        stale_states=mon.received.stale_states,
    )


async def run_soak(
    bench: BenchConfig, workdir: Path, opts: SoakOptions, progress: Callable[[str], None] = print
) -> SoakResult:
    rng = random.Random(opts.seed)
    result = SoakResult()
    scenario = {**bench.scenario, "seed": opts.seed, "start_empty": True}
    scenario.setdefault("kind", "continuous")
    started = time.monotonic()
    faults = {**F.MID_ROUND, "broker_outage": partial(F.broker_outage, seconds=opts.outage_s)}
    if bench.broker == "external":
        for name in ("broker_outage", "broker_kill", "power_loss"):
            faults.pop(name)
    for name in opts.skip_faults:
        faults.pop(name, None)
    disk = _journal_disk(workdir, opts, faults, progress)
    rig = Rig(bench, workdir, scenario=scenario, profile=opts.profile)
    rig.journal_disk = disk
    try:
        await _run(SoakRun(rig, bench, opts, rng, faults, result, started, progress))
    finally:
        if disk is not None:
            await asyncio.to_thread(disk.close)
    result.seconds = time.monotonic() - started
    return result


def _journal_disk(
    workdir: Path, opts: SoakOptions, faults: dict[str, F.Fault], progress: Callable[[str], None]
) -> JournalDisk | None:
    """The journal on a disk of its own when the journal disk faults are in the run; else they are left out
    with one line saying why (not root)."""
    wanted = [name for name in F.JOURNAL_DISK if name in faults]
    if not opts.faults or not wanted:
        return None
    why = journal_disk.unavailable()
    if why:
        for name in wanted:
            faults.pop(name)
        progress(f"soak: {' and '.join(wanted)} skipped: {why}")
        return None
    workdir.mkdir(parents=True, exist_ok=True)
    disk = JournalDisk(workdir / "state", workdir / "journal-disk.img")
    disk.create()
    return disk


@dataclass(frozen=True, slots=True)
class SoakRun:
    """What one soak run works with: the rig, its settings, the seeded randomness, the fault kinds, the result
    being filled in, and where progress goes."""

    rig: Rig
    bench: BenchConfig
    opts: SoakOptions
    rng: random.Random
    faults: dict[str, F.Fault]
    result: SoakResult
    started: float
    progress: Callable[[str], None]


async def _run(run: SoakRun) -> None:
    rig, result = run.rig, run.result
    async with rig:
        d = Dealer(rig, seed=run.opts.seed)
        await d.open_session()
        try:
            await _play(d, run)
            await d.close_session()
        except Exception as exc:  # report what failed, then reconcile whatever the journal holds
            result.aborted = f"after {result.rounds_played} rounds: {type(exc).__name__}: {exc}"
        result.reconciliation = await reconcile_rig(d)
        result.kills_before_commit = d.kills_before_commit
        result.journal_disk_faults = Counter(d.journal_disk_faults)
        result.written_off = list(rig.monitor.received.written_off)
        result.refetched = list(rig.observer.received.refetched)


async def _play(d: Dealer, run: SoakRun) -> None:
    rig, bench, opts, rng, faults, result = run.rig, run.bench, run.opts, run.rng, run.faults, run.result
    started, progress = run.started, run.progress
    for i in range(opts.rounds):
        order = None
        if rng.random() < 0.3:
            order = list(rng.choice(SCRIPTS))
        hook = None
        noisy = False
        if opts.faults and rng.random() < opts.fault_rate:
            name = rng.choice(sorted(faults))
            at = rng.randint(0, 6)
            result.faults[name] += 1
            noisy = name in F.NOISY

            async def hook(step: int, name: str = name, at: int = at) -> None:
                if step == at:
                    await faults[name](d)

        bets = _bets(rng)
        chips = tuple(s for s in bets if rig.stack.opts.jackpot and bench.fake_gpio and rng.random() < 0.3)
        try:
            await d.play_round(bets, order, hook=hook, chips=chips)
        except ControlCallError as exc:  # a scripted card no longer inside: play it unscripted
            if "left inside" not in str(exc):
                raise
            await d.play_round(bets, None, hook=hook, chips=chips)
        if noisy:
            await F.quiet_line(d)
        await d.finish_round()
        result.rounds_played += 1
        if (i + 1) % 100 == 0:
            progress(f"  ... {i + 1} rounds ({time.monotonic() - started:.0f} s)")
