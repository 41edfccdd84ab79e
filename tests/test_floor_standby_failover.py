"""The whole floor fails over (issue 45's "done when", on one machine without network namespaces): two floor
"hosts" (each a floor broker, a PostgreSQL and an archive worker: the primary and the standby made by
``pg_basebackup -R``), three tables (a table broker each, with the bridge ``floor_bridge`` renders naming both
floor brokers, and a stand-in table that keeps what it published and answers re-fetch requests). While the tables
deal, every process of the primary host is killed (its broker, its PostgreSQL and its worker, SIGKILL); the
standby is promoted with ``tablectl floor promote``; with no configuration change the bridges carry on to the
standby's broker and its worker stores to the promoted server, repairing from the tables what the primary took
with it (asynchronous replication). Then every table's events are in the archive exactly once, byte for byte.

The netns form of this, with the primary's link dropped too and real tables: hil_tests/test_floor_standby_netns.py.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo
from support.floor import FLOOR_USERS, StandInTable, wait_until

from controller.broker import BrokerKind
from controller.mqtt.floor_bridge import load, render
from floor.archive import store
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.backup.replication import STANDBY_SLOT
from floor.cli.tablectl import add_arguments
from floor.cli.tablectl import main as floor_main
from tablebench.broker import Broker
from tablebench.postgres import Postgres

SITE = "S1"
TABLES = ("T1", "T2", "T3")
DB = "floor"


def table_broker(tmp_path: Path, table: str, floor_ports: list[int]) -> Broker:
    folder = tmp_path / table
    folder.mkdir()
    (folder / "table.toml").write_text(f'[table]\nid = "{table}"\nsite = "{SITE}"\nprofile = "pt-2001"\n'
                                       '[mqtt]\nhost = "localhost"\n')  # fmt: skip
    (folder / "floor-password").write_text(FLOOR_USERS[f"table-{table}"] + "\n")
    hosts = ", ".join(f'"127.0.0.1:{p}"' for p in floor_ports)
    bridge = f'[bridge]\nhosts = [{hosts}]\nusername = "table-{table}"\npassword_file = "floor-password"\n'
    (folder / "bridge.toml").write_text(bridge + "insecure_no_tls = true\nkeepalive = 2\n")
    section = render(load(folder / "table.toml", folder / "bridge.toml")).splitlines()
    return Broker.start(folder / "broker", users=FLOOR_USERS, site=SITE, extra_config=tuple(section))


def archived(dsn: str) -> dict[tuple[str, int], tuple[int, bytes]]:
    """(table, event_id) -> (rows, raw) of the archive; -1 rows when the server does not answer."""
    with psycopg.connect(dsn, connect_timeout=3) as conn:
        rows = conn.execute(
            "SELECT table_id, event_id, count(*) OVER (PARTITION BY site, table_id, event_id), raw FROM events"
            " WHERE site = %s",
            (SITE,),
        ).fetchall()
    return {(r[0], r[1]): (int(r[2]), bytes(r[3])) for r in rows}


def total(dsn: str) -> int:
    try:
        return len(archived(dsn))
    except psycopg.Error:
        return -1


def test_the_primary_floor_host_dies_and_the_standby_takes_over_with_nothing_lost_or_twice(
    tmp_path: Path,
) -> None:
    primary = Postgres.start(settings=("wal_level=replica", "max_wal_senders=4", "max_replication_slots=4"))
    standby: Postgres | None = None
    brokers: list[Broker] = []
    workers: list[ArchiveWorker] = []
    tables: list[StandInTable] = []
    try:
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB}")
            conn.execute("SELECT pg_create_physical_replication_slot(%s)", (STANDBY_SLOT,))
        with psycopg.connect(primary.dsn(DB)) as conn:
            store.migrate(conn)
        standby = Postgres.standby_of(primary, STANDBY_SLOT, "floor_standby")
        floor1 = Broker.start(tmp_path / "floor1", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site=SITE)
        floor2 = Broker.start(tmp_path / "floor2", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site=SITE)
        brokers += [floor1, floor2]
        pair = make_conninfo(host="127.0.0.1,127.0.0.1", port=f"{primary.port},{standby.port}", user="postgres",
                             dbname=DB, target_session_attrs="read-write", connect_timeout="3")  # fmt: skip
        for n, floor in ((1, floor1), (2, floor2)):  # a worker on each floor host, on its own broker
            cfg = ArchiveConfig(dsn=pair, host=floor.host, port=floor.port, username="archive",
                                password=FLOOR_USERS["archive"], worker=str(n), grace=0.5,
                                answer_timeout=3.0)  # fmt: skip
            workers.append(ArchiveWorker(cfg).start())
        for t in TABLES:
            tb = table_broker(tmp_path, t, [floor1.port, floor2.port])
            brokers.append(tb)
            tables.append(StandInTable(tb.host, tb.port, SITE, t))

        def deal(n: int) -> None:
            for i in range(n):
                for table in tables:
                    table.publish("events/card", "card", {"round_id": "r", "n": i})
                    table.flush()  # a card at a time, each acknowledged by its table broker

        deal(20)
        wait_until(lambda: total(primary.dsn(DB)) == 60, 60, "60 archived through the primary host")
        dealer = threading.Thread(target=deal, args=(40,))
        dealer.start()
        wait_until(lambda: total(primary.dsn(DB)) >= 90, 60, "dealing under way")
        # the primary host dies: every process of it
        floor1.kill()
        primary.kill()
        workers[0].kill()
        dealer.join(120)
        assert not dealer.is_alive()
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args(
            ["promote", "--dsn", standby.dsn(), "--old-primary", f"127.0.0.1:{primary.port}"]
        )
        assert floor_main(args) == 0
        deal(1)  # the tables deal on: the new head shows any tail the primary took with it
        want = {(t.table_id, i): t.kept[i] for t in tables for i in t.kept}
        assert len(want) == 3 * 61
        wait_until(lambda: total(standby.dsn(DB)) == len(want), 120, "every event on the promoted standby")
        got = archived(standby.dsn(DB))
        assert {k: v[1] for k, v in got.items()} == want  # none missing, none different, byte for byte
        assert all(rows == 1 for rows, _ in got.values())  # none twice
    finally:
        for table in tables:
            table.close()
        for w in workers:
            w.stop()
        for b in brokers:
            b.stop()
        if standby is not None:
            standby.stop()
        primary.stop()
