"""Shared parts of the benchmarks: figures, a broker, emulated shoes, a C subscriber, the table in-process.

The in-process table is wired exactly as ``controller/service/`` wires it (ShoeDriver -> TableController ->
Journal (SQLite WAL, synchronous=FULL) -> OutboxPublisher -> MqttLink), so the benchmark can read the core's
state to decide the dealer's next input; every part talks to its real peer (pty, SQLite file, mosquitto).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.broker import load_users  # noqa: E402
from tablebench.broker import Broker  # noqa: E402
from tablebench.emulator.control_client import ControlClient  # noqa: E402
from tablebench.procs import stat_fields  # noqa: E402
from tablebench.stack import TABLECTL, _spawn_json  # noqa: E402

SITE = "bench"
TABLE = "bench1"
BASELINE_TABLE = "base1"
BENCH_USERS = {f"table-{TABLE}": "bench-table", f"table-{BASELINE_TABLE}": "bench-base", "monitorbench": "m"}


# ---- figures ----
def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def summary_ms(values_s: Iterable[float]) -> dict[str, float]:
    v = [x * 1000 for x in values_s]
    if not v:
        return {"n": 0}
    return {
        "n": len(v),
        "p50": round(pct(v, 50), 3),
        "p99": round(pct(v, 99), 3),
        "max": round(max(v), 3),
        "mean": round(statistics.fmean(v), 3),
    }


def print_table(title: str, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n== {title}")
    for name, figs in rows.items():
        print(f"  {name:<34} " + "  ".join(f"{k}={v}" for k, v in figs.items()))


def measure_fsync(directory: Path, count: int = 200) -> dict[str, float]:
    """fsync of a 4 KiB append on the disk that holds the journal (what each COMMIT waits for)."""
    path = directory / "fsync.probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    try:
        for _ in range(count):
            os.write(fd, b"\0" * 4096)
            t = time.perf_counter()
            os.fsync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        path.unlink()
    return summary_ms(times)


def measure_commit_floor(directory: Path, count: int = 1000) -> dict[str, float]:
    """The cheapest durable commit on this disk, as the journal configures SQLite (WAL, synchronous=FULL):
    one ~200-byte row per transaction, no hash chain, no outbox, no logic. Its CPU per commit is the floor
    under "CPU per card" for any design that commits every card before publishing it."""
    import sqlite3

    path = directory / "floor.db"
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
        row = "x" * 200
        for _ in range(50):  # warm-up
            conn.execute("INSERT INTO t(data) VALUES (?)", (row,))
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        for _ in range(count):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t(data) VALUES (?)", (row,))
            conn.execute("COMMIT")
        cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return {"cpu_us": cpu / count * 1e6, "wall_us": wall / count * 1e6}


def rss_kib(pid: int | None = None) -> int:
    with open(f"/proc/{pid or 'self'}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int | None = None) -> float:
    if pid is None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    fields = stat_fields(pid)
    if fields is None:
        raise ProcessLookupError(f"process {pid} is gone")
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime


# ---- parts ----
def start_broker(workdir: Path) -> Broker:
    users = load_users()
    users.update(BENCH_USERS)
    return Broker.start(workdir / "broker", users=users, persistence=False)


def start_emulator(
    workdir: Path, name: str, scenario: dict[str, Any]
) -> tuple[subprocess.Popen[str], str, str]:
    """`tablectl emulate-shoe` in its own process; returns (process, pty symlink, control socket)."""
    scen = workdir / f"{name}.json"
    scen.write_text(json.dumps(scenario))
    proc, info = _spawn_json(
        [*TABLECTL, "emulate-shoe", "--scenario", str(scen), "--link", str(workdir / name)],
        workdir / f"{name}.log",
    )
    return proc, info["link"] or info["device"], info["control"]


async def control(path: str) -> ControlClient:
    """A control client whose reader accepts long replies (``card_times``)."""
    reader, writer = await asyncio.open_unix_connection(path, limit=32 * 1024 * 1024)
    return ControlClient(reader, writer)


class Subscriber:
    """`mosquitto_sub` (C) in its own process: each message with its arrival time, off the measured one."""

    def __init__(self, broker: Broker, topics: list[str]) -> None:
        cmd = [
            "stdbuf",
            "-oL",
            "mosquitto_sub",
            "-h",
            broker.host,
            "-p",
            str(broker.port),
            "-u",
            "monitorbench",
            "-P",
            "m",
        ]
        cmd += ["-q", "1", "-F", "%U %t %p"]
        for t in topics:
            cmd += ["-t", t]
        self.cmd = cmd
        self.proc: asyncio.subprocess.Process | None = None
        self.messages: asyncio.Queue[tuple[float, str, str]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.cmd, stdout=asyncio.subprocess.PIPE, limit=16 * 1024 * 1024
        )
        self._task = asyncio.create_task(self._read())
        await asyncio.sleep(0.3)  # subscribed (no timing is measured before the first card)

    async def _read(self) -> None:
        assert self.proc and self.proc.stdout
        while line := await self.proc.stdout.readline():
            ts, topic, payload = line.decode().rstrip("\n").split(" ", 2)
            self.messages.put_nowait((float(ts), topic, payload))

    async def stop(self) -> None:
        if self.proc and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()
        if self._task:
            self._task.cancel()


class InProcTable:
    """The service's parts in this process, on a real pty, SQLite file and broker (see module docstring)."""

    def __init__(self, workdir: Path, shoe_port: str, broker: Broker, shoe: Any | None = None) -> None:
        from controller.journal import Journal
        from controller.mqtt.link import LinkConfig, MqttLink
        from controller.mqtt.publisher import OutboxPublisher
        from controller.shell import TableController
        from controller.table import LogAlerts
        from controller.topics import Topics
        from drivers.shoe import ShoeDriver

        self.journal = Journal(workdir / "state" / "journal.db", table_id=TABLE)
        self.shoe = shoe if shoe is not None else ShoeDriver(shoe_port)
        self.tc = TableController(self.journal, self.shoe, alerts=LogAlerts())
        cfg = LinkConfig(
            host=broker.host,
            port=broker.port,
            username=f"table-{TABLE}",
            password="bench-table",
            client_id=f"bench-{os.getpid()}",
        )
        self.link = MqttLink(cfg, Topics(SITE, TABLE))
        self.publisher = OutboxPublisher(self.journal, self.link)

    @property
    def state(self) -> str:
        return self.tc.core.state

    async def start(self) -> None:
        self.publisher.start()
        await self.tc.start()
        await self.shoe.start()
        await self.link.start()
        await self.link.wait_connected(10)

    async def stop(self) -> None:
        await self.tc.stop()
        await self.shoe.stop()
        await self.link.stop()
        self.journal.close()

    async def until(self, cond: Any, what: str, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise RuntimeError(f"timed out waiting for {what}; state {self.state}")
            await asyncio.sleep(0.002)
