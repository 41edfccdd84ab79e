"""Floor archive throughput and lag: N tables' traffic through one floor broker into PostgreSQL.

Lightweight publishers (one MQTT connection per 20 tables, not the table service) send each table's events at a
dealer's pace times ``--pace``: a round every 40 s at 1x of the mix a real table publishes (``ROUND_MIX``,
measured from a ``tablectl demo`` journal: 72 events a round, 72 % state documents, each topic at its measured
size), in 12 bursts evenly over the round, in the envelope a table publishes (a gapless ``event_id`` per table, the
published events' hash chain) and with the round's audit checkpoint signed by the table's own key, enrolled on the
floor before it publishes: the floor verifies each checkpoint and proves the events it covers, as for real tables.
``--workers`` archive workers (``floor.archive.worker``, shared subscription, each in its own process)
store them. Printed:

- ``archive`` (and ``sweep``, one line per ``--sweep TABLESxPACE`` load): events/s sustained (stored / wall time
  from the first publish to the last row stored) and the lag of each row, PostgreSQL ``received_at`` minus the
  envelope ``ts`` (stamped at publish): p50 / p99 / max; the CPU an event cost (``cpu_us_per_event``: the worker
  processes + their PostgreSQL backends, from /proc: what does not depend on other tenants of a shared machine)
  and the transactions committed per 1,000 events;
- ``capacity`` (one line per count of ``--workers``): a backlog of ``--flood`` events (the same mix) queued for
  that many workers' sessions (a shared group of their own) while they are stopped, drained when they start:
  events/s, and the CPU an event cost up to the point every checkpoint of the flood was verified and its events
  proven (``checkpoints_unverified``: any left after two minutes);
- ``baseline``, ``copy`` and ``copy_text``: the first flood's rows inserted again by one client into fresh tables
  of the same shape, in plain batches (``executemany``, 500 rows a transaction, ``ON CONFLICT DO NOTHING``), by
  one ``COPY`` of rows encoded in Python as it goes (``write_row``), and by one ``COPY`` of the same rows
  pre-encoded (the server's own COPY text, written in 1 MiB pieces): rows/s; and the archive's capacity as a
  share of each, and the archive's events per CPU-second as a share of the pre-encoded COPY's rows per
  CPU-second (``cpu_archive/copy_text``: the client and its backend);
- ``alerts``: the floor alerts the whole run raised, by kind (none expected: a ``checkpoint_invalid`` would be a
  checkpoint the floor could not verify).

    python benchmarks/floor.py [--tables 200] [--pace 10] [--seconds 20] [--workers 1,2,3,4] [--sweep 2000x1] [--quick]

The paced runs use the largest count of ``--workers`` not above the machine's cores. ``scaling`` (one line per count of
``--workers``, after the cores the machine has): the capacity's events/s, the CPU an event cost (all, and the
worker processes' alone) and their shares of the pre-encoded COPY's, in the same run; ``capacity`` also prints
each worker process's CPU seconds and the start-up's CPU (measured on the workers' first start, nothing queued,
and not counted in the CPU an event cost).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import random
import signal
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import paho.mqtt.client as mqtt
import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import GENESIS, public_key_hex, sign_checkpoint
from controller.canonical import canonical
from controller.journal.event_chain import EVENT_GENESIS, chained_text
from controller.mqtt.paho_client import BrokerEndpoint, new_client
from floor.archive.enrol import enrol
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.messages import CHECKPOINT_TOPIC, CHECKPOINT_TYPE, TableRef, parse_envelope
from tablebench.broker import Broker
from tablebench.postgres import temp_database

ROUND_SECONDS = 40.0  # a dealer's round
CARDS = [r + s for r in "A23456789TJQK" for s in "SHDC"]


def ts_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# A real table's round (measured: `tablectl demo --auto 10 --seed 5`, the journal's 730 published events: 55-85
# a round, mean 73; 72 % state documents; mean envelope 568 bytes): per round, how many of each topic and their
# mean envelope size. The checkpoint (1 a round, 860 bytes) is a real one: each simulated table has its own Ed25519
# key, enrolled on the floor before it publishes (``tablectl floor enrol``), and signs its checkpoint as the table
# does (controller/journal/checkpointer.py), over the published events' chain its envelopes carry
# (controller/journal/event_chain.py): the floor verifies each and proves the events it covers.
ROUND_MIX: tuple[tuple[str, int, int], ...] = (
    ("state/table", 20, 741),
    ("state/round", 15, 822),
    ("state/shoe", 12, 395),
    ("events/card", 9, 367),
    ("events/round", 5, 317),
    ("state/lid", 5, 288),
    ("events/lid", 3, 279),
    (CHECKPOINT_TOPIC, 1, 860),
    ("events/settlement", 1, 745),
    ("events/shoe", 1, 320),
)
EVENTS_PER_ROUND = sum(n for _, n, _ in ROUND_MIX)  # 72
BURSTS_PER_ROUND = 12  # the deal, a decision or two per seat, the settlement: each an event and its documents


CHAIN_FIELDS = len(',"chain":"","prev":""') + 2 * 64  # what the published events' chain adds to an envelope


class TableTraffic:
    def __init__(self, site: str, table_id: str, rng: random.Random) -> None:
        self.site, self.table_id, self.rng = site, table_id, rng
        self.next_id, self.round_no, self.seq = 1, 0, 0
        self.pending: list[tuple[str, tuple[str, dict]]] = []  # the flood's round under way
        self.key = Ed25519PrivateKey.from_private_bytes(rng.randbytes(32))  # the table's audit key
        self.public_key = public_key_hex(self.key.public_key())
        self.chain = EVENT_GENESIS  # the published events' chain value of the last event sent
        self.checkpoint_prev = (0, GENESIS)  # (seq, hash) of the last checkpoint signed

    def envelope(self, etype: str, data: dict) -> bytes:
        """Stamped (event_id, ts) when sent, so the lag measures the floor, not the schedule; chained as the table
        chains it (``prev``, ``chain``); a checkpoint signed then, over the events sent before it."""
        event_id, ts = self.next_id, ts_now()
        if etype == CHECKPOINT_TYPE:
            data = self.checkpoint(ts)
        doc = {"data": data, "event_id": event_id, "prev": self.chain, "table": self.table_id, "ts": ts,
               "type": etype}  # fmt: skip
        payload, self.chain = chained_text(self.chain, canonical(doc))
        self.next_id += 1
        return payload.encode()

    def checkpoint(self, ts: str) -> dict[str, Any]:
        """What the table's checkpointer signs: its journal's head (a record number and hash of the bench's own)
        and the events' chain at the last event it published."""
        seq = 2 * self.next_id  # the journal has more records than events
        head = hashlib.sha256(f"{self.site}/{self.table_id}/{seq}".encode()).hexdigest()
        cp = sign_checkpoint(self.key, site=self.site, table=self.table_id, seq=seq, hash=head,
                             last_event_id=self.next_id - 1, prev_seq=self.checkpoint_prev[0],
                             prev_hash=self.checkpoint_prev[1], ts=ts, event_chain=self.chain)  # fmt: skip
        self.checkpoint_prev = (cp.seq, cp.hash)
        return cp.to_dict()

    def _card(self, rid: str, recipient: str) -> tuple[str, tuple[str, dict]]:
        self.seq += 1
        code = self.rng.choice(CARDS)
        data = {"round_id": rid, "shoe_seq": self.seq, "face_up": False, "recipient": recipient,
                "counts": True, "code": code, "rank": code[0], "suit": code[1]}  # fmt: skip
        return "events/card", ("card", data)

    def bursts(self) -> list[list[tuple[str, tuple[str, dict]]]]:
        """One round as bursts of (relative topic, (type, data)): the measured mix, each envelope padded to its
        topic's measured size, the events spread over the round, each with the state documents after it."""
        self.round_no += 1
        rid = f"r-{self.round_no:05d}"
        items: list[tuple[str, tuple[str, dict]]] = []
        for topic, count, size in ROUND_MIX:
            for _ in range(count):
                if topic == "events/card":
                    rel, (etype, data) = self._card(rid, "seat:1:0")
                elif topic == CHECKPOINT_TOPIC:  # signed when sent (``envelope``): its own size
                    items.append((topic, (CHECKPOINT_TYPE, {})))
                    continue
                else:
                    rel, etype, data = topic, topic.rsplit("/", 1)[1], {"round_id": rid}
                data["pad"] = "x" * max(0, size - 96 - CHAIN_FIELDS - len(canonical(data)))
                items.append((rel, (etype, data)))
        self.rng.shuffle(items)
        step = -(-len(items) // BURSTS_PER_ROUND)
        return [items[i : i + step] for i in range(0, len(items), step)]


class Publisher(threading.Thread):
    """One MQTT connection sending the traffic of a group of tables on their schedules."""

    def __init__(self, broker: Broker, tables: list[TableTraffic], pace: float, until: float) -> None:
        super().__init__(daemon=True)
        self.tables, self.pace, self.until = tables, pace, until
        self.gap = ROUND_SECONDS / pace / BURSTS_PER_ROUND  # a round's bursts evenly over the round
        self.sent = 0
        self.client = new_client(BrokerEndpoint(broker.host, broker.port, "bench", "bench"),
                                 f"bench-{uuid.uuid4().hex[:8]}", protocol=mqtt.MQTTv311)  # fmt: skip
        self.client.max_inflight_messages_set(1000)
        self.client.max_queued_messages_set(0)
        self.client.connect(broker.host, broker.port, 30)
        self.client.loop_start()

    def run(self) -> None:
        # each table: its round's bursts spread over the round, rounds back to back, start phases random
        plan: list[tuple[float, int, list]] = []
        now = time.monotonic()
        for i in range(len(self.tables)):
            plan.append((now + random.random() * self.gap, i, []))  # steady at once: one burst gap
        while plan:
            plan.sort(key=lambda p: p[0])
            at, i, pending = plan.pop(0)
            if at > self.until:
                continue
            delay = at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            t = self.tables[i]
            if not pending:
                pending = t.bursts()
            burst = pending.pop(0)
            for rel, (etype, data) in burst:
                payload = t.envelope(etype, data)
                self.client.publish(f"casino/{t.site}/table/{t.table_id}/{rel}", payload, qos=1)
                self.sent += 1
            plan.append((at + self.gap, i, pending))

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def _worker_main(cfg: ArchiveConfig, spawned: Any, go: Any, started: Any) -> None:
    """An archive worker in its own process (as ``tablectl floor archive`` runs): the publishers' threads of this
    process do not share its interpreter; it connects when told (all workers at once); SIGTERM stops it."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    spawned.set()
    go.wait()
    worker = ArchiveWorker(cfg).start(timeout=60)
    started.set()
    stop.wait()
    worker.stop()


class WorkerProcess:
    def __init__(self, cfg: ArchiveConfig, go: Any) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.spawned, self.started = ctx.Event(), ctx.Event()
        self.proc = ctx.Process(target=_worker_main, args=(cfg, self.spawned, go, self.started), daemon=True)
        self.proc.start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.join(60)


def start_workers(
    cfgs: list[ArchiveConfig], meter: list[CpuMeter] | None = None, dsn: str = ""
) -> list[WorkerProcess]:
    """Every worker process up (imports done) before any connects: a backlog is drained by all of them.
    ``meter``: gets a CPU meter of the workers started just before they connect."""
    go = multiprocessing.get_context("spawn").Event()
    workers = [WorkerProcess(cfg, go) for cfg in cfgs]
    for w in workers:
        if not w.spawned.wait(120):
            raise RuntimeError("archive worker process did not start")
    if meter is not None:
        meter.append(CpuMeter(dsn, workers).start())
    go.set()
    for w in workers:
        if not w.started.wait(90):
            raise RuntimeError("archive worker did not connect")
    return workers


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_of(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user + system) each live process has used so far (/proc/<pid>/stat)."""
    out: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone, or a server on another host
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return out


def commits(dsn: str) -> int:
    """Transactions committed in the database so far (pg_stat_database: reported within a second or so)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        return int(row[0]) if row else 0


def backends(dsn: str) -> list[int]:
    """The PostgreSQL backends of the database's other clients (the archive workers' connections)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()")]  # fmt: skip


class CpuMeter:
    """CPU used by the worker processes and by their PostgreSQL backends since ``start`` (on a shared machine the
    CPU an event costs is what does not depend on the other tenants' load)."""

    def __init__(self, dsn: str, workers: list[WorkerProcess]) -> None:
        self.dsn, self.pids = dsn, [w.proc.pid for w in workers if w.proc.pid is not None]
        self.before: dict[int, float] = {}
        self.commits = 0

    def start(self) -> CpuMeter:
        self.before = cpu_of([*self.pids, *backends(self.dsn)])
        self.commits = commits(self.dsn)
        return self

    def committed(self) -> int:
        """Transactions committed since ``start`` (by anyone: the workers, and the benchmark's few queries)."""
        time.sleep(1.0)  # backends report their counts at most every second
        return commits(self.dsn) - self.commits

    def per_process(self) -> list[float]:
        """CPU seconds each worker process used since ``start`` (in the order of the workers)."""
        own = cpu_of(self.pids)
        return [own.get(p, self.before.get(p, 0.0)) - self.before.get(p, 0.0) for p in self.pids]

    def used(self) -> tuple[float, float]:
        """(worker processes, their backends) CPU seconds since ``start``."""
        db = cpu_of(backends(self.dsn))
        own = cpu_of(self.pids)
        return (sum(v - self.before.get(p, 0.0) for p, v in own.items()),
                sum(v - self.before.get(p, 0.0) for p, v in db.items()))  # fmt: skip


def enrol_tables(dsn: str, tables: list[TableTraffic]) -> None:
    """Each table's audit key enrolled on the floor, as an operator does before the table goes live."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for t in tables:
            enrol(conn, TableRef(t.site, t.table_id), t.public_key, "bench")


def checkpoints_settled(dsn: str, site: str, timeout: float = 120) -> int:
    """Wait until the maintenance verified every checkpoint of ``site`` and proved the events they cover (at most
    ``timeout``); how many are still pending or unproven."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + timeout
        while True:
            left = conn.execute(
                "SELECT count(*) FROM checkpoints WHERE site = %s AND (chain = 'pending' OR NOT events_proven)",
                (site,),
            ).fetchone()[0]
            if not left or time.monotonic() > deadline:
                return int(left)
            time.sleep(0.2)


def alerts_by_kind(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return dict(
            conn.execute("SELECT kind, count(*) FROM floor_alerts GROUP BY kind ORDER BY kind").fetchall()
        )


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--pace", type=float, default=10.0, help="times a dealer's pace")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument(
        "--workers", default=None,
        help="archive worker processes; a list (1,2,3,4, the default; 2 with --quick): capacity for each",
    )  # fmt: skip
    ap.add_argument("--flood", type=int, default=20_000, help="backlog drained afterwards (capacity)")
    ap.add_argument("--sweep", default="", help="further loads TABLESxPACE, e.g. 1000x1,2000x1,200x10")
    ap.add_argument("--quick", action="store_true", help="20 tables, 5 s, flood 2000, no sweep (smoke)")
    args = ap.parse_args()
    if args.quick:
        args.tables, args.seconds, args.flood, args.sweep = 20, 5.0, 2000, ""
        args.workers = args.workers or "2"
    args.workers = args.workers or "1,2,3,4"
    # $FLOOR_TEST_DSN's server if given, else a private one of this process (tablebench/postgres.py)
    with temp_database("floor_bench") as dsn:
        return run(args, dsn)


@dataclass
class Paced:
    tables: int
    sent: int
    stored: int
    lags: list[float]
    wall: float
    cpu: tuple[float, float]  # CPU seconds: worker processes, their PostgreSQL backends
    commits: int  # transactions committed meanwhile

    def line(self, label: str, pace: float) -> str:
        rate = self.stored / self.wall if self.wall else float("nan")
        per = 1e6 / self.stored if self.stored else float("nan")
        return (f"{label} tables={self.tables} pace={pace:g} sent={self.sent} stored={self.stored}"
                f" events_per_s={rate:.0f} lag_p50_ms={percentile(self.lags, 0.5) * 1000:.0f}"
                f" lag_p99_ms={percentile(self.lags, 0.99) * 1000:.0f}"
                f" lag_max_ms={max(self.lags, default=float('nan')) * 1000:.0f}"
                f" cpu_us_per_event={self.cpu[0] * per:.0f}+{self.cpu[1] * per:.0f}"
                f" commits_per_1000_events={self.commits * per / 1000:.1f}")  # fmt: skip


def paced(
    broker: Broker, dsn: str, site: str, count: int, pace: float, seconds: float, workers: list[WorkerProcess]
) -> tuple[Paced, list]:
    """``count`` tables of ``site`` at ``pace`` for ``seconds``; waits until stored (at most 120 s more)."""
    meter = CpuMeter(dsn, workers).start()
    rng = random.Random(7)
    tables = [TableTraffic(site, f"T{i:04d}", rng) for i in range(count)]
    enrol_tables(dsn, tables)
    start = time.monotonic()
    pubs = [Publisher(broker, tables[i : i + 20], pace, start + seconds) for i in range(0, count, 20)]
    for p in pubs:
        p.start()
    for p in pubs:
        p.join()
    sent = sum(p.sent for p in pubs)
    with psycopg.connect(dsn) as conn:
        count_sql = "SELECT count(*) FROM events WHERE site = %s"
        deadline = time.monotonic() + 120
        while conn.execute(count_sql, (site,)).fetchone()[0] < sent and time.monotonic() < deadline:
            time.sleep(0.2)
        stored = conn.execute(count_sql, (site,)).fetchone()[0]
        lags = [float(r[0]) for r in conn.execute(
            "SELECT extract(epoch FROM received_at - ts) FROM events WHERE site = %s", (site,))]  # fmt: skip
        wall = conn.execute(
            "SELECT extract(epoch FROM max(received_at) - min(ts)) FROM events WHERE site = %s", (site,)
        ).fetchone()[0]
    checkpoints_settled(dsn, site)  # their verification is part of the cost
    cpu = meter.used()
    for p in pubs[1:]:
        p.close()
    return Paced(count, sent, stored, lags, float(wall or 0), cpu, meter.committed()), [pubs[0], tables]


@dataclass(frozen=True)
class Baselines:
    rows: int
    insert: float  # rows/s: plain batched inserts
    copy: float  # rows/s: one COPY, rows encoded in Python as it goes
    copy_text: float  # rows/s: one COPY of pre-encoded rows
    copy_text_cpu: float  # CPU seconds a row of it cost: this client and its PostgreSQL backend


def baselines(dsn: str, site: str) -> Baselines:
    """The flood's archived rows again, by one client: plain batched inserts (executemany, 500 a transaction, ON
    CONFLICT DO NOTHING), one COPY encoding the rows as it goes and one COPY of the same rows pre-encoded, each
    into a fresh table of the same shape."""
    with psycopg.connect(dsn) as conn:
        raws = conn.execute("SELECT site, table_id, topic, raw FROM events WHERE site = %s"
                            " ORDER BY site, table_id, event_id", (site,))  # fmt: skip
        envs = [parse_envelope(TableRef(s, t), topic, bytes(raw), "live") for s, t, topic, raw in raws]
        rows = [(e.table.site, e.table.table_id, e.event_id, e.topic, e.type, e.ts,
                 psycopg.types.json.Jsonb(e.data), e.raw, "live", e.prev, e.chain) for e in envs]  # fmt: skip
        cols = "site, table_id, event_id, topic, type, ts, data, raw, source, prev, chain"
        for name in ("events_insert", "events_copy", "events_copy_text"):
            conn.execute(f"CREATE TABLE {name} (LIKE events INCLUDING ALL)")
        conn.commit()
        t0 = time.perf_counter()
        for i in range(0, len(rows), 500):
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(f"INSERT INTO events_insert ({cols}) VALUES ({', '.join(['%s'] * 11)})"
                                " ON CONFLICT DO NOTHING", rows[i : i + 500])  # fmt: skip
        t1 = time.perf_counter()
        with (
            conn.transaction(),
            conn.cursor() as cur,
            cur.copy(f"COPY events_copy ({cols}) FROM STDIN") as cp,
        ):
            for row in rows:
                cp.write_row(row)
        t2 = time.perf_counter()
        text = bytearray()  # the same rows as COPY text, encoded before the clock starts
        with conn.cursor() as cur, cur.copy(f"COPY events_copy ({cols}) TO STDOUT") as out:
            for chunk in out:
                text += chunk
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        cpu3 = time.process_time() + cpu_of([backend]).get(backend, 0.0)
        t3 = time.perf_counter()
        with (
            conn.transaction(),
            conn.cursor() as cur,
            cur.copy(f"COPY events_copy_text ({cols}) FROM STDIN") as cp,
        ):
            for i in range(0, len(text), 1 << 20):
                cp.write(text[i : i + (1 << 20)])
        t4 = time.perf_counter()
        cpu4 = time.process_time() + cpu_of([backend]).get(backend, 0.0)
    n = len(rows)
    return Baselines(n, n / (t1 - t0), n / (t2 - t1), n / (t4 - t3), (cpu4 - cpu3) / n)


@dataclass(frozen=True)
class Capacity:
    workers: int
    rate: float  # events/s (NaN: the flood was not stored whole)
    cpu: float  # CPU seconds an event cost: the workers and their PostgreSQL backends, start-up excluded
    own: float  # of which the worker processes'


def flood_capacity(broker: Broker, dsn: str, pub: Publisher, count: int, flood: int, tables: int) -> Capacity:
    """``count`` workers of a shared group of their own: their sessions made, then a backlog of ``flood`` events
    queued for them while they are stopped (as after an archive outage), then drained: events/s. Site ``F<count>``.
    """
    cfgs = [ArchiveConfig(dsn, broker.host, broker.port, "archive", "archive", worker=f"c{count}-{i}",
                          group=f"capacity-{count}") for i in range(count)]  # fmt: skip
    empty: list[CpuMeter] = []
    idle = start_workers(cfgs, empty, dsn)  # nothing queued yet: what starting up alone costs them
    startup = sum(empty[0].used())
    for w in idle:
        w.stop()  # their persistent sessions stay on the broker and queue what follows
    site = f"F{count}"
    queue_flood(pub.client, dsn, site, flood, min(tables, 200))
    meters: list[CpuMeter] = []
    workers = start_workers(cfgs, meters, dsn)
    try:
        stored, rate = drained(dsn, site, flood)
        unsettled = checkpoints_settled(dsn, site)  # their verification is part of the cost
        own, db = meters[0].used()
        each = meters[0].per_process()
    finally:
        for w in workers:
            w.stop()
    per = 1e6 / stored if stored else float("nan")
    # the start-up (connect, subscribe, the schema check) is not an event's cost: the empty start's CPU, shared
    # between the workers and their backends as in the drain, taken off
    share = own / (own + db) if own + db else 0.0
    own_net, db_net = max(0.0, own - startup * share), max(0.0, db - startup * (1 - share))
    print(f"capacity  workers={count} flood={flood} stored={stored}"
          f" events_per_s={rate:.0f} cpu_us_per_event={own_net * per:.0f}+{db_net * per:.0f}"
          f" startup_cpu_ms={startup * 1000:.0f}"
          f" cpu_s_per_worker={'/'.join(f'{c:.2f}' for c in each)}"
          f" checkpoints_unverified={unsettled}")  # fmt: skip
    return Capacity(
        count,
        rate if stored == flood else float("nan"),
        (own_net + db_net) / stored if stored else float("nan"),
        own_net / stored if stored else float("nan"),
    )


def queue_flood(client: mqtt.Client, dsn: str, site: str, count: int, tables: int) -> None:
    """``count`` events of ``tables`` tables of ``site`` (the measured mix, round after round, table after table)
    published to the broker while the workers are away: their persistent sessions queue them."""
    info = None
    flood = [TableTraffic(site, f"T{i:04d}", random.Random(i)) for i in range(tables)]
    enrol_tables(dsn, flood)
    for n in range(count):
        t = flood[n % len(flood)]
        if not t.pending:
            t.pending = [item for burst in t.bursts() for item in burst]
        rel, (etype, data) = t.pending.pop()
        info = client.publish(f"casino/{site}/table/{t.table_id}/{rel}", t.envelope(etype, data), qos=1)
    if info is not None:
        info.wait_for_publish(120)  # QoS 1 in order: the last acked, the broker holds them all


def drained(dsn: str, site: str, count: int, timeout: float = 300) -> tuple[int, float]:
    """Once the workers are back: wait until ``count`` events of ``site`` are stored (at most ``timeout``);
    (stored, events/s from the first row stored to the last)."""
    with psycopg.connect(dsn) as conn:
        deadline = time.monotonic() + timeout
        while conn.execute("SELECT count(*) FROM events WHERE site = %s", (site,)).fetchone()[0] < count:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        stored, wall = conn.execute(
            "SELECT count(*), extract(epoch FROM max(received_at) - min(received_at)) FROM events"
            " WHERE site = %s",
            (site,),
        ).fetchone()
    return int(stored), (stored / float(wall) if wall else float("nan"))


def run(args: argparse.Namespace, dsn: str) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="floor-bench-"))
    broker = Broker.start(workdir / "broker", users={"archive": "archive", "bench": "bench"}, acl=False,
                          extra_config=("max_inflight_messages 0", "max_queued_messages 1000000"))  # fmt: skip
    workers: list[WorkerProcess] = []
    counts = sorted({int(n) for n in args.workers.split(",") if n})
    paced_count = max([n for n in counts if n <= (os.cpu_count() or 1)] or counts[:1])
    cfgs = [ArchiveConfig(dsn, broker.host, broker.port, "archive", "archive", worker=f"b{i}")
            for i in range(paced_count)]  # fmt: skip

    try:
        workers = start_workers(cfgs)
        print(f"floor benchmark: {args.tables} tables at {args.pace:g}x a dealer's pace for {args.seconds:g} s,"
              f" {EVENTS_PER_ROUND} events a round every {ROUND_SECONDS:g} s at 1x (the measured mix),"
              f" {paced_count} archive worker(s) ({os.cpu_count()} cores), one mosquitto,"
              " PostgreSQL on 127.0.0.1")  # fmt: skip
        main_run, (pub, _) = paced(broker, dsn, "S1", args.tables, args.pace, args.seconds, workers)
        print(main_run.line("archive  ", args.pace))
        ok = main_run.stored == main_run.sent
        for n, item in enumerate(x for x in args.sweep.split(",") if x):  # "2000x1": 2,000 tables at 1x
            step, pace = int(item.split("x")[0]), float(item.split("x")[1])
            result, (other, _) = paced(broker, dsn, f"W{n}", step, pace, args.seconds, workers)
            other.close()
            ok = ok and result.stored == result.sent
            print(result.line("sweep    ", pace)
                  + f" offered_events_per_s={step * EVENTS_PER_ROUND * pace / ROUND_SECONDS:.0f}")  # fmt: skip
        for w in workers:
            w.stop()
        workers = []
        # capacity: a backlog drained by 1, 2, ... workers (each count a shared group of its own)
        caps = {n: flood_capacity(broker, dsn, pub, n, args.flood, args.tables) for n in counts}
        pub.close()
        base = baselines(dsn, f"F{counts[0]}")
        print(
            f"baseline  rows={base.rows} rows_per_s={base.insert:.0f} (plain batched inserts, 500 a transaction)"
        )
        print(
            f"copy      rows={base.rows} rows_per_s={base.copy:.0f} (one COPY of the same rows, encoded as it goes)"
        )
        print(
            f"copy_text rows={base.rows} rows_per_s={base.copy_text:.0f} cpu_us_per_row={base.copy_text_cpu * 1e6:.0f}"
            " (one COPY of the same rows, pre-encoded)"
        )
        print(f"scaling   cores={os.cpu_count()} (events/s and CPU an event cost by count of workers, beside the"
              f" pre-encoded COPY's {base.copy_text:.0f} rows/s and {base.copy_text_cpu * 1e6:.0f} us a row,"
              " same run)")  # fmt: skip
        one = caps[counts[0]]
        for n, cap in caps.items():
            print(f"scaling   workers={n} events_per_s={cap.rate:.0f} x_{counts[0]}_worker={cap.rate / one.rate:.2f}"
                  f" cpu_us_per_event={cap.cpu * 1e6:.0f} worker_cpu_us_per_event={cap.own * 1e6:.0f}"
                  f" archive/copy_text={cap.rate / base.copy_text:.2f}"
                  f" cpu_archive/copy_text={base.copy_text_cpu / cap.cpu:.2f}")  # fmt: skip
        for n, cap in caps.items():
            print(f"ratio     workers={n} archive/baseline={cap.rate / base.insert:.2f}"
                  f" archive/copy={cap.rate / base.copy:.2f} archive/copy_text={cap.rate / base.copy_text:.2f}"
                  f" cpu_archive/copy_text={base.copy_text_cpu / cap.cpu:.2f}"
                  " (events/s, and events per CPU-second, as a share of the baseline's rows)")  # fmt: skip
        print(f"offered   events_per_s={main_run.sent / args.seconds:.0f} (the paced load above)")
        alerts = alerts_by_kind(dsn)
        print(f"alerts    total={sum(alerts.values())}" + "".join(f" {k}={n}" for k, n in alerts.items())
              + " (floor alerts raised in the whole run, by kind)")  # fmt: skip
        return 0 if ok and all(cap.rate == cap.rate for cap in caps.values()) else 1  # NaN: not stored whole
    finally:
        for w in workers:
            w.stop()
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
