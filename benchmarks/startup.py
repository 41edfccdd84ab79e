"""Start-up and restart-after-kill-9 to ready, with a journal of N events (default 1,000,000).

The journal is generated quickly with the journal API (records copied from real rounds played on the core,
hash-chained, committed in large transactions; the outbox empty as after normal operation) and a snapshot at
its end, as the controller writes one every 100 inputs. Then the real service process starts through
bench/tablebench/stack.py (broker, emulated shoe on a pty, `tablectl run`) with NOTIFY_SOCKET pointing at a socket
this script listens on. Ready = the READY=1 datagram (sd_notify), and also the first retained ``status``
``online`` the service publishes (seen by mosquitto_sub). Then kill -9 and start again, measured the same way.
The same is done with a small journal to show whether start-up grows with the journal.

The journal carries signed checkpoints every 50,000 records (``checkpoint`` records signed with the table's audit
key, as the Checkpointer writes them) and one after the snapshot, as a running table leaves it. Start-up verifies
only the records after the last checkpoint (``Journal.verify_since_checkpoint``); the same run also times that
walk in-process beside the baseline, the full walk (``Journal.verify``), on the same file.

    python benchmarks/startup.py [--quick] [--events N]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._workload import RoundWorkload, opening_inputs
from controller.audit.checkpoint import public_key_hex
from controller.audit.keys import default_key_path, load_or_create
from controller.effects import JournalRecord
from controller.journal import Journal
from controller.journal.checkpointer import Checkpointer
from controller.rules.profiles import load_profile
from controller.table import inputs
from controller.table.core import TableCore
from tablebench.stack import Stack, StackOptions
from tablebench.table_testing import Harness


def sample_records(rounds: int = 20) -> list[tuple[str, dict[str, Any]]]:
    """(kind, data) of the records real rounds write: the inputs and the records they caused."""
    h = Harness()
    for inp in opening_inputs():
        h.apply(inp)
    wl, out = RoundWorkload(), []
    while wl.rounds < rounds:
        inp = wl.next_input(h.core)
        step = h.apply(inp)
        out.append(("input", {"input": inputs.encode(inp), "now": h.now}))
        out.extend((fx.kind, fx.data) for fx in step.effects if isinstance(fx, JournalRecord))
    return out


CHECKPOINT_EVERY = 50_000  # records between two signed checkpoints in the generated journal


def generate_journal(path: Path, events: int, table_id: str) -> float:
    """The journal, with the table's audit key (in the state directory, where `tablectl config record` and the
    service find it) signing a checkpoint every CHECKPOINT_EVERY records and one after the snapshot."""
    t0 = time.monotonic()
    sample = sample_records()
    key = load_or_create(default_key_path(path.parent))
    j = Journal(path, table_id=table_id)
    j._conn.execute("PRAGMA synchronous=OFF")  # generation only: one sync at the end
    signer = Checkpointer(j, key, site="S1", table=table_id)
    written = 0
    while written < events:
        with j.transaction() as tx:
            for _ in range(min(CHECKPOINT_EVERY, events - written)):
                kind, data = sample[written % len(sample)]
                tx.append(kind, data)
                written += 1
        signer.write()
    j.save_snapshot(TableCore(load_profile).snapshot())  # a closed table; nothing to replay after it
    signer.write()
    j.outbox_ack([r.event_id for r in j.outbox_pending(limit=100_000)])  # all published long ago
    j.flush_acks()
    j._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    j.close()
    return time.monotonic() - t0


def time_verification(path: Path) -> dict[str, Any]:
    """In-process: the start-up walk (since the last checkpoint) beside the baseline, the full walk."""
    public = public_key_hex(load_or_create(default_key_path(path.parent)).public_key())
    j = Journal(path, audit_public_key=public)
    try:
        t0 = time.monotonic()
        incremental = j.verify_since_checkpoint()
        t1 = time.monotonic()
        full = j.verify()
        t2 = time.monotonic()
    finally:
        j.close()
    assert incremental.ok and full.ok, (incremental, full)
    return {
        "verify_since_checkpoint_s": round(t1 - t0, 4),
        "records_walked": incremental.records,
        "baseline_full_verify_s": round(t2 - t1, 2),
        "records": full.records,
    }


class Ready:
    """Listens for sd_notify datagrams and the service's ``status`` topic; records when each says ready."""

    def __init__(self, sock_path: Path, stack: Stack) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(sock_path))
        self.ready_at: list[float] = []
        self.online_at: list[float] = []
        self.stack = stack
        self.sub: subprocess.Popen[str] | None = None
        threading.Thread(target=self._notify, daemon=True).start()

    def _notify(self) -> None:
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            if b"READY=1" in data.split(b"\n"):
                self.ready_at.append(time.monotonic())

    def watch_status(self) -> None:
        s = self.stack
        cmd = [
            "stdbuf",
            "-oL",
            "mosquitto_sub",
            "-h",
            s.host,
            "-p",
            str(s.port),
            "-u",
            "monitor",
            "-P",
            s.users["monitor"],
            "-R",
            "-t",
            f"{s.prefix}/status",
        ]
        self.sub = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)

        def read() -> None:
            assert self.sub and self.sub.stdout
            for line in self.sub.stdout:
                if line.strip() == "online":
                    self.online_at.append(time.monotonic())

        threading.Thread(target=read, daemon=True).start()
        time.sleep(0.3)

    def wait_next(self, after: tuple[int, int], timeout: float = 60.0) -> tuple[float | None, float | None]:
        """The first READY and ``online`` seen after ``after`` = (len(ready_at), len(online_at)) earlier."""
        end = time.monotonic() + timeout
        while (len(self.ready_at) <= after[0] or len(self.online_at) <= after[1]) and time.monotonic() < end:
            time.sleep(0.005)
        ready = self.ready_at[after[0]] if len(self.ready_at) > after[0] else None
        online = self.online_at[after[1]] if len(self.online_at) > after[1] else None
        return ready, online

    def marks(self) -> tuple[int, int]:
        return len(self.ready_at), len(self.online_at)

    def close(self) -> None:
        self.sock.close()
        if self.sub:
            self.sub.terminate()
            self.sub.wait()


