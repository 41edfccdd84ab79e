"""Card latency: from the card leaving the emulated shoe to the MQTT event at a subscriber.

One run, two paths, cards alternated so they never queue behind each other:
- controller: emulated shoe (own process) -> pty -> ShoeDriver -> TableController (core + one journal COMMIT,
  WAL synchronous=FULL) -> OutboxPublisher -> MqttLink -> mosquitto -> `mosquitto_sub` (own process);
- baseline: a second emulated shoe -> pty -> ShoeDriver -> `mosquitto_pub -l` -> mosquitto -> `mosquitto_sub`.
"Leaving the shoe" is the emulator's wall-clock stamp when it sends CARD_OUT (control op ``card_times``); the
arrival is mosquitto_sub's ``%U`` stamp. Also: the cost of each stage per card (parse, state machine, journal
commit, publish hand-off), fsync on this disk, and the controller's CPU per card.

The journal runs as the service runs it: WAL checkpoints on their own thread (controller/journal/wal_checkpoints.py).
The card's COMMIT statement alone (the log's pages written and synced) is timed beside one 4 KiB fsync, with the
card commits during which the database file was written (a checkpoint inside the commit, or the thread's beside it),
and the pages each card commit appends to the log (its WAL frames, from the log's index before and after the COMMIT).
The journal commit timed is the product's work only: that counting and the files' stats are timed apart and taken
out of it, and the service log's lines written after the COMMIT (``activity.log_step``) are a stage of their own.
``--checkpoint-in-commit`` leaves SQLite's automatic checkpoint inside the COMMIT, as before issue 44 (to compare).

    python benchmarks/latency.py [--quick] [--cards N] [--checkpoint-in-commit]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    BASELINE_TABLE,
    SITE,
    TABLE,
    InProcTable,
    Subscriber,
    control,
    cpu_seconds,
    measure_fsync,
    print_table,
    start_broker,
    start_emulator,
    summary_ms,
)
from benchmarks._workload import is_card
from controller.table import activity
from controller.table.inputs import Input
from drivers import events as ev
from drivers.protocol import messages as msg
from drivers.protocol.framing import FrameDecoder, encode_frame
from tablebench.procs import stop_process

SEATS = {1: 500, 3: 500, 5: 500}
_LOG_STEP = activity.log_step  # Stages wraps it for a run; run() puts it back


def parse_cost(n: int = 20_000) -> list[float]:
    """Bytes of one CARD_OUT frame -> Frame -> CardOut (what ShoeDriver does per card, minus the acks)."""
    data = encode_frame(7, *msg.encode_event(ev.CardOut("A", "S", 7, device_time_ms=123)))
    dec = FrameDecoder()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        for frame in dec.feed(data):
            msg.decode_event(frame.type, frame.payload)
        out.append(time.perf_counter() - t)
    return out


def wal_frames(db: Path) -> int:
    """The frames in the WAL now (``mxFrame`` of the WAL index header in the ``-shm`` file: u32, native order, at
    offset 16; sqlite.org/walformat.html). 0 without a log."""
    try:
        with open(f"{db}-shm", "rb") as f:
            head = f.read(20)
    except FileNotFoundError:
        return 0
    return int(struct.unpack_from("=I", head, 16)[0]) if len(head) == 20 else 0


class TimedConnection:
    """The journal's connection with its COMMIT statements timed, whether the database file changed during each
    (in WAL mode only a checkpoint writes it), and the frames (pages) each appended to the log. Everything else is
    passed through. The time this instrumentation takes (the files' stats and the log's index read around BEGIN
    and COMMIT) is summed in ``overhead``: ``Stages`` takes it out of the commit it times."""

    def __init__(self, conn: sqlite3.Connection, db: Path) -> None:
        self._conn, self._db = conn, db
        self.executemany = (
            conn.executemany
        )  # bound once: no __getattr__ per statement inside the timed commit
        self.last_commit = 0.0
        self.last_wrote_db = False
        self.last_frames = 0
        self.overhead = 0.0  # seconds of instrumentation since the caller last zeroed it
        self._tx_frames = 0  # the log's frames when the transaction began

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("BEGIN"):
            cur = self._conn.execute(sql, *args)
            t = time.perf_counter()
            self._tx_frames = wal_frames(self._db)  # read after the lock: no other writer until COMMIT
            self.overhead += time.perf_counter() - t
            return cur
        if sql != "COMMIT":
            return self._conn.execute(sql, *args)
        t = time.perf_counter()
        before = os.stat(self._db)
        t0 = time.perf_counter()
        try:
            return self._conn.execute(sql)
        finally:
            t1 = time.perf_counter()
            self.last_commit = t1 - t0
            after = os.stat(self._db)
            self.last_wrote_db = (before.st_mtime_ns, before.st_size) != (after.st_mtime_ns, after.st_size)
            frames = wal_frames(self._db)
            # a smaller count: the log was started again (after a whole checkpoint) by this transaction
            self.last_frames = frames - self._tx_frames if frames >= self._tx_frames else frames
            self.overhead += (t0 - t) + (time.perf_counter() - t1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class Stages:
    """Wraps the table's own methods to time each stage for card inputs only.

    The card's journal commit is ``TableController._commit_many`` as the service runs it, less three things timed
    apart: the benchmark's own instrumentation (``TimedConnection.overhead``: not the product's work), and two parts
    of the product's work after the COMMIT, each reported as its own stage: the hand-off of the commit's messages to
    paho (the outbox publisher's commit listener, controller/mqtt/publisher.py) and the service log's lines
    (``activity.log_step``)."""

    def __init__(self, t: InProcTable) -> None:
        self.apply: list[float] = []
        self.commit: list[
            float
        ] = []  # the rows built, hashed and inserted, then COMMIT (and the commit listeners)
        self.commit_statement: list[float] = []  # the COMMIT alone: the log written and synced
        self.activity_log: list[float] = []  # activity.log_step after the COMMIT
        self.handoff: list[float] = []  # per card commit: all its messages handed to paho after the COMMIT
        self.instrumentation: list[
            float
        ] = []  # per card commit: the benchmark's time taken out of ``commit``
        self.db_written: list[bool] = []  # per card commit: the database file changed during its COMMIT
        self.frames: list[int] = []  # per card commit: the pages it appended to the log
        self.publish: list[float] = []
        conn = TimedConnection(t.journal._conn, t.journal.path)
        t.journal._conn = conn  # type: ignore[assignment]
        core, tc, link = t.tc.core, t.tc, t.link
        apply, states, commit, publish = core.apply, core.publish_states, tc._commit_many, link.publish
        log_step = _LOG_STEP
        last_was_card = False
        logged = handed = 0.0  # seconds in log_step, in link.publish since timed_commit zeroed them

        def timed_apply(inp: Input, now: float, **kw: Any) -> Any:
            nonlocal last_was_card
            t0 = time.perf_counter()
            try:
                return apply(inp, now, **kw)
            finally:
                last_was_card = is_card(inp)
                if last_was_card:
                    self.apply.append(time.perf_counter() - t0)

        def timed_states() -> Any:
            # A burst's state documents are built after its last event: part of that card's state machine.
            t0 = time.perf_counter()
            try:
                return states()
            finally:
                if last_was_card:
                    self.apply[-1] += time.perf_counter() - t0

        def timed_log_step(effects: list[Any]) -> None:
            nonlocal logged
            t0 = time.perf_counter()
            log_step(effects)
            logged += time.perf_counter() - t0

        def timed_commit(batch: list[tuple[Input, float, Any]]) -> None:
            nonlocal logged, handed
            conn.overhead = logged = handed = 0.0
            t0 = time.perf_counter()
            commit(batch)  # one transaction for a burst of queued events (usually one card here)
            elapsed = time.perf_counter() - t0
            if any(is_card(inp) for inp, _, _ in batch):
                self.commit.append(elapsed - conn.overhead - logged - handed)
                self.activity_log.append(logged)
                self.handoff.append(handed)
                self.instrumentation.append(conn.overhead)
                self.commit_statement.append(conn.last_commit)
                self.db_written.append(conn.last_wrote_db)
                self.frames.append(conn.last_frames)

        def timed_publish(topic: str, payload: Any, **kw: Any) -> Any:
            nonlocal handed
            t0 = time.perf_counter()
            try:
                return publish(topic, payload, **kw)
            finally:
                took = time.perf_counter() - t0
                handed += took
                if topic.endswith("events/card"):
                    self.publish.append(took)

        core.apply, core.publish_states = timed_apply, timed_states  # type: ignore[method-assign]
        tc._commit_many, link.publish = timed_commit, timed_publish  # type: ignore[method-assign]
        activity.log_step = timed_log_step  # the controller calls it as ``activity.log_step``

    def before_commit(self) -> list[float]:
        """Per card commit: its time less its COMMIT statement (the Python and statements that build the rows)."""
        return [c - s for c, s in zip(self.commit, self.commit_statement, strict=True)]


class Bench:
    def __init__(self, t: InProcTable, ctl_a: Any, ctl_b: Any, sub: Subscriber) -> None:
        self.t, self.ctl_a, self.ctl_b, self.sub = t, ctl_a, ctl_b, sub
        self.controller: list[float] = []
        self.baseline: list[float] = []
        self.base_drawn = 0

    async def _arrival(self, table: str, seq: int) -> float:
        while True:
            ts, topic, payload = await asyncio.wait_for(self.sub.messages.get(), 10)
            doc = json.loads(payload)
            got = doc.get("data", doc).get("shoe_seq")
            if f"/table/{table}/" in topic and got == seq:
                return ts

    async def card(self) -> None:
        """One controller card, then one baseline card, each waited for end to end."""
        await self.ctl_a.draw(1)
        sent = (await self.ctl_a.call("card_times"))["card_times"][-1]
        self.controller.append(await self._arrival(TABLE, sent[0]) - sent[1])
        if self.base_drawn and self.base_drawn % 250 == 0:  # refill the baseline shoe (nobody else opens it)
            await self.ctl_b.force_lid()
            await self.ctl_b.insert()
            await self.ctl_b.close_lid()
        await self.ctl_b.draw(1)
        self.base_drawn += 1
        sent = (await self.ctl_b.call("card_times"))["card_times"][-1]
        self.baseline.append(await self._arrival(BASELINE_TABLE, sent[0]) - sent[1])

    async def load(self) -> None:
        t, ctl = self.t, self.ctl_a
        total = int((await ctl.state())["cards_inside"])
        await ctl.draw(total)
        await t.until(lambda: t.tc.core.shoe.last_seq >= total, "all cards out")
        await t.tc.supervisor_action(
            "chief-bench", "open_table", {"profile": "pt-2001", "shuffler": "continuous"}
        )
        await t.until(lambda: t.tc.core.lid.state == "open", "lid open for loading")
        await ctl.insert(total // 2)
        await ctl.insert(total - total // 2)
        await ctl.close_lid()
        await t.until(lambda: t.state == "betting", "table open")
        await ctl.call("card_times")  # forget the loading draws
        while not self.sub.messages.empty():
            self.sub.messages.get_nowait()

    def _lid_refused(self) -> bool:
        last = self.t.journal.last_seq
        recent = self.t.journal.records(after_seq=max(0, last - 20), kinds=("lid_not_opened",))
        return any(True for _ in recent)

    async def round(self) -> None:
        t = self.t
        for seat, amount in SEATS.items():
            await t.tc.dealer_input("place_bet", {"seat": seat, "amount": amount})
        await t.tc.dealer_input("no_more_bets")
        while t.state in ("dealing", "players", "dealer"):
            engine = t.tc.core.round.engine
            if engine.expected_recipient() is not None:
                await self.card()
                continue
            allowed = {str(a) for a in engine.allowed_actions()}
            action = next(a for a in ("no_insurance", "stand", "hit") if a in allowed)
            await t.tc.dealer_input("decline_insurance" if action == "no_insurance" else action)
        # The lid opens by itself after settlement (PT-2001 r.60); if the shuffler is still busy it stays shut
        # and the cards are carried to the next round (r.61): the next lid cycle takes them.
        await t.until(lambda: t.tc.core.lid.state == "open" or self._lid_refused(), "lid opening or refusal")
        if t.tc.core.lid.state == "open":
            await self.ctl_a.insert()
            await t.until(lambda: t.state == "cards_returned", "cards returned")
            await self.ctl_a.close_lid()
            await t.until(lambda: t.tc.core.lid.state == "locked", "lid locked")
        await t.until(lambda: not t.tc.core.shoe.shuffling, "shuffle finished")
        await t.tc.dealer_input("next_round")


async def run(cards: int, *, checkpoint_in_commit: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        work = Path(tmp)
        broker = start_broker(work)
        procs: list[subprocess.Popen[Any]] = []
        t: InProcTable | None = None
        sub: Subscriber | None = None
        try:
            scenario = {"kind": "continuous", "decks": 6, "seed": 7, "timings": {"shuffle_s": 0.05}}
            emu_a, link_a, ctl_path_a = start_emulator(work, "shoe", scenario)
            emu_b, link_b, ctl_path_b = start_emulator(work, "base", {**scenario, "seed": 8})
            procs += [emu_a, emu_b]
            passthrough = subprocess.Popen(
                [
                    sys.executable,
                    str(Path(__file__).with_name("passthrough.py")),
                    "--shoe",
                    link_b,
                    "--host",
                    broker.host,
                    "--port",
                    str(broker.port),
                    "--user",
                    f"table-{BASELINE_TABLE}",
                    "--password",
                    "bench-base",
                    "--topic",
                    f"casino/{SITE}/table/{BASELINE_TABLE}/events/card",
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            procs.append(passthrough)
            assert passthrough.stdout is not None
            passthrough.stdout.readline()
            sub = Subscriber(broker, [f"casino/{SITE}/table/+/events/card"])
            await sub.start()
            t = InProcTable(work, link_a, broker)
            if not checkpoint_in_commit:
                t.journal.start_wal_checkpoints()  # as controller/service/resources.py opens the journal
            await t.start()
            await t.until(lambda: t.shoe.connected, "shoe link up")
            ctl_a, ctl_b = await control(ctl_path_a), await control(ctl_path_b)
            bench = Bench(t, ctl_a, ctl_b, sub)
            await bench.load()
            stages = Stages(t)
            cpu0 = cpu_seconds()
            while len(bench.controller) < cards:
                await bench.round()
            cpu = cpu_seconds() - cpu0
            rounds_inputs = t.journal.last_seq
            wal = t.journal.wal_checkpoints
            wal_file = t.journal.path.with_name(t.journal.path.name + "-wal")
            wal_pages = (wal_file.stat().st_size - 32) // (24 + 4096) if wal_file.exists() else 0
            await sub.stop()
            return {
                "controller": bench.controller,
                "baseline": bench.baseline,
                "stages": stages,
                "cpu_per_card_us": cpu / len(bench.controller) * 1e6,
                "fsync": measure_fsync(work),
                "journal_records": rounds_inputs,
                "wal_checkpoints": wal.checkpoints if wal is not None else None,
                "wal_last": wal.last_result.log_frames if wal is not None and wal.last_result else None,
                "wal_pages": wal_pages,
            }
        finally:
            activity.log_step = _LOG_STEP
            if sub is not None:
                await sub.stop()
            if t is not None:
                await t.stop()
            for p in procs:
                stop_process(p)
            broker.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a short run (~30 cards)")
    ap.add_argument("--cards", type=int, default=None, help="controller cards to measure (default 2000)")
    ap.add_argument(
        "--checkpoint-in-commit",
        action="store_true",
        help="SQLite's automatic WAL checkpoint inside the COMMIT (the journal before issue 44), to compare",
    )
    a = ap.parse_args()
    cards = a.cards or (30 if a.quick else 2000)
    r = asyncio.run(run(cards, checkpoint_in_commit=a.checkpoint_in_commit))
    st: Stages = r["stages"]
    print_table(
        f"card latency, shoe -> subscriber ({len(r['controller'])} cards each, same run, alternated)",
        {
            "controller (core+journal+outbox)": summary_ms(r["controller"]),
            "baseline (pty -> mosquitto_pub -l)": summary_ms(r["baseline"]),
        },
    )
    print_table(
        "stage cost per card (ms)",
        {
            "parse (frame -> CardOut)": summary_ms(parse_cost(2000 if a.quick else 20_000)),
            "state machine (core.apply)": summary_ms(st.apply),
            "journal commit (rows + COMMIT)": summary_ms(st.commit),
            "  COMMIT statement (log + fsync)": summary_ms(st.commit_statement),
            "  before COMMIT (Python + SQL)": summary_ms(st.before_commit()),
            "hand-off to paho (a commit's msgs)": summary_ms(st.handoff),
            "activity log (after COMMIT)": summary_ms(st.activity_log),
            "publish hand-off (paho)": summary_ms(st.publish),
            "fsync 4 KiB on this disk": r["fsync"],
        },
    )
    ctl_p99, base_p99 = summary_ms(r["controller"])["p99"], summary_ms(r["baseline"])["p99"]
    fsync_p99, commit_p99 = r["fsync"]["p99"], summary_ms(st.commit)["p99"]
    bound = 2 * (base_p99 + fsync_p99)
    with_db = summary_ms(t for t, wrote in zip(st.commit_statement, st.db_written, strict=True) if wrote)
    without_db = summary_ms(
        t for t, wrote in zip(st.commit_statement, st.db_written, strict=True) if not wrote
    )
    instrumented = sum(st.instrumentation) / max(len(st.commit), 1) * 1e3  # ms a commit, taken out
    frames_mean = sum(st.frames) / max(len(st.frames), 1)
    frames_p50 = sorted(st.frames)[len(st.frames) // 2] if st.frames else 0
    where = (
        "SQLite's, inside the COMMIT (--checkpoint-in-commit)"
        if r["wal_checkpoints"] is None
        else f"{r['wal_checkpoints']} on their own thread (the log at the last one: {r['wal_last']} frames)"
    )
    print(
        f"\n  journal commit p99 {commit_p99:.3f} ms = {commit_p99 / max(fsync_p99, 0.001):.1f} x one fsync's p99"
        f" ({fsync_p99:.3f} ms);"
        f" COMMIT statement p99 {summary_ms(st.commit_statement)['p99']:.3f} ms"
        f"\n  pages appended to the log per card commit (WAL frames of 4 KiB): mean {frames_mean:.1f},"
        f" p50 {frames_p50}, max {max(st.frames, default=0)}"
        f"\n  WAL checkpoints: {where}; the log file's size: {r['wal_pages']} pages"
        f"\n  card commits during which the database file was written: {sum(st.db_written)} of {len(st.commit)},"
        f" their COMMIT p50 {with_db['p50'] if with_db['n'] else '-'} ms (the others' {without_db['p50']} ms)"
        f"\n  timed as the journal commit: TableController._commit_many (BEGIN, the rows built, hashed and"
        f" inserted, COMMIT, the commit listeners)\n    less three things timed apart: the outbox listener's hand-off"
        f" of the commit's messages to paho and activity.log_step (rows of their own),\n    and the benchmark's page"
        f" counting and file stats around BEGIN and COMMIT (mean {instrumented:.3f} ms a commit, not the product's)"
        f"\n  bound 2 x (pass-through p99 + fsync p99) = {bound:.3f} ms; controller p99 {ctl_p99:.3f} ms:"
        f" {'met' if ctl_p99 <= bound else 'missed'}"
    )
    print(
        f"\n  controller process CPU per card: {r['cpu_per_card_us']:.0f} us "
        "(all inputs of the rounds, the driver and the emulator clients included)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
