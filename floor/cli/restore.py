"""``tablectl floor restore --to TIME --backup-dir D --data-dir NEW``: prepare a new PostgreSQL data directory
that, once a server starts on it, holds the floor database as it was at TIME (or, ``--to end``, as far as the
WAL archive goes): the newest base backup that finished before TIME, unpacked, with PostgreSQL's recovery
settings (``restore_command``, ``recovery_target_time``, ``recovery.signal``). Needs no database: it is what a
fresh server runs first (docs/floor.md "Restore to a point in time", step by step)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from floor.backup.layout import BackupDir, LayoutError
from floor.backup.restore import RestoreError, parse_target, prepare
from floor.cli.backup import DEFAULT_BACKUP_DIR


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--to", required=True, metavar="TIME",
                        help="2026-11-29T10:15:00Z (with its zone), or 'end': all the WAL archive holds")  # fmt: skip
    parser.add_argument(
        "--backup-dir", default=DEFAULT_BACKUP_DIR, help="the backup directory (default %(default)s)"
    )
    parser.add_argument("--data-dir", required=True, help="the new data directory (absent or empty)")


def main(args: argparse.Namespace) -> int:
    try:
        target = parse_target(args.to)
        done = prepare(BackupDir(Path(args.backup_dir)), Path(args.data_dir), target)
    except (RestoreError, LayoutError, OSError) as exc:
        print(f"floor restore: {exc}", file=sys.stderr)
        return 1
    until = f"to {target.isoformat()}" if target else "to the end of the WAL archive"
    print(f"{done.data_dir}: base backup {done.backup.label} (finished {done.backup.finished_at:%Y-%m-%d %H:%M:%S}"
          f" UTC), set to replay the WAL archive {until}.")  # fmt: skip
    print(
        'Next (docs/floor.md "Restore to a point in time"): start PostgreSQL on it; it opens once replayed.'
    )
    return 0
