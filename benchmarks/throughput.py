"""Sustained card rate through core -> journal COMMIT (fsync) -> outbox -> mosquitto, with zero loss.

Workload (benchmarks/_workload.py): many short rounds of 7 seats on a continuous shuffler table, so every card
is one the table accepts (a seat hitting repeatedly would bust; a closed table only counts cards). The cards
and the shoe's lid events are delivered as device events through the driver interface (``FakeShoe``: no pty,
so the figure is the pipeline after the serial link; the link itself is in latency.py's baseline). The
dealer's inputs between cards (bets, stand/hit, next round) go through the same journal and are not counted
as cards. Offered rate: ``--rate`` cards/s (paced; a slot missed is a card late); ``--rate 0`` = flat out.
Loss: every ``events/card`` must reach a ``mosquitto_sub`` subscriber; queues: outbox rows and in-flight
PUBLISHes are sampled.

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
from drivers.fake_shoe import FakeShoe


class StageClock:
    """CPU time (this thread's, ``time.thread_time``) spent inside a few methods, for the per-card breakdown.
    The wrappers cost about a microsecond per call; the process total is measured without them."""

    STAGES = (
        ("core", "controller.table.core", "TableCore", "apply"),
        ("journal", "controller.table.controller", "TableController", "_commit_many"),
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


async def run(rate: float, seconds: float) -> dict[str, Any]:
    with StageClock() as clock:
        return await _run(rate, seconds, clock)


async def _run(rate: float, seconds: float, clock: StageClock) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        work = Path(tmp)
        broker = start_broker(work)
        sub = Subscriber(broker, [f"casino/{SITE}/table/{TABLE}/events/card"])
        shoe = FakeShoe()
        t = InProcTable(work, "", broker, shoe=shoe)
        try:
            await sub.start()
            await t.start()
            committed = asyncio.Event()
            t.journal.add_commit_listener(lambda tx: committed.set())
            for inp in opening_inputs():
                await deliver(t, shoe, inp, committed)
            wl = RoundWorkload()
            cards = late = 0
            max_outbox = max_inflight = 0
            cpu0, t0, main0 = cpu_seconds(), time.monotonic(), time.thread_time()
            spent0 = dict(clock.spent)
            next_slot = t0
            while time.monotonic() - t0 < seconds:
                inp = wl.next_input(t.tc.core)
                if is_card(inp) and rate:
                    now = time.monotonic()
                    if now < next_slot:
                        await asyncio.sleep(next_slot - now)
                    elif now - next_slot > 1 / rate:
                        late += 1
                    next_slot += 1 / rate
                await deliver(t, shoe, inp, committed)
                if is_card(inp):
                    cards += 1
                    if cards % 50 == 0:
                        max_outbox = max(max_outbox, t.publisher.outbox_size)
                        max_inflight = max(max_inflight, t.publisher.in_flight)
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
                "rounds": wl.rounds,
                "cards_per_s": cards / elapsed,
                "late": late,
                "delivered": len(seen),
                "lost": cards - len(seen),
                "max_outbox": max_outbox,
                "max_in_flight": max_inflight,
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


async def deliver(t: InProcTable, shoe: FakeShoe, inp: dict[str, Any], committed: asyncio.Event) -> None:
    """Device events go through the shoe interface and the table's pump; dealer inputs are submitted."""
    if inp["type"] == "device":
        committed.clear()
        shoe.push(inputs.decode_event(inp))
        await committed.wait()  # the pump took it and committed it (no busy wait: CPU figures stay honest)
    elif inp["type"] == "dealer":
        await t.tc.dealer_input(inp["action"], inp["args"])
    else:
        await t.tc.supervisor_action(inp["user"], inp["action"], inp["args"], role=inp["role"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s per rate instead of 60 s")
    ap.add_argument("--rate", type=float, default=500.0, help="offered cards/s (0: flat out)")
    ap.add_argument("--seconds", type=float, default=None)
    a = ap.parse_args()
    seconds = a.seconds or (2.0 if a.quick else 60.0)
    print(f"\n== throughput: core + journal (fsync per input) + outbox + mosquitto, {seconds:.0f} s per rate")
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        floor = measure_commit_floor(Path(tmp), 200 if a.quick else 2000)
    print(
        "  baseline: bare durable commit (SQLite WAL, synchronous=FULL, one row, same disk): "
        f"cpu_per_commit_us={floor['cpu_us']:.1f}  wall_per_commit_us={floor['wall_us']:.1f}"
    )
    for rate in (a.rate, 0.0) if a.rate else (0.0,):
        r = asyncio.run(run(rate, seconds))
        label = f"offered {rate:.0f}/s" if rate else "flat out"
        print(
            f"  {label:<14} "
            + "  ".join(f"{k}={round(v, 1) if isinstance(v, float) else v}" for k, v in r.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
