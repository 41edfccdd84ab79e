"""``tablectl floor backup run|verify|status``: the floor database's base backups, their restore check, and
what is known of both and of the WAL archiving (docs/floor.md "Backups and point-in-time recovery").

``run`` and ``verify`` are what tablectl-floor-backup.service and tablectl-floor-backup-verify.service run, as
the ``postgres`` account with ``--dsn`` naming the floor database over the local socket; each records its result
in ``floor_backups`` and raises the floor alerts of what it finds (exit 1 when it failed)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import psycopg

from floor.archive import store
from floor.backup import base, verify
from floor.backup.health import Kind, raise_backup_alerts, read_health, record_job
from floor.backup.layout import BackupDir, LayoutError
from floor.backup.server import ToolError
from floor.cli.tablectl import add_dsn

DEFAULT_BACKUP_DIR = "/var/backups/tablectl-floor"
DEFAULT_SCRATCH = "/var/lib/postgresql/tablectl-floor-verify"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="backup_command", metavar="ACTION", required=True)
    run = sub.add_parser("run", help="take a base backup now, then prune beyond --keep")
    run.add_argument(
        "--keep", type=int, default=base.DEFAULT_KEEP, help="base backups kept (default %(default)s)"
    )
    chk = sub.add_parser("verify", help="restore the newest base backup into a scratch directory and compare")
    chk.add_argument(
        "--scratch", default=DEFAULT_SCRATCH, help="scratch folder, removed after (default %(default)s)"
    )
    chk.add_argument("--timeout", type=float, default=6 * 3600, help="seconds the restore may take")
    st = sub.add_parser("status", help="the last good base backup, WAL archiving, the last restore check")
    st.add_argument("--json", action="store_true", help="as one JSON object")
    for sp in (run, chk, st):
        add_dsn(sp)
    for sp in (run, chk):
        sp.add_argument(
            "--backup-dir", default=DEFAULT_BACKUP_DIR, help="the backup directory (default %(default)s)"
        )


def main(args: argparse.Namespace) -> int:
    handler = {"run": _run, "verify": _verify, "status": _status}[args.backup_command]
    try:
        with store.connect(args.dsn, autocommit=True) as conn:
            if args.backup_command != "status" and _in_recovery(conn):  # the timers run on both floor servers
                print(f"floor backup {args.backup_command}: this server is the standby; the primary takes and"
                      " checks the backups (docs/floor.md \"The standby floor server\")")  # fmt: skip
                return 0
            return handler(conn, args)
    except psycopg.Error as exc:
        print(f"floor backup {args.backup_command}: {exc}", file=sys.stderr)
        return 1


def _in_recovery(conn: psycopg.Connection) -> bool:
    row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    return bool(row and row[0])


def _run(conn: psycopg.Connection, args: argparse.Namespace) -> int:
    if args.keep < 1:
        print("floor backup run: --keep must be at least 1", file=sys.stderr)
        return 2
    where = BackupDir(Path(args.backup_dir))
    started = verify.now()
    try:
        backup = base.take(conn, args.dsn, where)
        pruned = base.prune(where, args.keep)
    except (ToolError, LayoutError, OSError) as exc:
        record_job(conn, Kind.BASE, started.strftime("%Y%m%dT%H%M%SZ"), started, False, str(exc), {})
        raise_backup_alerts(conn)
        print(f"floor backup run: {exc}", file=sys.stderr)
        return 1
    summary = f"from WAL {backup.start_wal}; {len(where.backups())} kept"
    if pruned.backups:
        summary += f", removed {', '.join(pruned.backups)} and the WAL before {pruned.wal_before}"
    record_job(conn, Kind.BASE, backup.label, started, True, summary, backup.to_json())
    raise_backup_alerts(conn)
    print(f"base backup {backup.label}: {summary}")
    return 0


def _verify(conn: psycopg.Connection, args: argparse.Namespace) -> int:
    started = verify.now()
    try:
        result = verify.check(
            conn, BackupDir(Path(args.backup_dir)), Path(args.scratch), timeout=args.timeout
        )
    except LayoutError as exc:
        result = verify.CheckResult("-", False, str(exc))
    record_job(conn, Kind.VERIFY, result.label, started, result.ok, result.summary, result.details)
    raise_backup_alerts(conn)
    print(f"restore check of {result.label}: {'good' if result.ok else 'FAILED'}: {result.summary}")
    return 0 if result.ok else 1


def _status(conn: psycopg.Connection, args: argparse.Namespace) -> int:
    health = read_health(conn)
    if args.json:
        print(json.dumps(health.to_json(), sort_keys=True))
    else:
        print("\n".join(health.lines()))
    return 1 if health.problems() else 0
