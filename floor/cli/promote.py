"""``tablectl floor promote --old-primary HOST:PORT``: make the standby floor server the primary, after the checks
of ``floor.backup.promote`` (docs/floor.md "Promote the standby", step by step). Nothing promotes by itself."""

from __future__ import annotations

import argparse
import sys

import psycopg

from floor.backup.promote import PromoteError, promote, this_server
from floor.cli.tablectl import add_dsn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)  # this server: of a pair's DSN (the installed one) the first host, whatever it is
    parser.add_argument("--old-primary", metavar="HOST:PORT",
                        help="the old primary's PostgreSQL: refused while it still answers there")  # fmt: skip
    parser.add_argument(
        "--no-old-primary-check", action="store_true", help="promote without --old-primary (it is known gone)"
    )
    parser.add_argument("--timeout", type=int, default=60, help="seconds the promotion may take")


def main(args: argparse.Namespace) -> int:
    if args.old_primary is None and not args.no_old_primary_check:
        print("floor promote: name the old primary (--old-primary HOST:PORT), or say it is known gone"
              " (--no-old-primary-check)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        with psycopg.connect(this_server(args.dsn), autocommit=True, connect_timeout=10) as conn:
            done = promote(conn, args.old_primary, timeout=args.timeout)
    except (PromoteError, psycopg.Error) as exc:
        print(f"floor promote: {exc}", file=sys.stderr)
        return 1
    replayed = f"{done.last_replayed_at:%Y-%m-%d %H:%M:%S} UTC" if done.last_replayed_at else "unknown"
    print(f"promoted: this server is the primary now (timeline {done.timeline}); the last transaction it had"
          f" replayed was committed {replayed}.")  # fmt: skip
    print('Next (docs/floor.md "Promote the standby"): the archive workers and the dashboard find it by'
          " themselves; rebuild the old primary as the new standby before it comes back.")  # fmt: skip
    return 0
