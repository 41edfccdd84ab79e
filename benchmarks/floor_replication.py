"""The floor archive's capacity with synchronous replication on and off (issue 45, docs/floor.md "Synchronous
replication"): a primary and a hot standby made as the installer makes one (a physical slot, ``pg_basebackup -R``,
both private servers on this machine, tablebench/postgres.py), one mosquitto, ``--workers`` archive workers (each
in its own process) writing to the primary.

Each run is benchmarks/floor.py's ``capacity``: a backlog of ``--flood`` events (the measured mix of a real table)
queued for the workers' persistent sessions while they are stopped, then drained: events/s from the first row
stored to the last. The runs alternate ``synchronous_standby_names`` = '' (off: the baseline, same run) and
'floor_standby' (on: every archive commit waits for the standby's flush), ``--rounds`` times each, each on its
own site; the primary's ``pg_stat_replication`` confirms the mode before each run.

    python benchmarks/floor_replication.py [--flood 20000] [--workers 2] [--rounds 2] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import paho.mqtt.client as mqtt
import psycopg

from benchmarks.floor import drained, queue_flood, start_workers
from controller.mqtt.paho_client import BrokerEndpoint, new_client
from floor.archive.store import migrate
from floor.archive.worker import ArchiveConfig
from floor.backup.replication import STANDBY_SLOT
from tablebench.broker import Broker
from tablebench.postgres import Postgres

STANDBY_NAME = "floor_standby"  # cluster_name, as the installer names the standby
DB = "floor"


def set_synchronous(primary: Postgres, on: bool) -> None:
    """``install.sh --synchronous on|off``'s setting, a reload; waits until the standby streams in that mode."""
    want = "sync" if on else "async"
    with psycopg.connect(primary.dsn(), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME if on else ''}'")
        conn.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while True:
            row = conn.execute(
                "SELECT sync_state, state FROM pg_stat_replication WHERE application_name = %s",
                (STANDBY_NAME,),
            ).fetchone()
            if row is not None and tuple(row) == (want, "streaming"):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby is not streaming {want}: {row}")
            time.sleep(0.1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flood", type=int, default=20_000, help="backlog drained per run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="runs of each mode, alternating")
    ap.add_argument("--quick", action="store_true", help="flood 2000, one round (smoke)")
    args = ap.parse_args()
    if args.quick:
        args.flood, args.rounds = 2000, 1
    primary = Postgres.start(settings=("wal_level=replica", "max_wal_senders=4", "max_replication_slots=4"))
    standby = None
    workdir = Path(tempfile.mkdtemp(prefix="floor-replication-bench-"))
    broker = None
    try:
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB}")
            conn.execute("SELECT pg_create_physical_replication_slot(%s)", (STANDBY_SLOT,))
        with psycopg.connect(primary.dsn(DB)) as conn:
            migrate(conn)
        standby = Postgres.standby_of(primary, STANDBY_SLOT, STANDBY_NAME)
        broker = Broker.start(workdir / "broker", users={"archive": "archive", "bench": "bench"}, acl=False,
                              extra_config=("max_inflight_messages 0", "max_queued_messages 1000000"))  # fmt: skip
        cfgs = [ArchiveConfig(primary.dsn(DB), broker.host, broker.port, "archive", "archive", worker=f"r{i}")
                for i in range(args.workers)]  # fmt: skip
        client = new_client(BrokerEndpoint(broker.host, broker.port, "bench", "bench"),
                            f"bench-{uuid.uuid4().hex[:8]}", protocol=mqtt.MQTTv311)  # fmt: skip
        client.max_inflight_messages_set(1000)
        client.max_queued_messages_set(0)
        client.connect(broker.host, broker.port, 30)
        client.loop_start()
        print(f"floor replication benchmark: a backlog of {args.flood} events (the measured mix, 200 tables)"
              f" drained by {args.workers} archive worker(s) into a primary with a hot standby (both PostgreSQL on"
              " this machine), synchronous replication off (baseline) and on, alternating")  # fmt: skip
        workers = start_workers(cfgs)  # their sessions exist from here: a backlog queues for them
        rates: dict[bool, list[float]] = {False: [], True: []}
        ok = True
        for n in range(args.rounds):
            for on in (False, True):
                for w in workers:
                    w.stop()
                set_synchronous(primary, on)
                site = f"{'S' if on else 'A'}{n}"
                queue_flood(client, site, args.flood, 200)
                workers = start_workers(cfgs)
                stored, rate = drained(primary.dsn(DB), site, args.flood)
                ok = ok and stored == args.flood
                rates[on].append(rate)
                label = "sync on " if on else "sync off"
                print(f"{label}  run={n + 1} flood={args.flood} stored={stored} events_per_s={rate:.0f}")
        for w in workers:
            w.stop()
        client.disconnect()
        client.loop_stop()
        off, on_ = statistics.median(rates[False]), statistics.median(rates[True])
        print(f"capacity  sync_off_events_per_s={off:.0f} (baseline) sync_on_events_per_s={on_:.0f}"
              f" on/off={on_ / off:.2f} (medians of {args.rounds} run(s) each)")  # fmt: skip
        return 0 if ok else 1
    finally:
        if broker is not None:
            broker.stop()
        if standby is not None:
            standby.stop()
        primary.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
