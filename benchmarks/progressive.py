"""The linked progressive's controller (floor/progressive/): contributions per second it sustains and the time
from a hit's archive commit to the signed meter on the floor broker, at 50 and 500 linked tables.

Simulated tables feed the archive's ``events`` table directly, as an archive worker stores them (one transaction
per batch, ``verified``, then ``NOTIFY floor_archive``); the controller is the real ``Controller`` (in this process,
its software manifest recorded first) on a real PostgreSQL and a real mosquitto with the floor ACL. Printed, one
line each per table count:

- ``contributions``: a backlog of ``--per-table`` contributions per table, archived before the controller starts,
  taken by it: contributions/s (from its READY to the last one committed; the meter checked exact);
- ``hit``: ``--hits`` hits, one at a time at a random member table while every table contributes once a round
  (``--round-s``, 40 s: a dealer's pace): ms from the hit's archive commit to the signed meter naming it arriving
  at a subscriber (p50/p95/max);
- ``baseline``: in the same run, the bare rate of INSERTs of the same rows into a table with the same key, one
  transaction per batch of ``--batch`` (rows/s), and the broker's own publish-to-subscriber time (p50/p95/max).

    python benchmarks/progressive.py [--tables 50,500] [--per-table 40] [--hits 20] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import paho.mqtt.client as mqtt
import psycopg
from paho.mqtt.enums import CallbackAPIVersion
from psycopg.types.json import Jsonb

from controller.audit.checkpoint import public_key_hex
from controller.audit.keys import load_or_create
from controller.broker import BrokerKind
from controller.jackpot.meter import UNIT
from floor.archive import store
from floor.progressive import integrity, signing
from floor.progressive.config import LinkConfig
from floor.progressive.params import LinkParams
from floor.progressive.service import Controller
from tablebench.broker import Broker
from tablebench.postgres import temp_database

SITE, BET, INC, RES, BASE = "S1", 100, 1234, 321, 50_000
PASSWORDS = {"table-T0": "bench-table", "supervisor-floor": "bench-super"}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


class Feeder:
    """Simulated tables: envelopes written to ``events`` as the archive writes them (verified), NOTIFY on commit."""

    def __init__(self, dsn: str, tables: list[str], link: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.link, self.tables = link, tables
        self.next_id = dict.fromkeys(tables, 1)
        self.amounts: list[int] = []

    def rows(self, items: list[tuple[str, dict[str, Any]]]) -> list[tuple[Any, ...]]:
        out = []
        now = datetime.now(UTC)
        for table, data in items:
            event_id = self.next_id[table]
            self.next_id[table] += 1
            raw = json.dumps({"data": data, "event_id": event_id, "table": table}).encode()
            out.append(
                (SITE, table, event_id, "events/jackpot", "jackpot", now, Jsonb(data), raw, "live", True)
            )
        return out

    def commit(self, items: list[tuple[str, dict[str, Any]]]) -> float:
        """One archive transaction; returns the time it committed."""
        with self.conn.transaction():
            cur = self.conn.cursor()
            cur.executemany(
                "INSERT INTO events (site, table_id, event_id, topic, type, ts, data, raw, source, verified)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                self.rows(items),
            )
            cur.execute("SELECT pg_notify('floor_archive', '')")
        return time.monotonic()

    def contribution(self, table: str, n: int) -> tuple[str, dict[str, Any]]:
        chips = 1 + n % 5
        self.amounts.append(chips * BET)
        return table, {
            "action": "contribution",
            "link": self.link,
            "round_id": f"r{n}",
            "seats": [1],
            "chips": chips,
            "bet_value": BET,
            "amount_minor": chips * BET,
        }


def baseline_inserts(dsn: str, n: int, batch: int) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TEMP TABLE bare (link text, site text, table_id text, event_id bigint, action text,"
            " outcome text, PRIMARY KEY (link, site, table_id, event_id))"
        )
        t0 = time.perf_counter()
        for lo in range(0, n, batch):
            with conn.transaction():
                conn.cursor().executemany(
                    "INSERT INTO bare VALUES (%s, %s, %s, %s, 'contribution', 'applied') ON CONFLICT DO NOTHING",
                    [("b", SITE, f"T{i % 50}", i) for i in range(lo, min(n, lo + batch))],
                )
        return n / (time.perf_counter() - t0)


class Watch:
    """A subscriber to the link's meter (and a topic of its own for the broker baseline), as a table's bridge."""

    def __init__(self, broker: Broker, topic: str) -> None:
        self.cond = threading.Condition()
        self.docs: list[tuple[float, dict[str, Any]]] = []
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="bench-watch", protocol=mqtt.MQTTv5)
        self.client.username_pw_set("supervisor-floor", PASSWORDS["supervisor-floor"])
        ready = threading.Event()
        self.client.on_connect = lambda c, *a: c.subscribe(
            [(topic, 1), (f"casino/{SITE}/table/T0/status", 1)]
        )
        self.client.on_subscribe = lambda *a: ready.set()
        self.client.on_message = self._on
        self.client.connect(broker.host, broker.port, 15)
        self.client.loop_start()
        assert ready.wait(10)

    def _on(self, client: Any, userdata: Any, msg: Any) -> None:
        with self.cond:
            self.docs.append((time.monotonic(), json.loads(msg.payload)))
            self.cond.notify_all()

    def wait_for(self, pred: Any, timeout: float = 30.0) -> float:
        with self.cond:
            found: list[float] = []

            def check() -> bool:
                found[:] = [t for t, d in self.docs if pred(d)]
                return bool(found)

            assert self.cond.wait_for(check, timeout), "timed out"
            return found[0]


def broker_baseline(broker: Broker, watch: Watch, n: int) -> list[float]:
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="bench-pub", protocol=mqtt.MQTTv5)
    pub.username_pw_set("table-T0", PASSWORDS["table-T0"])
    pub.connect(broker.host, broker.port, 15)
    pub.loop_start()
    out = []
    for i in range(n):
        t0 = time.monotonic()
        pub.publish(f"casino/{SITE}/table/T0/status", json.dumps({"probe": i}), qos=1)
        out.append((watch.wait_for(lambda d, i=i: d.get("probe") == i) - t0) * 1000)
    pub.disconnect()
    pub.loop_stop()
    return out


def run(tables: int, args: argparse.Namespace, broker: Broker, workdir: Path) -> None:
    link = f"bench-{tables}"
    names = [f"T{i:04d}" for i in range(tables)]
    params = LinkParams(
        link=link,
        site=SITE,
        currency="EUR",
        bet_value=BET,
        increment_bp=INC,
        reserve_bp=RES,
        base_minor=BASE,
        limit_minor=10**12,
        top_share_bp=10_000,
        members=tuple(names),
    )
    cfg = LinkConfig(
        params=params,
        heartbeat_s=5.0,
        poll_s=0.5,
        batch=args.batch,
        verified_only=True,
        key_file=workdir / f"{link}.pem",
        manifest=workdir / "manifest.json",
        host=broker.host,
        port=broker.port,
        username=f"progressive-{link}",
        password_env="",
        tls=None,
    )
    key = public_key_hex(load_or_create(cfg.key_file).public_key())
    integrity.record(cfg.manifest, {link: key})
    with temp_database("progressive_bench") as dsn:
        with psycopg.connect(dsn) as conn:
            store.migrate(conn)
        feeder = Feeder(dsn, names, link)
        n = 0
        for lo in range(0, tables * args.per_table, args.batch):  # the backlog, as archive batches
            items = [
                feeder.contribution(names[i % tables], i)
                for i in range(lo, min(tables * args.per_table, lo + args.batch))
            ]
            feeder.commit(items)
            n = lo + len(items)
        bare = baseline_inserts(dsn, n, args.batch)
        watch = Watch(broker, signing.topic(SITE, link))
        ctl = Controller(cfg, dsn, PASSWORDS[f"progressive-{link}"])
        ctl.start()  # the software digest, the link created, the first meter published
        t0 = time.perf_counter()
        while ctl.step().taken:
            pass
        elapsed = time.perf_counter() - t0
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT meter_units FROM progressive_links WHERE link = %s", (link,)
            ).fetchone()
        exact = row is not None and row[0] == BASE * UNIT + sum(a * INC for a in feeder.amounts)
        print(f"{tables:>4} tables contributions n={n} contributions_per_s={n / elapsed:.0f} exact={exact}")
        # hits while contributions flow: the controller's own loop in a thread
        runner = threading.Thread(target=ctl.run, daemon=True)
        runner.start()
        stop = threading.Event()

        def flow() -> None:
            i = 10**6
            while not stop.is_set():
                feeder_bg.commit([feeder_bg.contribution(random.choice(names), i)])
                i += 1
                time.sleep(args.round_s / tables)  # each table a round every round_s seconds

        feeder_bg = Feeder(dsn, names, link)
        feeder_bg.next_id = {t: feeder.next_id[t] + 10**7 for t in names}  # ids of its own
        bg = threading.Thread(target=flow, daemon=True)
        bg.start()
        lat = []
        for h in range(args.hits):
            table = random.choice(names)
            data = {
                "action": "hit_pending",
                "link": link,
                "round_id": f"h{h}",
                "seat": 1,
                "combination": "TWO_ACES_MIXED",
            }
            committed = feeder.commit([(table, data)])
            seen = watch.wait_for(lambda d, h=h: any(p["round_id"] == f"h{h}" for p in d.get("pending", ())))
            lat.append((seen - committed) * 1000)
        stop.set()
        bg.join(5)
        ctl.request_stop()
        runner.join(10)
        ctl.stop()
        base = broker_baseline(broker, watch, args.hits)
        watch.client.disconnect()
        watch.client.loop_stop()
        feeder.conn.close()
        feeder_bg.conn.close()
        print(
            f"{tables:>4} tables hit n={len(lat)} commit_to_signed_meter_p50_ms={pct(lat, 0.5):.1f}"
            f" p95_ms={pct(lat, 0.95):.1f} max_ms={max(lat):.1f}"
        )
        print(
            f"{tables:>4} tables baseline bare_insert_rows_per_s={bare:.0f}"
            f" broker_publish_to_subscriber_p50_ms={statistics.median(base):.1f} p95_ms={pct(base, 0.95):.1f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", default="50,500", help="table counts, comma-separated")
    ap.add_argument("--per-table", type=int, default=40, help="contributions per table in the backlog")
    ap.add_argument("--hits", type=int, default=20)
    ap.add_argument(
        "--round-s", type=float, default=40.0, help="a table's round (one contribution) this often"
    )
    ap.add_argument(
        "--batch", type=int, default=500, help="envelopes a transaction (controller and baseline)"
    )
    ap.add_argument("--quick", action="store_true", help="a short run (tests)")
    args = ap.parse_args()
    if args.quick:
        args.tables, args.per_table, args.hits = "20", 5, 3
    counts = [int(x) for x in args.tables.split(",")]
    users = PASSWORDS | {f"progressive-bench-{n}": f"bench-{n}" for n in counts}
    PASSWORDS.update(users)
    with tempfile.TemporaryDirectory() as tmp:
        broker = Broker.start(
            Path(tmp) / "broker", users=users, acl=BrokerKind.FLOOR, site=SITE, persistence=False
        )
        try:
            for n in counts:
                run(n, args, broker, Path(tmp))
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
