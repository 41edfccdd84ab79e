"""``tablectl floor report --day 2026-11-23 [--table T] [--html FILE] [--csv FILE]``: a day's summary per table
(rounds, handle, paid, win: floor/reports/figures.py's names and signs; dealer errors, faults, voids, jackpot meter;
floor/reports/day.py), each
table marked ``complete`` or ``INCOMPLETE`` with what its archive lacks for the day. Without ``--html``/``--csv``
the CSV goes to stdout; what each table's figures are built on goes to stderr."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg

from controller.words import count
from floor.archive import store
from floor.cli.shift import STDOUT
from floor.cli.tablectl import add_dsn
from floor.reports.day import built_on, day_report, to_csv
from floor.reports.day_html import to_html
from floor.reports.queries import consistent_read


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument(
        "--day", type=date.fromisoformat, default=None, help="YYYY-MM-DD, UTC (default: today)"
    )
    parser.add_argument(
        "--csv", type=Path, nargs="?", const=STDOUT, default=None,
        help="write the CSV here (without a file: to stdout, as without --csv/--html)",
    )  # fmt: skip
    parser.add_argument("--html", type=Path, default=None, help="write the self-contained HTML page here")
    parser.add_argument("--table", default=None, help="only this table id")


def main(args: argparse.Namespace) -> int:
    day = args.day or datetime.now(UTC).date()
    try:
        with store.connect(args.dsn) as conn, consistent_read(conn):  # one snapshot for the whole report
            rows = day_report(conn, day, args.table)
    except psycopg.Error as exc:
        print(f"floor report: {exc}", file=sys.stderr)
        return 1
    if args.csv == STDOUT:
        sys.stdout.write(to_csv(rows))
    elif args.csv:
        args.csv.write_text(to_csv(rows))
    if args.html:
        args.html.write_text(to_html(rows, day))
    if not args.csv and not args.html:
        sys.stdout.write(to_csv(rows))
    incomplete = sum(1 for r in rows if not r.complete)
    for line in built_on(rows, day):
        print(line, file=sys.stderr)
    print(f"{count(len(rows), 'table')} for {day.isoformat()}, {incomplete} INCOMPLETE", file=sys.stderr)
    return 0
