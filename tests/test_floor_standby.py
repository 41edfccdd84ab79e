"""The standby floor server (issue 45, docs/floor.md "The standby floor server"), on two real PostgreSQL servers
on this machine: the standby made as the installer makes it (a physical slot on the primary, ``pg_basebackup
-R`` on the standby), synchronous replication switched on as the docs say (``synchronous_standby_names``, a
reload).

1. Events the archive worker writes to the primary appear on the standby; ``backup status``'s replication line
   and the alerts see it streaming, behind (a stated bound) and gone.
2. The primary is SIGKILLed while a table deals; the standby is promoted with ``tablectl floor promote`` (refused
   while the old primary still answers, refused on a server that is not a standby); the archive worker, started
   once with the multi-host DSN (``target_session_attrs=read-write``), reconnects and writes to the new primary
   with no configuration change: every event is there once (counted by (site, table, event_id)), none lost.
"""

from __future__ import annotations

import argparse
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from support.floor import FLOOR_USERS, StandInTable, wait_until

from floor.archive import store
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.backup.health import raise_backup_alerts, read_health
from floor.backup.promote import PromoteError, promote
from floor.backup.replication import (
    BEHIND_ALERT,
    BEHIND_BYTES,
    GONE_ALERT,
    STANDBY_SLOT,
    Replication,
    Role,
    Sender,
    Slot,
    read_replication,
)
from floor.cli.tablectl import add_arguments
from floor.cli.tablectl import main as floor_main
from tablebench.broker import Broker
from tablebench.postgres import Postgres

STANDBY_NAME = "floor2"
DB = "floor"


@dataclass
class Pair:
    primary: Postgres
    standby: Postgres

    def standby_first_dsn(self) -> str:
        """The DSN the installer writes on the standby host: this server first."""
        return make_conninfo(
            host=f"{self.standby.host},{self.primary.host}", port=f"{self.standby.port},{self.primary.port}",
            user="postgres", dbname=DB, target_session_attrs="read-write", connect_timeout="3",
        )  # fmt: skip

    def multi_host_dsn(self) -> str:
        """The one DSN every floor client is given: both servers, the one that takes writes wins."""
        return make_conninfo(
            host=f"{self.primary.host},{self.standby.host}", port=f"{self.primary.port},{self.standby.port}",
            user="postgres", dbname=DB, target_session_attrs="read-write", connect_timeout="3",
        )  # fmt: skip


@pytest.fixture
def pair() -> Iterator[Pair]:
    primary = Postgres.start(settings=("wal_level=replica", "max_wal_senders=4", "max_replication_slots=4"))
    standby = None
    try:
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB}")
            conn.execute("SELECT pg_create_physical_replication_slot(%s)", (STANDBY_SLOT,))
        with psycopg.connect(primary.dsn(DB)) as conn:
            store.migrate(conn)
        standby = Postgres.standby_of(primary, STANDBY_SLOT, STANDBY_NAME)
        yield Pair(primary, standby)
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()


def count(dsn: str) -> tuple[int, int]:
    """(rows, distinct (site, table, event_id)) of the archived events."""
    with psycopg.connect(dsn, connect_timeout=3) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT (site, table_id, event_id)) FROM events"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def ids(dsn: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        return [r[0] for r in conn.execute("SELECT event_id FROM events ORDER BY event_id").fetchall()]


def has_role(dsn: str, name: str) -> bool:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is not None


def safe_count(dsn: str) -> int:
    try:
        return count(dsn)[0]
    except psycopg.Error:
        return -1


