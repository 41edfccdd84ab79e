"""Are the floor's backups good? What the backup jobs recorded (``floor_backups``) and what PostgreSQL says of its
WAL archiving (``pg_stat_archiver``), judged against the timers' schedule; each problem a floor alert.

Read by ``tablectl floor backup status``, the dashboard, and the archive's maintenance pass (every
``CHECK_EVERY_S``), which raises the alerts: a job that never ran (its timer stopped, the server was down) is
found late by the archive, not by the job itself."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from floor.backup.replication import Replication, Role, read_replication
from floor.common.alerts import raise_alert
from floor.common.messages import TableRef

BACKUP_LATE = timedelta(hours=26)  # tablectl-floor-backup.timer: daily (and a slack of two hours)
VERIFY_LATE = timedelta(hours=26)  # tablectl-floor-backup-verify.timer: daily
CHECK_EVERY_S = 60.0
BACKUPS = TableRef("floor", "backup")  # where the backups' floor alerts are filed
LATE_ALERT = "backup_late"
FAILED_ALERT = "backup_failed"


class Kind(enum.StrEnum):
    BASE = "base"
    VERIFY = "verify"


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: int
    kind: Kind
    label: str
    finished_at: datetime
    ok: bool
    summary: str


@dataclass(frozen=True, slots=True)
class Archiver:
    """pg_stat_archiver, and whether archiving is on at all."""

    mode: str
    archived_count: int
    last_archived_wal: str | None
    last_archived_time: datetime | None
    failed_count: int
    last_failed_wal: str | None
    last_failed_time: datetime | None

    @property
    def failing(self) -> bool:
        """The newest attempt failed (a failure after the last success)."""
        return self.last_failed_time is not None and (
            self.last_archived_time is None or self.last_failed_time > self.last_archived_time
        )


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # LATE_ALERT or FAILED_ALERT
    severity: str
    message: str
    dedupe_key: str


@dataclass(frozen=True, slots=True)
class BackupHealth:
    now: datetime
    since: datetime | None  # since when backups are due (lateness of a job that never ran)
    last_good_base: JobRecord | None
    last_base: JobRecord | None
    last_good_verify: JobRecord | None
    last_verify: JobRecord | None
    archiver: Archiver
    replication: Replication | None = (
        None  # the standby's streaming replication (floor/backup/replication.py)
    )

    def problems(self) -> list[Problem]:
        out: list[Problem] = [
            Problem(p.kind, p.severity, p.message, p.dedupe_key)
            for p in (self.replication.problems() if self.replication else [])
        ]
        for kind, good, last, late in (
            (Kind.BASE, self.last_good_base, self.last_base, BACKUP_LATE),
            (Kind.VERIFY, self.last_good_verify, self.last_verify, VERIFY_LATE),
        ):
            what = "base backup" if kind is Kind.BASE else "restore check"
            if last is not None and not last.ok:
                out.append(Problem(FAILED_ALERT, "critical", f"the {what} of {last.label} failed: {last.summary}",
                                   f"{FAILED_ALERT}:{kind}:{last.id}"))  # fmt: skip
            reference = good.finished_at if good else self.since
            if reference is not None and self.now - reference > late:
                since = f"since {reference:%Y-%m-%d %H:%M} UTC" if good else "ever"
                out.append(Problem(LATE_ALERT, "critical", f"no good {what} {since} (one is due every"
                                   f" {_hours(late)} h)", f"{LATE_ALERT}:{kind}:{good.id if good else 0}"))  # fmt: skip
        a = self.archiver
        if a.mode not in ("on", "always"):
            out.append(Problem(FAILED_ALERT, "critical", f"WAL archiving is off (archive_mode = {a.mode}):"
                               " no point-in-time recovery", f"{FAILED_ALERT}:wal:off"))  # fmt: skip
        elif a.failing:
            out.append(Problem(FAILED_ALERT, "critical", f"WAL archiving fails: segment {a.last_failed_wal}"
                               f" could not be archived ({a.failed_count} failures so far; the server keeps it"
                               " and tries again)", f"{FAILED_ALERT}:wal:{a.last_failed_wal}"))  # fmt: skip
        return out

    def to_json(self) -> dict[str, Any]:
        def rec(r: JobRecord | None) -> dict[str, Any] | None:
            if r is None:
                return None
            return {
                "label": r.label,
                "finished_at": r.finished_at.isoformat(),
                "ok": r.ok,
                "summary": r.summary,
            }

        a = self.archiver
        return {
            "last_good_base_backup": rec(self.last_good_base),
            "last_base_backup": rec(self.last_base),
            "last_good_restore_check": rec(self.last_good_verify),
            "last_restore_check": rec(self.last_verify),
            "wal_archiving": {
                "archive_mode": a.mode,
                "failing": a.failing,
                "archived_count": a.archived_count,
                "last_archived_wal": a.last_archived_wal,
                "last_archived_time": a.last_archived_time.isoformat() if a.last_archived_time else None,
                "failed_count": a.failed_count,
                "last_failed_wal": a.last_failed_wal,
                "last_failed_time": a.last_failed_time.isoformat() if a.last_failed_time else None,
            },
            "replication": self.replication.to_json() if self.replication else None,
            "problems": [p.message for p in self.problems()],
        }

    def lines(self) -> list[str]:
        """What ``tablectl floor backup status`` prints."""

        def job(r: JobRecord | None, good: JobRecord | None) -> str:
            if good is None and r is None:
                return "none yet"
            text = f"{good.label}, finished {_ago(self.now, good.finished_at)}" if good else "none good yet"
            if r is not None and not r.ok:
                text += f"; the last one FAILED {_ago(self.now, r.finished_at)}: {r.summary}"
            elif good is not None:
                text += f": {good.summary}"
            return text

        a = self.archiver
        wal = f"archive_mode {a.mode}; {a.archived_count} segments archived since the server started"
        if a.last_archived_wal and a.last_archived_time:
            wal += f", the last {a.last_archived_wal} {_ago(self.now, a.last_archived_time)}"
        if a.failed_count:
            wal += f"; {a.failed_count} failures, the last {a.last_failed_wal}"
            if a.last_failed_time:
                wal += f" {_ago(self.now, a.last_failed_time)}"
            wal += " (FAILING NOW)" if a.failing else " (archived since)"
        problems = self.problems()
        return [
            f"base backup: {job(self.last_base, self.last_good_base)}",
            f"WAL archiving: {wal}",
            f"restore check: {job(self.last_verify, self.last_good_verify)}",
            *(self.replication.lines() if self.replication else []),
            *(f"PROBLEM: {p.message}" for p in problems),
            *(["all good"] if not problems else []),
        ]

    @property
    def configured(self) -> bool:
        """WAL archiving on, or a backup job ever ran (a development server has neither: nothing to say)."""
        return (
            self.archiver.mode in ("on", "always")
            or self.last_base is not None
            or self.last_verify is not None
        )

    def words(self) -> str:
        """One line for the dashboard: empty when all is good (or backups and a standby were never set up
        here)."""
        replicated = [p.message for p in self.replication.problems()] if self.replication else []
        if not self.configured:
            return "; ".join(f"Standby: {m}." for m in replicated)
        return "; ".join(
            f"Standby: {p.message}." if p.message in replicated else f"Backups: {p.message}."
            for p in self.problems()
        )


def _hours(delta: timedelta) -> int:
    return int(delta.total_seconds() // 3600)


def _ago(now: datetime, then: datetime) -> str:
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        span = f"{seconds} s"
    elif seconds < 7200:
        span = f"{seconds // 60} min"
    else:
        span = f"{seconds // 3600} h"
    return f"{then:%Y-%m-%d %H:%M} UTC ({span} ago)"


def _record(row: tuple[Any, ...] | None) -> JobRecord | None:
    if row is None:
        return None
    return JobRecord(int(row[0]), Kind(row[1]), str(row[2]), row[3], bool(row[4]), str(row[5]))


def read_health(conn: psycopg.Connection) -> BackupHealth:
    def newest(kind: Kind, good_only: bool) -> JobRecord | None:
        return _record(
            conn.execute(
                "SELECT id, kind, label, finished_at, ok, summary FROM floor_backups"
                " WHERE kind = %s AND (ok OR NOT %s) ORDER BY finished_at DESC, id DESC LIMIT 1",
                (kind.value, good_only),
            ).fetchone()
        )

    row = conn.execute(
        "SELECT current_setting('archive_mode'), archived_count, last_archived_wal, last_archived_time,"
        " failed_count, last_failed_wal, last_failed_time, now(),"
        # since when backups are due: the migration that brought them (an older floor: since that upgrade)
        " coalesce((SELECT max(applied_at) FROM schema_migrations WHERE name LIKE '%backups%'),"
        " (SELECT min(applied_at) FROM schema_migrations)) FROM pg_stat_archiver"
    ).fetchone()
    assert row is not None  # pg_stat_archiver has exactly one row
    archiver = Archiver(str(row[0]), int(row[1]), row[2], row[3], int(row[4]), row[5], row[6])
    return BackupHealth(
        now=row[7], since=row[8],
        last_good_base=newest(Kind.BASE, True), last_base=newest(Kind.BASE, False),
        last_good_verify=newest(Kind.VERIFY, True), last_verify=newest(Kind.VERIFY, False),
        archiver=archiver, replication=read_replication(conn),
    )  # fmt: skip


def raise_backup_alerts(conn: psycopg.Connection) -> list[int]:
    """A floor alert for each problem not alerted yet (one per failed run, per stale state, per failing WAL
    segment); the new alerts' ids."""
    raised: list[int] = []
    health = read_health(conn)
    if health.replication is not None and health.replication.role is Role.STANDBY:
        return raised  # read-only: the primary's maintenance pass alerts (a promoted standby from then on)
    with conn.transaction():
        cur = conn.cursor()
        for p in health.problems():
            alert_id = raise_alert(cur, BACKUPS, p.kind, p.severity, p.message, {}, p.dedupe_key)
            if alert_id is not None:
                raised.append(alert_id)
    return raised


def record_job(
    conn: psycopg.Connection,
    kind: Kind,
    label: str,
    started_at: datetime,
    ok: bool,
    summary: str,
    details: dict[str, Any],
) -> int:
    """The end of a backup job, good or not (``floor_backups``)."""
    with conn.transaction():
        row = conn.execute(
            "INSERT INTO floor_backups (kind, label, started_at, ok, summary, details)"
            " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            (kind.value, label[:100], started_at, ok, summary[:2000], Jsonb(details)),
        ).fetchone()
    assert row is not None
    return int(row[0])
