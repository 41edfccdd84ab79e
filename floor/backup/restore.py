"""Point-in-time recovery: a base backup unpacked into a new data directory, told by PostgreSQL's own recovery
settings where its WAL is (``restore_command``) and how far to replay (``recovery_target_time``, or the end of
the archive), with ``recovery.signal``. The server started on that directory replays, then opens on a new
timeline (docs/floor.md "Restore to a point in time")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from floor.backup.layout import BASE_TAR, WAL_TAR, BackupDir, BaseBackup, newest_before
from floor.backup.server import ToolError, make_private_dir, own, run_tool


class RestoreError(ValueError):
    """The restore cannot be prepared as asked (the message says why; nothing was written)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    backup: BaseBackup
    data_dir: Path
    target: datetime | None  # None: the archive's end


def parse_target(text: str) -> datetime | None:
    """``--to``: an ISO 8601 time with its zone (``2026-11-29T10:15:00Z``), or ``end`` (all the archive has)."""
    if text == "end":
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise RestoreError(f"--to {text!r}: not a time (2026-11-29T10:15:00Z) or 'end'") from None
    if when.tzinfo is None:
        raise RestoreError(f"--to {text}: say the time zone (Z for UTC, or +01:00)")
    return when


def _conf_value(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def prepare(
    where: BackupDir, data_dir: Path, target: datetime | None, *, timeout: float = 6 * 3600
) -> Prepared:
    """Unpack the newest base backup that finished before ``target`` into the new (empty) ``data_dir`` and set
    the recovery there. Starting a server on it then replays the WAL archive up to ``target``."""
    if data_dir.exists() and any(data_dir.iterdir()):
        raise RestoreError(f"{data_dir} is not empty: restore into a new data directory")
    backups = where.backups()
    backup = newest_before(backups, target)
    if backup is None:
        oldest = f" (the oldest finished {backups[0].finished_at:%Y-%m-%d %H:%M:%S} UTC)" if backups else ""
        raise RestoreError(f"no base backup in {where.base} finished before {target}{oldest}")
    if not where.wal.is_dir():
        raise RestoreError(f"no WAL archive in {where.wal}")
    make_private_dir(data_dir)
    try:
        run_tool(["tar", "-xzf", str(backup.path / BASE_TAR), "-C", str(data_dir)], timeout=timeout,
                 what=f"unpacking {backup.path / BASE_TAR}")  # fmt: skip
        wal_tar = backup.path / WAL_TAR
        if wal_tar.exists():
            run_tool(["tar", "-xzf", str(wal_tar), "-C", str(data_dir / "pg_wal")], timeout=timeout,
                     what=f"unpacking {wal_tar}")  # fmt: skip
    except ToolError as exc:
        raise RestoreError(str(exc)) from None
    for stale in ("standby.signal", "postmaster.pid"):
        (data_dir / stale).unlink(missing_ok=True)
    restore_command = f"cp {where.wal.resolve()}/%f %p"
    lines = [
        f"# tablectl floor restore ({datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC): base backup {backup.label},",
        '# then the WAL archive. Reset these once the server is open (docs/floor.md "Restore").',
        f"restore_command = {_conf_value(restore_command)}",
        "recovery_target_timeline = 'latest'",
    ]
    if target is not None:
        lines += [
            f"recovery_target_time = {_conf_value(target.astimezone(UTC).isoformat(sep=' '))}",
            "recovery_target_inclusive = on",
            "recovery_target_action = 'promote'",
        ]
    auto = data_dir / "postgresql.auto.conf"
    with open(auto, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    (data_dir / "recovery.signal").write_text("")
    for f_path in (auto, data_dir / "recovery.signal"):
        own(f_path)
    return Prepared(backup, data_dir, target)
