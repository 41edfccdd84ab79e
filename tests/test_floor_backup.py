"""Backups and point-in-time recovery of the floor's archive (issue 45), on a real PostgreSQL with WAL archiving
on, as the floor installer sets it up: archive_command is the shipped ``systemd/floor/tablectl-floor-wal-archive``
into a backup directory, base backups are ``tablectl floor backup run`` (pg_basebackup), a restore is
``tablectl floor restore`` and the restore check ``tablectl floor backup verify``.

1. A base backup, events written, the time noted, more events written; restored to the noted time into a new
   data directory and started: exactly the earlier events are there, byte for byte, and their chains verify.
2. The restore check passes on a good archive, and fails, recorded and alerted, when a WAL segment is missing
   from the archive or damaged (the restore stops early).
3. Retention: beyond ``--keep`` the oldest base backup goes, with the WAL only it needed.
4. After a restore, an archive worker on the restored database re-fetches from the table what it still keeps
   and raises ``event_missing`` naming exactly what it no longer keeps.

One server per module (archiving to its own folder); each test its own database on it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from support.floor import FLOOR_USERS, StandInTable, now_ts, temp_database, wait_until

from controller.canonical import canonical
from controller.journal.event_chain import EVENT_GENESIS, chained_text, read_chain
from floor.archive import store
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.backup.health import Archiver, BackupHealth, JobRecord, Kind
from floor.backup.layout import BackupDir, segment_start
from floor.backup.server import RestoredServer, own
from floor.backup.verify import replay_end
from floor.cli import backup as backup_cli
from floor.cli import restore as restore_cli
from floor.common.messages import Envelope, TableRef, parse_envelope
from tablebench.broker import Broker
from tablebench.postgres import Postgres, wal_archived

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE_SCRIPT = ROOT / "systemd" / "floor" / "tablectl-floor-wal-archive"
SITE = "lisboa"


@dataclass
class Archiving:
    server: Postgres
    folder: Path  # the backup directory (wal/, base/), and room for scratch and restored data directories

    @property
    def backups(self) -> BackupDir:
        return BackupDir(self.folder / "backups")


@pytest.fixture(scope="module")
def archiving() -> Iterator[Archiving]:
    folder = Path(tempfile.mkdtemp(prefix="floor-backup-test-"))
    own(folder)
    folder.chmod(0o700)
    (folder / "backups" / "wal").mkdir(parents=True)
    own(folder / "backups")
    own(folder / "backups" / "wal")
    # the server's account must run the script: a checkout under a private directory (CI's fresh clone in a
    # mktemp -d) is closed to it, so the shipped script runs from a copy in the folder it owns
    script = folder / ARCHIVE_SCRIPT.name
    shutil.copy2(ARCHIVE_SCRIPT, script)
    script.chmod(0o755)
    own(script)
    command = f"{script} %p {folder}/backups/wal/%f"
    server = Postgres.start(settings=("wal_level=replica", "archive_mode=on", f"archive_command={command}",
                                      "max_wal_senders=4"))  # fmt: skip
    try:
        yield Archiving(server, folder)
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def floor_db(archiving: Archiving) -> Iterator[str]:
    with temp_database(admin=archiving.server.dsn()) as d:
        with psycopg.connect(d) as conn:
            store.migrate(conn)
        yield d


class ChainedTable:
    """Envelopes as a table publishes them (canonical, hash-chained), parsed as the archive parses them."""

    def __init__(self, table_id: str) -> None:
        self.table = TableRef(SITE, table_id)
        self.head = EVENT_GENESIS
        self.next_id = 1

    def envelopes(self, n: int) -> list[Envelope]:
        out = []
        for _ in range(n):
            doc = {"data": {"code": "probe", "n": self.next_id}, "event_id": self.next_id,
                   "table": self.table.table_id, "ts": now_ts(), "type": "fault"}  # fmt: skip
            text, self.head = chained_text(self.head, canonical(doc | {"prev": self.head}))
            env = parse_envelope(self.table, "events/fault", text.encode(), "live")
            assert isinstance(env, Envelope), env
            out.append(env)
            self.next_id += 1
        return out


def write(dsn: str, envelopes: list[Envelope]) -> None:
    with psycopg.connect(dsn) as conn, conn.transaction():
        assert store.store_envelopes(conn.cursor(), envelopes) == len(envelopes)


def events(dsn: str) -> dict[tuple[str, int], tuple[bytes, str | None, str | None]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT table_id, event_id, raw, prev, chain FROM events").fetchall()
    return {(r[0], r[1]): (bytes(r[2]), r[3], r[4]) for r in rows}


def chains_verify(rows: dict[tuple[str, int], tuple[bytes, str | None, str | None]]) -> bool:
    """Every table's events 1..n present, each hashing to its chain value and naming the one before it."""
    by_table: dict[str, list[int]] = {}
    for table_id, event_id in rows:
        by_table.setdefault(table_id, []).append(event_id)
    for table_id, ids in by_table.items():
        head = EVENT_GENESIS
        for expected, event_id in enumerate(sorted(ids), start=1):
            raw, prev, chain = rows[(table_id, event_id)]
            link = read_chain(raw, prev)
            if event_id != expected or link is None or prev != head or not link.self_consistent:
                return False
            head = link.chain
            assert chain == head
    return True


