"""Floor archive throughput and lag: N tables' traffic through one floor broker into PostgreSQL.

Lightweight publishers (one MQTT connection per group of tables, not the table service) send each table's events
at a dealer's pace times ``--pace``, in bursts as a round produces them (a deal: 5-7 events at once, then one or
two per decision, a settlement), each event a real table event shape (``events/card``, ``events/round``,
``state/round``, ``events/settlement``) in the usual envelope with a gapless ``event_id`` per table. ``--workers``
archive workers (``controller.floor.archive``, shared subscription) store them. Printed:

- ``archive``: events/s sustained (stored / wall time from the first publish to the last row stored) and the lag
  of each row, PostgreSQL ``received_at`` minus the envelope ``ts`` (stamped at publish): p50 / p99 / max;
- ``baseline``: the same rows inserted by one client in plain batches (``executemany``, 500 rows a transaction,
  ``ON CONFLICT DO NOTHING``) into the same database: rows/s; and the archive's share of it.

    python benchmarks/floor.py [--tables 200] [--pace 10] [--seconds 20] [--workers 2] [--quick]

A dealer's pace here: a round every 40 s of about 14 events (a card every ~2 s, state documents, settlement).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import paho.mqtt.client as mqtt
import psycopg

from controller.floor.archive import ArchiveConfig, ArchiveWorker
from controller.floor.messages import TableRef, parse_envelope
from controller.mqtt.paho_client import BrokerEndpoint, new_client
from tablebench.broker import Broker
from tablebench.postgres import temp_database

ROUND_SECONDS = 40.0  # a dealer's round
CARDS = [r + s for r in "A23456789TJQK" for s in "SHDC"]


def ts_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class TableTraffic:
    def __init__(self, site: str, table_id: str, rng: random.Random) -> None:
        self.site, self.table_id, self.rng = site, table_id, rng
        self.next_id, self.round_no, self.seq = 1, 0, 0

    def envelope(self, etype: str, data: dict) -> bytes:
        """Stamped (event_id, ts) when sent, so the lag measures the floor, not the schedule."""
        doc = {"data": data, "event_id": self.next_id, "table": self.table_id, "ts": ts_now(), "type": etype}
        self.next_id += 1
        return json.dumps(doc, separators=(",", ":")).encode()

    def _env(self, etype: str, data: dict) -> tuple[str, dict]:
        return etype, data

    def _card(self, rid: str, recipient: str) -> tuple[str, tuple[str, dict]]:
        self.seq += 1
        code = self.rng.choice(CARDS)
        data = {"round_id": rid, "shoe_seq": self.seq, "face_up": False, "recipient": recipient,
                "counts": True, "code": code, "rank": code[0], "suit": code[1]}  # fmt: skip
        return "events/card", self._env("card", data)

    def bursts(self) -> list[list[tuple[str, tuple[str, dict]]]]:
        """One round as bursts of (relative topic, payload)."""
        self.round_no += 1
        rid = f"r-{self.round_no:05d}"
        seats = self.rng.randint(1, 5)
        deal = [("events/round", self._env("round", {"round_id": rid, "phase": "dealing",
                 "bets": [{"seat": s, "amount": 1000} for s in range(1, seats + 1)], "burn": 0}))]  # fmt: skip
        for _ in range(2):
            deal += [self._card(rid, f"seat:{s}:0") for s in range(1, seats + 1)] + [
                self._card(rid, "dealer")
            ]
        deal.append(("state/round", self._env("state", {"round_id": rid, "phase": "players", "seats": []})))
        out = [deal]
        for s in range(1, seats + 1):
            out.append([("events/round", self._env("round", {"round_id": rid, "phase": "decision", "action": "hit"})),
                        self._card(rid, f"seat:{s}:0")])  # fmt: skip
        hands = [
            {"seat": s, "hand": 0, "stake": 1000, "outcome": "lose", "net": -1000}
            for s in range(1, seats + 1)
        ]
        out.append([self._card(rid, "dealer"),
                     ("events/settlement", self._env("settlement", {"round_id": rid, "profile": "pt-2001",
                      "hands": hands, "total_net": -1000 * seats, "dealer_errors": []}))])  # fmt: skip
        return out


class Publisher(threading.Thread):
    """One MQTT connection sending the traffic of a group of tables on their schedules."""

    def __init__(self, broker: Broker, tables: list[TableTraffic], pace: float, until: float) -> None:
        super().__init__(daemon=True)
        self.tables, self.pace, self.until = tables, pace, until
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
            plan.append((now + random.random() * ROUND_SECONDS / self.pace, i, []))
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
            gap = ROUND_SECONDS / self.pace / (len(pending) + 1 if pending else 1)
            plan.append((at + gap, i, pending))

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


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
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--flood", type=int, default=20_000, help="backlog drained afterwards (capacity)")
    ap.add_argument("--quick", action="store_true", help="20 tables, 5 s, flood 2000 (smoke)")
    args = ap.parse_args()
    if args.quick:
        args.tables, args.seconds, args.flood = 20, 5.0, 2000
    # $FLOOR_TEST_DSN's server if given, else a private one of this process (tablebench/postgres.py)
    with temp_database("floor_bench") as dsn:
        return run(args, dsn)


def run(args: argparse.Namespace, dsn: str) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="floor-bench-"))
    broker = Broker.start(workdir / "broker", users={"archive": "archive", "bench": "bench"}, acl=False,
                          extra_config=("max_inflight_messages 0", "max_queued_messages 1000000"))  # fmt: skip
    workers: list[ArchiveWorker] = []
    try:
        workers = [ArchiveWorker(ArchiveConfig(dsn, broker.host, broker.port, "archive", "archive",
                                               worker=f"b{i}")).start() for i in range(args.workers)]  # fmt: skip
        rng = random.Random(7)
        tables = [TableTraffic("S1", f"T{i:03d}", rng) for i in range(args.tables)]
        groups = [tables[i : i + 20] for i in range(0, len(tables), 20)]
        start = time.monotonic()
        pubs = [Publisher(broker, g, args.pace, start + args.seconds) for g in groups]
        for p in pubs:
            p.start()
        for p in pubs:
            p.join()
        sent = sum(p.sent for p in pubs)
        with psycopg.connect(dsn) as conn:
            deadline = time.monotonic() + 120
            while conn.execute("SELECT count(*) FROM events").fetchone()[0] < sent:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            stored = conn.execute("SELECT count(*) FROM events").fetchone()[0]
            lags = [r[0] for r in conn.execute(
                "SELECT extract(epoch FROM received_at - ts) FROM events").fetchall()]  # fmt: skip
            wall = conn.execute(
                "SELECT extract(epoch FROM max(received_at) - min(ts)) FROM events"
            ).fetchone()[0]
        # capacity: a backlog queued while the workers are away (as after an archive outage), then drained
        for w in workers:
            w.stop()  # their persistent sessions stay on the broker and queue what follows
        paced_rows = stored
        flood_sent = 0
        pub = pubs[0]
        info = None
        while flood_sent < args.flood:
            t = tables[flood_sent % len(tables)]
            etype, data = t._card("flood", "seat:1:0")[1]
            info = pub.client.publish(
                f"casino/{t.site}/table/{t.table_id}/events/card", t.envelope(etype, data), qos=1
            )
            flood_sent += 1
        if info is not None:
            info.wait_for_publish(120)  # QoS 1 in order: the last acked, the broker holds them all
        workers = [ArchiveWorker(ArchiveConfig(dsn, broker.host, broker.port, "archive", "archive",
                                               worker=f"b{i}")).start() for i in range(args.workers)]  # fmt: skip
        with psycopg.connect(dsn) as conn:
            deadline = time.monotonic() + 300
            while conn.execute("SELECT count(*) FROM events").fetchone()[0] < paced_rows + flood_sent:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            flood_stored, flood_wall = conn.execute(
                "SELECT count(*), extract(epoch FROM max(received_at) - min(received_at)) FROM events"
                " WHERE data->>'round_id' = 'flood'"
            ).fetchone()
            raws = conn.execute(
                "SELECT site, table_id, topic, raw FROM events ORDER BY site, table_id, event_id"
            ).fetchall()  # the baseline inserts these same rows
        for p in pubs:
            p.close()
        lags_f = [float(x) for x in lags]
        rate = stored / float(wall) if wall else float("nan")
        print(f"floor benchmark: {args.tables} tables at {args.pace:g}x a dealer's pace for {args.seconds:g} s,"
              f" {args.workers} archive worker(s), one mosquitto, PostgreSQL on 127.0.0.1")  # fmt: skip
        print(f"archive   sent={sent} stored={stored} events_per_s={rate:.0f}"
              f" lag_p50_ms={percentile(lags_f, 0.5) * 1000:.0f} lag_p99_ms={percentile(lags_f, 0.99) * 1000:.0f}"
              f" lag_max_ms={max(lags_f) * 1000:.0f}")  # fmt: skip
        # baseline: the same rows, plain batched inserts into a fresh table of the same shape
        envs = [parse_envelope(TableRef(s, t), topic, bytes(raw), "live") for s, t, topic, raw in raws]
        with psycopg.connect(dsn) as conn:
            conn.execute("CREATE TABLE events_baseline (LIKE events INCLUDING ALL)")
            conn.commit()
            t0 = time.perf_counter()
            for i in range(0, len(envs), 500):
                with conn.transaction(), conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO events_baseline (site, table_id, event_id, topic, type, ts, data, raw, source)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        [(e.table.site, e.table.table_id, e.event_id, e.topic, e.type, e.ts,
                          psycopg.types.json.Jsonb(e.data), e.raw, "live") for e in envs[i : i + 500]],
                    )  # fmt: skip
            dt = time.perf_counter() - t0
        base = len(envs) / dt if dt else float("nan")
        print(f"baseline  rows={len(envs)} rows_per_s={base:.0f} (plain batched inserts, 500 a transaction)")
        cap = flood_stored / float(flood_wall) if flood_wall else float("nan")
        print(f"capacity  flood={flood_sent} stored={flood_stored} events_per_s={cap:.0f}"
              f" archive/baseline={cap / base:.2f} (a backlog queued for the workers' sessions, drained)")  # fmt: skip
        print(f"offered   events_per_s={sent / args.seconds:.0f} (the paced load above)")
        return 0 if stored == sent and flood_stored == flood_sent else 1
    finally:
        for w in workers:
            w.stop()
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