def test_the_standby_is_promoted_and_the_archive_finds_it_with_nothing_lost_or_twice(
    pair: Pair, floor_broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    p_dsn, s_dsn = pair.primary.dsn(DB), pair.standby.dsn(DB)
    cfg = ArchiveConfig(dsn=pair.multi_host_dsn(), host=floor_broker.host, port=floor_broker.port,
                        username="archive", password=FLOOR_USERS["archive"], worker="1", grace=0.3,
                        answer_timeout=2.0)  # fmt: skip
    worker = ArchiveWorker(cfg).start()
    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
    dealing = threading.Event()
    dealt = 0

    def deal(n: int, *, paced: bool = False) -> None:
        nonlocal dealt
        for _ in range(n):
            table.publish("events/card", "card", {"round_id": "r", "n": dealt})
            dealt += 1
            if paced:  # a card at a time, as a table deals: each acknowledged by the broker before the next
                table.flush()

    try:
        # 1. streaming: what the worker writes to the primary is replayed on the standby
        deal(30)
        table.flush()
        wait_until(lambda: count(p_dsn)[0] == 30, 30, "30 archived on the primary")
        wait_until(lambda: safe_count(s_dsn) == 30, 30, "30 replayed on the standby")
        with psycopg.connect(p_dsn, autocommit=True) as conn:
            wait_until(lambda: read_replication(conn).senders != (), 30, "the standby streaming")
            state = read_replication(conn)
            assert state.role is Role.PRIMARY and state.problems() == []
            assert [s.name for s in state.senders] == [STANDBY_NAME]
            # synchronous, as docs/floor.md says to switch it on: a commit waits for the standby
            conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'")
            conn.execute("SELECT pg_reload_conf()")
            wait_until(lambda: [s.sync_state for s in read_replication(conn).senders] == ["sync"], 30, "sync")
            assert "synchronous (floor2)" in "\n".join(read_health(conn).lines())
        # as an unprivileged role (the dashboard's, the archive's): the same judgement, no false alarm
        with psycopg.connect(p_dsn, autocommit=True) as conn:
            conn.execute("CREATE ROLE watcher LOGIN")
            conn.execute("CREATE ROLE floor_owner LOGIN")  # as install.sh leaves it: not a superuser
            conn.execute("GRANT EXECUTE ON FUNCTION pg_promote(boolean, integer) TO floor_owner")
        wait_until(lambda: has_role(s_dsn, "watcher"), 30, "the role replayed on the standby")
        for dsn in (p_dsn, s_dsn):
            with psycopg.connect(make_conninfo(dsn, user="watcher")) as conn:
                assert read_replication(conn).problems() == [], dsn
        with psycopg.connect(s_dsn) as conn:
            mine = read_replication(conn)
            assert mine.role is Role.STANDBY and mine.receiving and mine.problems() == []
            assert "STANDBY" in "\n".join(read_health(conn).lines())
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # the standby takes no writes
                conn.execute("DELETE FROM events")
        assert main("backup", "status", "--dsn", s_dsn) == 1  # these servers archive no WAL: that is said
        out = capsys.readouterr().out.splitlines()
        assert any(
            line.startswith("replication: this server is a STANDBY (read-only), streaming") for line in out
        )
        assert [line for line in out if line.startswith("PROBLEM")] == [
            "PROBLEM: WAL archiving is off (archive_mode = off): no point-in-time recovery"
        ]  # and nothing of replication: the standby streams
        assert main("backup", "run", "--dsn", s_dsn) == 0  # the timers run on both: the standby's do nothing
        assert "the primary takes" in capsys.readouterr().out
        # promotion refused while the old primary answers, and on a server that is not a standby
        old_primary = f"{pair.primary.host}:{pair.primary.port}"
        with (
            psycopg.connect(pair.standby.dsn(), autocommit=True) as conn,
            pytest.raises(PromoteError, match="still"),
        ):
            promote(conn, old_primary)
        with (
            psycopg.connect(pair.primary.dsn(), autocommit=True) as conn,
            pytest.raises(PromoteError, match="not a"),
        ):
            promote(conn, None)

        # 2. the primary dies while the table deals
        dealer = threading.Thread(target=lambda: (deal(60, paced=True), dealing.set()))
        dealer.start()
        wait_until(lambda: safe_count(p_dsn) >= 45, 30, "dealing under way")
        pair.primary.kill()
        dealer.join(60)
        assert dealing.is_set()
        table.flush()
        assert safe_count(p_dsn) == -1  # gone
        deal(20)  # the table deals on with no primary at all: the worker holds these and retries
        table.flush()
        with psycopg.connect(pair.standby.dsn(), autocommit=True) as conn:
            gone = read_replication(conn)
            wait_until(lambda: not read_replication(conn).receiving, 30, "the standby sees the primary gone")
            assert gone.role is Role.STANDBY
            assert [p.kind for p in read_replication(conn).problems()] == [GONE_ALERT]
        # the documented command, with its check that the old primary is gone
        # as installed on the standby host: the owner's pair DSN (this server first), the owner allowed
        # pg_promote (install.sh standby_primary_sql, made on the primary and replicated here)
        owner_dsn = make_conninfo(pair.standby_first_dsn(), user="floor_owner")
        assert main("promote", "--dsn", owner_dsn, "--old-primary", old_primary) == 0
        assert "promoted: this server is the primary now (timeline 2)" in capsys.readouterr().out
        # the worker, never told, writes the rest to the new primary
        wait_until(lambda: safe_count(s_dsn) >= 110, 90, "every event on the promoted standby")
        deal(1)  # and deals on
        table.flush()
        wait_until(lambda: safe_count(s_dsn) == 111, 60, "the next event too")
        assert count(s_dsn) == (111, 111)  # none twice
        assert ids(s_dsn) == list(range(1, 112))  # none lost
        assert worker.stats.retries > 0  # it did lose the primary, and found the new one by itself
        assert worker.counters().connected
    finally:
        table.close()
        worker.stop()


def main(*argv: str) -> int:
    """``tablectl floor ARGV...``, as the technician types it."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return floor_main(parser.parse_args(list(argv)))


def test_promote_wants_the_old_primary_named_or_said_gone() -> None:
    assert main("promote", "--dsn", "postgresql://nobody@127.0.0.1:1/x") == 2


NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def test_the_replication_judge_bounds_and_alerts() -> None:
    """The stated bounds (floor/backup/replication.py): a standby more than BEHIND_BYTES of WAL or BEHIND_TIME
    behind is alerted (warning), a missing one (critical); a single server says nothing."""
    ok = Sender(STANDBY_NAME, "10.0.0.2", "streaming", "async", 1024, timedelta(seconds=1))
    slot = Slot(STANDBY_SLOT, True, 1024, "reserved")
    good = Replication(Role.PRIMARY, NOW, (ok,), slot)
    assert good.problems() == []
    far = Replication(Role.PRIMARY, NOW, (replace(ok, behind_bytes=BEHIND_BYTES + 1),), slot)
    assert [(p.kind, p.severity) for p in far.problems()] == [(BEHIND_ALERT, "warning")]
    slow = Replication(Role.PRIMARY, NOW, (replace(ok, replay_lag=timedelta(seconds=61)),), slot)
    assert "61 s behind" in slow.problems()[0].message
    # without the right to read the lag columns: the slot's flushed position stands in
    hidden = Replication(Role.PRIMARY, NOW, (replace(ok, behind_bytes=None, replay_lag=None),),
                         replace(slot, retained_bytes=BEHIND_BYTES * 2))  # fmt: skip
    assert [p.kind for p in hidden.problems()] == [BEHIND_ALERT]
    gone = Replication(Role.PRIMARY, NOW, (), replace(slot, active=False, retained_bytes=5 * 1048576))
    [p] = gone.problems()
    assert (p.kind, p.severity) == (GONE_ALERT, "critical") and "5.0 MiB of WAL kept" in p.message
    assert p.dedupe_key == "standby_gone:2026112908"  # once an hour while it lasts
    assert Replication(Role.SINGLE, NOW).problems() == []
    assert Replication(Role.SINGLE, NOW).lines() == [
        "replication: none (no standby slot here; a single floor server)"
    ]


def test_a_multi_host_dsn_is_what_the_docs_show() -> None:
    """The DSN shape docs/floor.md gives parses into both hosts and the read-write attribute."""
    d = conninfo_to_dict("host=floor1.casino.lan,floor2.casino.lan port=5432,5432 dbname=floor"
                         " target_session_attrs=read-write connect_timeout=3")  # fmt: skip
    assert d["host"] == "floor1.casino.lan,floor2.casino.lan" and d["target_session_attrs"] == "read-write"


def test_a_standby_gone_is_alerted_and_on_the_dashboards_line(pair: Pair) -> None:
    """The standby dies: the primary's maintenance pass (``raise_backup_alerts``, every minute) raises
    ``standby_gone`` once, and the dashboard's status line (``BackupHealth.words``) says it."""
    p_dsn = pair.primary.dsn(DB)
    with psycopg.connect(p_dsn, autocommit=True) as conn:
        wait_until(lambda: read_replication(conn).senders != (), 30, "the standby streaming")
        raise_backup_alerts(conn)  # (this test server archives no WAL: that one is alerted here too)
        assert standby_alerts(conn) == []
        assert read_health(conn).words() == ""  # no backups set up here, the standby streams: nothing to say
        pair.standby.kill()
        wait_until(lambda: read_replication(conn).senders == (), 30, "the primary sees the standby gone")
        raise_backup_alerts(conn)
        raise_backup_alerts(conn)  # a minute later: once, not every minute
        [(kind, severity, message)] = standby_alerts(conn)
        assert (kind, severity) == (GONE_ALERT, "critical")
        words = read_health(conn).words()
        assert message.startswith("the standby floor server is not connected")
        assert words.startswith("Standby: the standby floor server is not connected")


def standby_alerts(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    rows = conn.execute(
        "SELECT kind, severity, message FROM floor_alerts WHERE kind LIKE 'standby%' ORDER BY alert_id"
    ).fetchall()
    return [(str(k), str(s), str(m)) for k, s, m in rows]


LIB = Path(__file__).resolve().parents[1] / "systemd" / "floor" / "lib.sh"


def lib_sh(script: str, **env: str) -> str:
    """Run ``script`` with systemd/floor/lib.sh sourced (the installer's functions), ``env`` set."""
    done = subprocess.run(
        ["bash", "-c", f'set -euo pipefail; source "{LIB}"; {script}'],
        capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", **env},
    )  # fmt: skip
    return done.stdout


def test_the_installer_gives_every_service_the_pairs_dsn_and_the_primary_its_standbys_settings() -> None:
    """What ``install.sh --standby HOST`` writes (systemd/floor/lib.sh): the DSN of both servers with
    target_session_attrs=read-write, as libpq reads it; the slot and the standby's name the status reads; the
    synchronous setting only when asked; pg_hba lines for the peer's address alone. A single server: as before."""
    pair = {"FLOOR_HOSTNAME": "floor1.casino.lan", "FLOOR_PEER": "localhost"}
    d = conninfo_to_dict(lib_sh("pair_dsn floor_archive 5432", **pair))
    assert (d["host"], d["port"], d["dbname"], d["user"]) == (
        "floor1.casino.lan,localhost",
        "5432,5432",
        DB,
        "floor_archive",
    )
    assert (d["target_session_attrs"], d["sslmode"], d["connect_timeout"]) == (
        "read-write",
        "verify-full",
        "3",
    )
    single = conninfo_to_dict(lib_sh("pair_dsn floor_archive 5432", FLOOR_HOSTNAME="floor1.casino.lan"))
    assert single["host"] == "localhost" and "target_session_attrs" not in single
    assert lib_sh('echo "$STANDBY_SLOT"').strip() == STANDBY_SLOT  # the slot the status and alerts look for
    settings = lib_sh("standby_pg_settings", **pair)
    assert "cluster_name = 'floor_standby'" in settings and "synchronous_standby_names = ''" in settings
    sync = lib_sh("standby_pg_settings", FLOOR_SYNC_STANDBY="1", **pair)
    assert "synchronous_standby_names = 'floor_standby'" in sync
    assert lib_sh("standby_pg_settings") == lib_sh("standby_hba") == ""  # no peer: nothing of it
    hba = lib_sh("standby_hba", **pair).splitlines()
    assert [line.split()[:2] + line.split()[3:] for line in hba] == [
        ["hostssl", DB, "127.0.0.1/32", "scram-sha-256"],
        ["hostssl", "replication", "127.0.0.1/32", "scram-sha-256"],
    ]
    assert hba[1].split()[2] == "floor_replication"