def server_time(dsn: str) -> datetime:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
        assert row is not None
        return row[0]  # type: ignore[no-any-return]


def cli(module: Any, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return int(module.main(parser.parse_args(list(argv))))


def base_backup(a: Archiving, dsn: str, keep: int = 7) -> None:
    assert cli(backup_cli, "run", "--dsn", dsn, "--backup-dir", str(a.backups.root), "--keep", str(keep)) == 0


def verify(a: Archiving, dsn: str) -> int:
    return cli(backup_cli, "verify", "--dsn", dsn, "--backup-dir", str(a.backups.root),
               "--scratch", str(a.folder / "scratch"), "--timeout", "120")  # fmt: skip


def newest_record(dsn: str, kind: str) -> tuple[bool, str, dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT ok, summary, details FROM floor_backups WHERE kind = %s ORDER BY id DESC LIMIT 1", (kind,)
        ).fetchone()
    assert row is not None
    return bool(row[0]), str(row[1]), dict(row[2])


def open_alerts(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT kind, message FROM floor_alerts WHERE acknowledged_at IS NULL ORDER BY alert_id"
        ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


@contextlib.contextmanager
def restored_server(a: Archiving, data: Path) -> Iterator[RestoredServer]:
    server = RestoredServer(data, data.parent / f"{data.name}-socket", data.parent / f"{data.name}.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_restore_to_a_noted_time_has_exactly_the_events_written_before_it(
    archiving: Archiving, floor_db: str
) -> None:
    a, dbname = archiving, psycopg.conninfo.conninfo_to_dict(floor_db)["dbname"]
    t1, t2 = ChainedTable("bj01"), ChainedTable("bj02")
    write(floor_db, t1.envelopes(40))
    base_backup(a, floor_db)
    write(floor_db, t1.envelopes(25) + t2.envelopes(30))  # after the base backup: only in the WAL archive
    before = events(floor_db)
    noted = server_time(floor_db)
    write(floor_db, t1.envelopes(10) + t2.envelopes(5))
    wal_archived(floor_db)
    assert len(events(floor_db)) == len(before) + 15

    data = a.folder / "restored"
    assert cli(restore_cli, "--to", noted.isoformat(), "--backup-dir", str(a.backups.root),
               "--data-dir", str(data)) == 0  # fmt: skip
    with restored_server(a, data) as server:
        server.wait_open(str(dbname), 120)
        got = events(server.dsn(str(dbname)))
    assert got == before  # exactly the events committed before the noted time, byte for byte
    assert chains_verify(got)
    assert {t for t, _ in got} == {"bj01", "bj02"} and len(got) == 40 + 25 + 30

    # a restore into a directory that holds something is refused, and nothing in it is touched
    assert cli(restore_cli, "--to", "end", "--backup-dir", str(a.backups.root), "--data-dir", str(data)) == 1
    shutil.rmtree(data)


def test_the_restore_check_passes_on_a_good_archive_and_fails_on_a_missing_or_damaged_segment(
    archiving: Archiving, floor_db: str
) -> None:
    a = archiving
    table = ChainedTable("bj03")
    write(floor_db, table.envelopes(20))
    base_backup(a, floor_db)
    for _ in range(3):  # three more segments, each with events, after the base backup
        write(floor_db, table.envelopes(15))
        wal_archived(floor_db)

    assert verify(a, floor_db) == 0
    ok, summary, details = newest_record(floor_db, "verify")
    assert ok, summary
    assert details["events"] == 20 + 45 and details["tables"] >= 1
    assert cli(backup_cli, "status", "--dsn", floor_db) == 0  # all good: nothing late, nothing failed

    # a segment written after the newest base backup goes missing from the archive
    newest = a.backups.backups()[-1]
    segments = a.backups.segments()
    later = [s for s in segments if s > newest.start_wal]
    assert len(later) >= 3
    victim = a.backups.wal / later[1]
    kept = victim.read_bytes()
    victim.unlink()
    try:
        assert verify(a, floor_db) == 1
        ok, summary, details = newest_record(floor_db, "verify")
        assert not ok
        assert later[1] in summary  # the archive's hole, named
        assert "the restore stopped" in summary  # and the restore did stop there
        assert any(k == "backup_failed" and "restore check" in m for k, m in open_alerts(floor_db))
        assert cli(backup_cli, "status", "--dsn", floor_db) == 1
    finally:
        victim.write_bytes(kept)
        own(victim)

    # damaged in place: the same name, its first page's records overwritten (the rest of it is padding)
    damaged = bytearray(kept)
    damaged[256:4096] = b"\xa5" * (4096 - 256)
    victim.write_bytes(bytes(damaged))
    try:
        assert verify(a, floor_db) == 1
        ok, summary, _ = newest_record(floor_db, "verify")
        assert not ok and "the restore stopped" in summary, summary
    finally:
        victim.write_bytes(kept)
        own(victim)
    assert verify(a, floor_db) == 0  # the archive whole again: good again


def test_retention_keeps_the_newest_backups_and_the_wal_they_need(
    archiving: Archiving, floor_db: str
) -> None:
    a = archiving
    table = ChainedTable("bj04")
    for _ in range(3):
        write(floor_db, table.envelopes(5))
        wal_archived(floor_db)
        base_backup(a, floor_db, keep=2)
    kept = a.backups.backups()
    assert len(kept) == 2 and not a.backups.partials()
    oldest_needed = kept[0].start_wal
    assert min(a.backups.segments()) >= oldest_needed  # older WAL pruned ...
    assert oldest_needed in a.backups.segments()  # ... and what the oldest kept backup needs is still there
    ok, summary, _ = newest_record(floor_db, "base")
    assert ok and "removed" in summary


def test_replay_end_reads_the_new_timelines_switch_point(tmp_path: Path) -> None:
    (tmp_path / "pg_wal").mkdir()
    assert replay_end(tmp_path) is None
    (tmp_path / "pg_wal" / "00000002.history").write_text("1\t0/5000000\tno recovery target specified\n")
    (tmp_path / "pg_wal" / "00000003.history").write_text(
        "1\t0/5000000\tno recovery target\n2\t0/9000A8\tx\n"
    )
    assert replay_end(tmp_path) == 0x9000A8
    assert segment_start("000000020000000100000003", 16 * 1024 * 1024) == (1 << 32) + 3 * 16 * 1024 * 1024
    assert json.dumps(make_conninfo(host="/x", dbname="d"))  # the restored server's DSN form


def _health(**kw: Any) -> BackupHealth:
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    good = JobRecord(1, Kind.BASE, "20261129T020000Z", now - timedelta(hours=10), True, "from WAL ...")
    checked = JobRecord(2, Kind.VERIFY, "20261129T020000Z", now - timedelta(hours=8), True, "restored")
    archiver = Archiver("on", 10, "000000010000000000000009", now - timedelta(minutes=3), 0, None, None)
    base = {"now": now, "since": now - timedelta(days=30), "last_good_base": good, "last_base": good,
            "last_good_verify": checked, "last_verify": checked, "archiver": archiver}  # fmt: skip
    return BackupHealth(**(base | kw))


def test_backup_health_names_what_is_late_or_failed() -> None:
    assert _health().problems() == [] and _health().words() == ""
    now = _health().now
    old = JobRecord(1, Kind.BASE, "20261127T020000Z", now - timedelta(hours=27), True, "x")
    late = _health(last_good_base=old, last_base=old).problems()
    assert [(p.kind, p.dedupe_key) for p in late] == [("backup_late", "backup_late:base:1")]
    failed = JobRecord(3, Kind.VERIFY, "20261129T020000Z", now, False, "the restore stopped at 0/5000000")
    [p] = _health(last_verify=failed).problems()
    assert p.kind == "backup_failed" and "the restore stopped" in p.message
    never = _health(last_good_verify=None, last_verify=None, since=now - timedelta(hours=2)).problems()
    assert never == []  # a new floor: its first restore check is not due yet
    never = _health(last_good_verify=None, last_verify=None).problems()
    assert [p.dedupe_key for p in never] == ["backup_late:verify:0"]
    failing = Archiver("on", 10, "000000010000000000000009", now - timedelta(minutes=30), 4,
                       "00000001000000000000000A", now - timedelta(minutes=1))  # fmt: skip
    [p] = _health(archiver=failing).problems()
    assert p.dedupe_key == "backup_failed:wal:00000001000000000000000A" and "FAILING" in "\n".join(
        _health(archiver=failing).lines()
    )
    segment = "00000001000000000000000A"
    recovered = Archiver("on", 11, segment, now, 4, segment, now - timedelta(minutes=1))
    assert _health(archiver=recovered).problems() == []
    off = Archiver("off", 0, None, None, 0, None, None)
    dev = _health(archiver=off, last_base=None, last_good_base=None, last_verify=None, last_good_verify=None)
    assert dev.words() == ""  # a development server without backups: the dashboard says nothing
    assert "archive_mode = off" in _health(archiver=off).words()


def test_after_a_restore_the_archive_refetches_what_the_tables_keep_and_names_what_is_gone(
    archiving: Archiving, floor_db: str, floor_broker: Broker
) -> None:
    """The floor's disk is gone (docs/floor.md "Restore to a point in time"): the archive restored to a noted
    time; the tables dealt on meanwhile and one of them no longer keeps a few of the events after that time. An
    archive worker started on the restored database fills the rest by gap repair and raises event_missing naming
    exactly the ids the table no longer has."""
    a, dbname = archiving, str(psycopg.conninfo.conninfo_to_dict(floor_db)["dbname"])

    def worker(dsn: str) -> ArchiveWorker:
        cfg = ArchiveConfig(dsn=dsn, host=floor_broker.host, port=floor_broker.port, username="archive",
                            password=FLOOR_USERS["archive"], worker="1", grace=0.3, answer_timeout=2.0)  # fmt: skip
        return ArchiveWorker(cfg).start()

    def count(dsn: str) -> int:
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT count(*) FROM events WHERE table_id = 'T1'").fetchone()
        return int(row[0]) if row else -1

    table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
    live = worker(floor_db)
    data = a.folder / "restored-repair"
    try:
        for i in range(20):
            table.publish("events/card", "card", {"round_id": "r", "n": i})
        table.flush()
        wait_until(lambda: count(floor_db) == 20, what="the first 20 archived")
        base_backup(a, floor_db)
        noted = server_time(floor_db)
        for i in range(20, 40):
            table.publish("events/card", "card", {"round_id": "r", "n": i})
        table.flush()
        wait_until(lambda: count(floor_db) == 40, what="40 archived")
        wal_archived(floor_db)
        live.stop()  # the server is lost here

        assert cli(restore_cli, "--to", noted.isoformat(), "--backup-dir", str(a.backups.root),
                   "--data-dir", str(data)) == 0  # fmt: skip
        with restored_server(a, data) as server:
            server.wait_open(dbname, 120)
            restored = server.dsn(dbname)
            assert count(restored) == 20  # as it was at the noted time
            table.forget(23, 24, 25)  # past the table's retention by the time the floor is back
            w = worker(restored)
            try:
                table.publish("events/card", "card", {"round_id": "r", "n": 40})  # the table deals on
                table.flush()
                wait_until(lambda: count(restored) == 41 - 3, 60, "the restored archive repaired")

                def given_up(dsn: str) -> tuple[int, int]:
                    with psycopg.connect(dsn) as conn:
                        row = conn.execute(
                            "SELECT (SELECT count(*) FROM missing_events),"
                            " (SELECT count(*) FROM floor_alerts WHERE kind = 'event_missing')"
                        ).fetchone()
                    return (int(row[0]), int(row[1])) if row else (0, 0)

                # the re-fetch's closing answer (what the table no longer keeps) is stored after the events
                wait_until(lambda: given_up(restored) == (3, 1), 60, "the ids gone for good recorded")
                with psycopg.connect(restored) as conn:
                    gone = conn.execute("SELECT event_id FROM missing_events ORDER BY 1").fetchall()
                    alert = conn.execute(
                        "SELECT details FROM floor_alerts WHERE kind = 'event_missing'"
                    ).fetchall()
                    replayed = conn.execute(
                        "SELECT event_id, raw FROM events WHERE source = 'replay' ORDER BY 1"
                    ).fetchall()
                assert [r[0] for r in gone] == [23, 24, 25]
                assert [r[0]["event_ids"] for r in alert] == [[23, 24, 25]]
                assert [r[0] for r in replayed] == [21, 22, *range(26, 41)]  # re-fetched from the table
                assert all(bytes(r[1]) == table.kept[r[0]] for r in replayed)  # byte for byte
            finally:
                w.stop()
    finally:
        table.close()
        live.stop()
        shutil.rmtree(data, ignore_errors=True)
