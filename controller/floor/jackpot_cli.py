"""``tablectl floor jackpot [--table T] [--since ...] [--until ...]``: meter history as CSV
(site, table, event_id, ts, action, meter in minor units), from the archived ``events/jackpot``."""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import UTC, datetime, timedelta

import psycopg

from controller.floor import store
from controller.floor.cli import add_dsn
from controller.floor.report import _cell, meter_history
from controller.floor.rounds_cli import parse_time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--table", default=None, help="one table only")
    parser.add_argument(
        "--since", type=parse_time, default=None, help="ISO date or time, UTC (default: 24 h ago)"
    )
    parser.add_argument("--until", type=parse_time, default=None, help="ISO date or time, UTC (default: now)")


def main(args: argparse.Namespace) -> int:
    until = args.until or datetime.now(UTC)
    since = args.since or until - timedelta(days=1)
    try:
        with store.connect(args.dsn) as conn:
            rows = meter_history(conn, since, until, args.table)
    except psycopg.Error as exc:
        print(f"floor jackpot: {exc}", file=sys.stderr)
        return 1
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["site", "table", "event_id", "ts", "action", "meter"])
    for site, table_id, event_id, ts, action, meter in rows:
        w.writerow([_cell(site), _cell(table_id), event_id, ts.isoformat(), _cell(action[:40]), int(meter)])
    return 0
