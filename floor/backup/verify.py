"""The restore check: a backup is good when it restores. Run by tablectl-floor-backup-verify.service on its timer.

1. Note what the live server has archived so far (``pg_stat_archiver.last_archived_wal``) and look for holes
   in the WAL archive from the oldest kept backup's first segment to there (each kept backup must be able to
   replay to the end).
2. Restore the newest base backup into a scratch data directory (``restore.prepare``, no recovery target: to
   the end of the archive) and start a private server on it (no network address, a free port number for its
   socket), which replays every archived segment and opens.
3. Where its replay ended (its new timeline's history file names the point) must lie past the start of the
   segment noted in 1: else a segment is missing or damaged, and the restore stopped early.
4. Per table, the restored archive's rows and its newest event (id, chain value, bytes) against the live
   archive: the live database must hold that event with the same chain value and bytes, and at least as many
   rows up to it (more only where gap repair filled holes since).
5. The result is recorded (``floor_backups``), the scratch server stopped and its directory removed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from floor.backup.layout import BackupDir, format_lsn, parse_lsn, segment_start, wal_gaps
from floor.backup.restore import RestoreError, prepare
from floor.backup.server import RestoredServer, ToolError

Head = tuple[int, int, str | None, str]  # rows, newest event id, its chain value, md5 of its bytes


@dataclass(slots=True)
class CheckResult:
    label: str
    ok: bool
    summary: str
    problems: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def table_heads(conn: psycopg.Connection) -> dict[tuple[str, str], Head]:
    """Per table: its rows, and its newest event's id, chain value and bytes' md5."""
    rows = conn.execute(
        "SELECT c.site, c.table_id, c.n, e.event_id, e.chain, md5(e.raw) FROM"
        " (SELECT site, table_id, count(*) AS n, max(event_id) AS top FROM events GROUP BY 1, 2) c"
        " JOIN events e ON e.site = c.site AND e.table_id = c.table_id AND e.event_id = c.top"
    ).fetchall()
    return {(r[0], r[1]): (int(r[2]), int(r[3]), r[4], str(r[5])) for r in rows}


def compare_heads(restored: dict[tuple[str, str], Head], live: psycopg.Connection) -> list[str]:
    """What the live archive contradicts in the restored one (empty: they agree)."""
    problems = []
    for (site, table_id), (rows, top, chain, digest) in sorted(restored.items()):
        row = live.execute(
            "SELECT (SELECT count(*) FROM events WHERE site = %(s)s AND table_id = %(t)s AND event_id <= %(top)s),"
            " (SELECT chain FROM events WHERE site = %(s)s AND table_id = %(t)s AND event_id = %(top)s),"
            " (SELECT md5(raw) FROM events WHERE site = %(s)s AND table_id = %(t)s AND event_id = %(top)s)",
            {"s": site, "t": table_id, "top": top},
        ).fetchone()
        assert row is not None
        live_rows, live_chain, live_digest = int(row[0]), row[1], row[2]
        where = f"{site}/{table_id}"
        if live_digest is None:
            problems.append(f"{where}: event {top} restored, not in the live archive")
        elif (live_chain, live_digest) != (chain, digest):
            problems.append(f"{where}: event {top} differs from the live archive's (chain or bytes)")
        if live_rows < rows:
            problems.append(f"{where}: {rows} events up to {top} restored, the live archive has {live_rows}")
    return problems


def replay_end(data_dir: Path) -> int | None:
    """Where the restored server's replay ended: the switch point its new timeline's history file records."""
    histories = sorted((data_dir / "pg_wal").glob("*.history"))
    if not histories:
        return None
    lines = [
        ln.split() for ln in histories[-1].read_text().splitlines() if ln.strip() and not ln.startswith("#")
    ]
    return parse_lsn(lines[-1][1]) if lines else None


def check(
    live: psycopg.Connection, where: BackupDir, scratch: Path, *, timeout: float = 6 * 3600
) -> CheckResult:
    """Restore the newest backup into ``scratch`` (made, then removed) and compare it with ``live``."""
    backups = where.backups()
    if not backups:
        return CheckResult("-", False, f"no base backup in {where.base}")
    newest = backups[-1]
    result = CheckResult(newest.label, False, "")
    row = live.execute(
        "SELECT last_archived_wal, current_database(),"
        " (SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size') FROM pg_stat_archiver"
    ).fetchone()
    assert row is not None
    archived_to, dbname, segment_size = row[0], str(row[1]), int(row[2])
    result.details.update(backup=newest.label, archived_to=archived_to)
    if archived_to is not None:
        gaps = wal_gaps(where.segments(), backups[0].start_wal, archived_to, segment_size)
        if gaps:
            result.problems.append(f"WAL segments missing from the archive: {', '.join(gaps[:5])}")
    if scratch.exists():
        shutil.rmtree(scratch)
    server: RestoredServer | None = None
    try:
        data = scratch / "data"
        prepare(where, data, None, timeout=timeout)
        server = RestoredServer(data, scratch / "socket", scratch / "postgres.log")
        server.start()
        server.wait_open(dbname, timeout)
        end = replay_end(data)
        result.details["replayed_to"] = format_lsn(end) if end is not None else None
        if archived_to is not None and (end is None or end <= segment_start(archived_to, segment_size)):
            result.problems.append(
                f"the restore stopped at {result.details['replayed_to']}, before the end of segment"
                f" {archived_to} the server archived: a segment is missing or damaged"
            )
        with psycopg.connect(server.dsn(dbname)) as restored:
            heads = table_heads(restored)
        result.details.update(tables=len(heads), events=sum(h[0] for h in heads.values()))
        result.problems += compare_heads(heads, live)
    except (RestoreError, ToolError, psycopg.Error, OSError, ValueError) as exc:
        result.problems.append(f"restore failed: {exc}")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    result.ok = not result.problems
    result.details["problems"] = result.problems
    if result.ok:
        result.summary = (
            f"restored to {result.details.get('replayed_to')}: {result.details.get('events')} events of"
            f" {result.details.get('tables')} tables, every table's newest event as in the live archive"
        )
    else:
        result.summary = "; ".join(result.problems)[:1000]
    return result


def now() -> datetime:
    return datetime.now(UTC)
