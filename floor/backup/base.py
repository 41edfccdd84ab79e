"""A base backup (``pg_basebackup``) into the backup directory, then retention (keep the newest N, and the WAL
they need; ``pg_archivecleanup`` removes older segments). Run by tablectl-floor-backup.service on its timer.

pg_basebackup takes the backup through a replication connection as the superuser, in tar form, compressed,
with the WAL it needs to be consistent (``-X stream``), and flushes it to disk; ``backup.json`` is written last,
so a folder without one is no backup. Every later change is in the WAL archive (archive_command)."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from floor.backup.layout import PARTIAL, BackupDir, BaseBackup, label_of, to_prune
from floor.backup.server import ToolError, bin_dir, make_private_dir, own, run_tool

DEFAULT_KEEP = 7  # daily backups: a week of points in time to restore to


@dataclass(frozen=True, slots=True)
class Pruned:
    backups: list[str]
    wal_before: str | None


def replication_dsn(dsn: str) -> str:
    """pg_basebackup's connection: the same server and account (it ignores the database name)."""
    params = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "dbname" and v is not None}
    return make_conninfo(**params)  # type: ignore[arg-type]  # conninfo_to_dict types its values object: they are a DSN's


def take(conn: psycopg.Connection, dsn: str, where: BackupDir, *, timeout: float = 6 * 3600) -> BaseBackup:
    """One base backup of the server ``dsn`` names, complete when this returns (ToolError otherwise)."""
    make_private_dir(where.base)
    started = datetime.now(UTC)
    if (where.base / label_of(started)).exists():
        # a backup is named to the second (its label orders them): one taken in the same second as the last
        # starts at the next second instead of being refused
        time.sleep(1.0 - started.microsecond / 1e6)
        started = datetime.now(UTC)
    label = label_of(started)
    partial = where.base / f"{label}{PARTIAL}"
    final = where.base / label
    if final.exists():
        raise ToolError(f"{final} exists already (a backup named for this second)")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        run_tool(
            [str(bin_dir() / "pg_basebackup"), "-d", replication_dsn(dsn), "-D", str(partial), "-Ft", "-z",
             "-X", "stream", "-c", "fast", "-l", f"tablectl-floor {label}", "--no-password"],
            timeout=timeout, what="pg_basebackup",
        )  # fmt: skip
        manifest = json.loads((partial / "backup_manifest").read_text(encoding="utf-8"))
        ranges = manifest["WAL-Ranges"]
        start_lsn, end_lsn = str(ranges[0]["Start-LSN"]), str(ranges[-1]["End-LSN"])
        row = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (start_lsn,)).fetchone()
        if row is None:
            raise ToolError("the server did not name the backup's first WAL segment")
        backup = BaseBackup(
            path=final, label=label, started_at=started, finished_at=datetime.now(UTC),
            start_wal=str(row[0]), start_lsn=start_lsn, end_lsn=end_lsn,
        )  # fmt: skip
        info = partial / "backup.json"
        with open(info, "w", encoding="utf-8") as f:
            json.dump(backup.to_json(), f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        own(info)
        partial.rename(final)
        _fsync_dir(where.base)
        return backup
    except (OSError, ValueError, KeyError, IndexError, psycopg.Error) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise ToolError(f"base backup {label}: {exc}") from None
    except ToolError:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def prune(where: BackupDir, keep: int) -> Pruned:
    """Keep the newest ``keep`` complete backups and the WAL from the oldest one's start; remove the rest (and
    folders of backups that died half-way)."""
    old, first_needed = to_prune(where.backups(), keep)
    for partial in where.partials():
        shutil.rmtree(partial, ignore_errors=True)
    for backup in old:
        shutil.rmtree(backup.path)
    if first_needed is not None and where.wal.is_dir():
        run_tool([str(bin_dir() / "pg_archivecleanup"), str(where.wal), first_needed],
                 timeout=600, what="pg_archivecleanup")  # fmt: skip
    return Pruned([b.label for b in old], first_needed)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