def measure(events: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        stack = Stack(work / "stack", StackOptions(jackpot=False, table_id="bench1"))
        gen = generate_journal(work / "stack" / "state" / "journal.db", events, "bench1")
        os.environ["NOTIFY_SOCKET"] = str(work / "notify.sock")
        ready = Ready(work / "notify.sock", stack)
        try:
            stack.start()  # broker, shoe, config and a first run of the service (not timed)
            ready.watch_status()
            ready.wait_next((0, 0), timeout=30)
            stack.stop_controller()
            figures: dict[str, Any] = {"events": events, "generate_s": round(gen, 1)}
            figures.update(time_verification(work / "stack" / "state" / "journal.db"))
            for label in ("start", "restart_after_kill9"):
                if label == "restart_after_kill9":
                    stack.kill_controller()
                marks = ready.marks()
                t0 = time.monotonic()
                stack.start_controller()
                at_ready, at_online = ready.wait_next(marks)
                figures[f"{label}_ready_s"] = round(at_ready - t0, 3) if at_ready else "none"
                figures[f"{label}_online_s"] = round(at_online - t0, 3) if at_online else "none"
            return figures
        finally:
            os.environ.pop("NOTIFY_SOCKET", None)
            ready.close()
            stack.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one journal of 20,000 events")
    ap.add_argument("--events", type=int, default=None)
    a = ap.parse_args()
    big = a.events or (20_000 if a.quick else 1_000_000)
    print("\n== start-up to ready (real service process, emulated shoe, mosquitto)")
    for events in (big,) if a.quick else (1_000, big):
        r = measure(events)
        print("  " + "  ".join(f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
