"""Sustained card rate through core -> journal COMMIT (fsync) -> outbox -> mosquitto, with zero loss.

Workload (benchmarks/_workload.py): many short rounds of 7 seats on a continuous shuffler table, so every card
is one the table accepts (a seat hitting repeatedly would bust; a closed table only counts cards). The cards
and the shoe's lid events are delivered as device events through the driver interface (``FakeShoe``: no pty,
so the figure is the pipeline after the serial link; the link itself is in latency.py's baseline). The
dealer's inputs between cards (bets, stand/hit, next round) go through the same journal and are not counted
as cards. Offered rate: ``--rate`` cards/s (paced; a slot missed is a card late); ``--rate 0`` = flat out.
Loss: every ``events/card`` must reach a ``mosquitto_sub`` subscriber; queues: the shoe's event queue, outbox
rows and in-flight PUBLISHes are sampled.

Two ways of delivering the shoe's events, both printed:
- **shoe-paced** (the rows "offered ..." and "flat out"): the shoe sends on its own clock, as the serial link
  does (the driver acknowledges a frame when it arrives, not when the table has committed it: docs/protocol.md
  §5), so events that arrive while a commit is running queue and go into the next commit together
  (``InputFeeds.pump``, controller/table/input_feeds.py). A dealer input waits until every event sent before it
  is committed (the dealer reacts to what the pit terminal shows). The inputs are decided in advance on a copy
  of the table's core (``script``), so the shoe need not wait for the table to know what comes next.
- **lock-step** (the row "lock-step flat out"): every input is delivered only after the previous one is
  committed: one transaction and one fsync per input, whatever the rate (what a shoe dealing 1-2 cards/s
  gives; the upper bound of CPU per card).

    python benchmarks/throughput.py [--quick] [--rate 500] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    SITE,
    TABLE,
    InProcTable,
    Subscriber,
    cpu_seconds,
    measure_commit_floor,
    start_broker,
)
from benchmarks._workload import RoundWorkload, is_card, opening_inputs
from controller.table import inputs
from tablebench.fake_shoe import FakeShoe


class StageClock:
    """CPU time (this thread's, ``time.thread_time``) spent inside a few methods, for the per-card breakdown.
    The wrappers cost about a microsecond per call; the process total is measured without them."""

    STAGES = (
        ("core", "controller.table.core", "TableCore", "apply"),
        ("core", "controller.table.core", "TableCore", "publish_states"),  # a burst's documents, once
        ("journal", "controller.shell.controller", "TableController", "_commit_many"),
        ("publish", "controller.mqtt.publisher", "OutboxPublisher", "_pump"),
        ("workload", "benchmarks._workload", "RoundWorkload", "next_input"),
    )

    def __init__(self) -> None:
        self.spent = dict.fromkeys((s[0] for s in self.STAGES), 0.0)
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> StageClock:
        import importlib

        for label, module, cls_name, method in self.STAGES:
            cls = getattr(importlib.import_module(module), cls_name)
            original = getattr(cls, method)
            self._saved.append((cls, method, original))
            setattr(cls, method, self._timed(label, original))
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, method, original in self._saved:
            setattr(cls, method, original)

    def _timed(self, label: str, fn: Any) -> Any:
        spent = self.spent

        def timed(*args: Any, **kw: Any) -> Any:
            t = time.thread_time()
            try:
                return fn(*args, **kw)
            finally:
                spent[label] += time.thread_time() - t

        return timed


async def run(rate: float, seconds: float, *, lock_step: bool = False) -> dict[str, Any]:
    with StageClock() as clock:
        return await _run(rate, seconds, clock, lock_step)


def script(core: Any, cards: int) -> list[inputs.Input]:
    """The inputs that follow, decided on a copy of the table's core (the workload reads the table's state
    to know whose card comes next). Documents are left out: they change nothing the workload reads."""
    from controller.rules.profiles import load_profile
    from controller.table.core import TableCore

    shadow = TableCore(load_profile)
    shadow.restore(core.snapshot())
    wl = RoundWorkload()
    out: list[inputs.Input] = []
    now = time.time()
    while wl.cards < cards:
        inp = wl.next_input(shadow)
        shadow.apply(inp, now, states=False)
        out.append(inp)
    return out


async def _run(rate: float, seconds: float, clock: StageClock, lock_step: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        work = Path(tmp)
        broker = start_broker(work)
        sub = Subscriber(broker, [f"casino/{SITE}/table/{TABLE}/events/card"])
        shoe = FakeShoe()
        t = InProcTable(work, "", broker, shoe=shoe)
        try:
            await sub.start()
            await t.start()
            progress = Progress(t)
            for inp in opening_inputs():
                await progress.deliver(inp)
            plan = None if lock_step else script(t.tc.core, int(seconds * (rate or MAX_SCRIPTED_RATE)) + 50)
            wl = RoundWorkload()
            cards = late = 0
            max_outbox = max_inflight = max_queue = 0
            cpu0, t0, main0 = cpu_seconds(), time.monotonic(), time.thread_time()
            spent0 = dict(clock.spent)
            next_slot = t0
            i = 0
            while time.monotonic() - t0 < seconds:
                if plan is None:
                    inp = wl.next_input(t.tc.core)
                elif i < len(plan):
                    inp, i = plan[i], i + 1
                else:
                    break  # the script ran out: the table went faster than MAX_SCRIPTED_RATE (printed)
                if is_card(inp) and rate:
                    now = time.monotonic()
                    if now < next_slot:
                        await asyncio.sleep(next_slot - now)
                    elif now - next_slot > 1 / rate:
                        late += 1
                    next_slot += 1 / rate
                if plan is None:
                    await progress.deliver(inp)
                else:
                    await progress.send(inp, hold=not rate)
                if is_card(inp):
                    cards += 1
                    if cards % 50 == 0:
                        max_outbox = max(max_outbox, t.publisher.outbox_size)
                        max_inflight = max(max_inflight, t.publisher.in_flight)
                        max_queue = max(max_queue, progress.queued)
            await progress.drained()  # the figures cover every card until the broker has acknowledged it
            elapsed = time.monotonic() - t0
            cpu = cpu_seconds() - cpu0
            main = time.thread_time() - main0
            spent = {k: clock.spent[k] - spent0[k] for k in clock.spent}
            seen: set[int] = set()
            end = time.monotonic() + 30
            while len(seen) < cards and time.monotonic() < end:
                try:
                    _, _, payload = await asyncio.wait_for(sub.messages.get(), 1)
                except TimeoutError:
                    continue
                seen.add(json.loads(payload)["data"]["shoe_seq"])
            return {
                "rate": rate,
                "seconds": elapsed,
                "cards": cards,
                "cards_per_s": cards / elapsed,
                "late": late,
                "delivered": len(seen),
                "lost": cards - len(seen),
                "max_shoe_queue": max_queue,
                "max_outbox": max_outbox,
                "max_in_flight": max_inflight,
                # device events per journal transaction (1.0 in lock-step; > 1 when events queued)
                "events_per_commit": progress.device_events / max(progress.device_commits, 1),
                "commits_per_card": progress.commits / cards,
                "cpu_per_card_us": cpu / cards * 1e6,
                # where it goes (per card): the table core, the journal commit (rows + COMMIT + fsync's CPU),
                # the outbox pump handing rows to paho, threads other than the loop's (paho has none now:
                # controller/mqtt/aio.py), the rest of the loop (paho's socket I/O, PUBACKs, asyncio)
                **{f"{k}_us": v / cards * 1e6 for k, v in spent.items()},
                "other_threads_us": (cpu - main) / cards * 1e6,
                "loop_rest_us": (main - sum(spent.values())) / cards * 1e6,
                "outbox_after": t.publisher.outbox_size,
            }
        finally:
            await sub.stop()
            await t.stop()
            broker.stop()


# Flat out, the shoe-paced run scripts this many cards per second of run (beyond it the run ends early).
MAX_SCRIPTED_RATE = 3000
# Flat out, the shoe holds back while this many of its events wait for the table, or outbox rows for PUBACK.
QUEUE_CAP = 64
OUTBOX_CAP = 512


class Progress:
    """How far the table has got: device events sent through the shoe vs committed (journal listener)."""

    def __init__(self, t: InProcTable) -> None:
        self.t = t
        self.sent = self.done = 0
        self.commits = self.device_commits = self.device_events = 0
        self._changed = asyncio.Event()
        self._checks = 0
        t.journal.add_commit_listener(self._on_commit)

    def _on_commit(self, tx: Any) -> None:
        self.commits += 1
        n = sum(1 for r in tx.records if r.kind == "input" and r.data["input"].get("type") == "device")
        if n:
            self.done += n
            self.device_commits += 1
            self.device_events += n
            self._changed.set()

    @property
    def queued(self) -> int:
        return self.sent - self.done

    async def send(self, inp: inputs.Input, *, hold: bool = False) -> None:
        """Shoe-paced: a device event goes to the shoe's queue at once; a dealer input waits for the table.
        ``hold`` (flat out): the shoe holds back while the table's queues are full, so the rate it reaches is
        one the table sustains with bounded queues (at a fixed offered rate it does not, like a real shoe)."""
        if isinstance(inp, inputs.DeviceInput):
            if hold:
                await self._room()
            self.t.shoe.push(inp.event)
            self.sent += 1
            return
        await self.settle()
        await self.submit(inp)

    async def _room(self) -> None:
        if self.queued >= QUEUE_CAP:
            while self.queued >= QUEUE_CAP // 2:
                self._changed.clear()
                await self._changed.wait()
        self._checks += 1
        if self._checks % 16 == 0 and self.t.publisher.outbox_size >= OUTBOX_CAP:
            while self.t.publisher.outbox_size >= OUTBOX_CAP // 2:
                await asyncio.sleep(0.002)  # PUBACKs free the outbox; a short poll only while it is full

    async def drained(self) -> None:
        """Every device event committed, every outbox row acknowledged by the broker."""
        await self.settle()
        while self.t.publisher.outbox_size or self.t.publisher.in_flight:
            await asyncio.sleep(0.002)

    async def deliver(self, inp: inputs.Input) -> None:
        """Lock-step: every input committed before the next is delivered."""
        await self.send(inp)
        await self.settle()

    async def settle(self) -> None:
        """Until every device event sent is committed (no busy wait: CPU figures stay honest)."""
        while self.done < self.sent:
            self._changed.clear()
            await self._changed.wait()

    async def submit(self, inp: inputs.Input) -> None:
        if isinstance(inp, inputs.DealerInput):
            await self.t.tc.dealer_input(inp.action, inp.args)
        elif isinstance(inp, inputs.SupervisorInput):
            await self.t.tc.supervisor_action(inp.user, inp.action, inp.args, role=inp.role)
        else:
            raise TypeError(f"the workload gave {inp!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s per rate instead of 60 s")
    ap.add_argument("--rate", type=float, default=500.0, help="offered cards/s (0: flat out)")
    ap.add_argument("--seconds", type=float, default=None)
    a = ap.parse_args()
    seconds = a.seconds or (2.0 if a.quick else 60.0)
    print(f"\n== throughput: core + journal (fsync per commit) + outbox + mosquitto, {seconds:.0f} s per run")
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        floor = measure_commit_floor(Path(tmp), 200 if a.quick else 2000)
    print(
        "  baseline: bare durable commit (SQLite WAL, synchronous=FULL, one row, same disk): "
        f"cpu_per_commit_us={floor['cpu_us']:.1f}  wall_per_commit_us={floor['wall_us']:.1f}"
    )
    runs = [(a.rate, False), (0.0, False), (0.0, True)] if a.rate else [(0.0, False), (0.0, True)]
    for rate, lock_step in runs:
        r = asyncio.run(run(rate, seconds, lock_step=lock_step))
        label = ("lock-step " if lock_step else "") + (f"offered {rate:.0f}/s" if rate else "flat out")
        print(
            f"  {label:<14} "
            + "  ".join(f"{k}={round(v, 1) if isinstance(v, float) else v}" for k, v in r.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
