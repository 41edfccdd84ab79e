"""``tablectl floor shift [--since T] [--until T] [--hours N] [--table T] [--layout floor.toml] [--csv [F]]
[--html F]``: a shift's figures per table, pit, floor and dealer (``--table``: of that table id only;
floor/reports/shift.py, floor/reports/shift_dealers.py; names and signs: floor/reports/figures.py): rounds, rounds per
hour open, handle by main bets, side bets and insurance, paid, win, hold, theoretical win, dealer errors per 100 rounds,
faults, voided rounds, jackpot chips, contributions and payouts; each row complete or INCOMPLETE for the window. Without
``--csv``/``--html`` a readable table in money goes to stdout (floor/reports/shift_text.py); ``--csv`` alone writes the
CSV (minor units, snake_case headers) to stdout. Every query reads one snapshot of the archive. What each table's
figures are built on goes to stderr."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from controller.words import count
from floor.archive import store
from floor.cli.tablectl import add_dsn
from floor.common.layout import LayoutError, load_layout
from floor.common.text import safe
from floor.reports.day import meter_history
from floor.reports.queries import consistent_read
from floor.reports.shift import MAX_WINDOW, shift_report, to_csv, win_series
from floor.reports.shift_dealers import dealer_rows
from floor.reports.shift_html import to_html
from floor.reports.shift_text import to_text

STDOUT = Path("-")


def _when(text: str) -> datetime:
    """An ISO date-time; without a zone it is UTC."""
    try:
        ts = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO date-time (2026-11-26T06:00): {text!r}") from exc
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def add_window(parser: argparse.ArgumentParser) -> None:
    """``--dsn``, ``--since``, ``--until``, ``--hours``: the window of the floor's figures."""
    add_dsn(parser)
    parser.add_argument("--since", type=_when, default=None, help="start, ISO date-time, UTC unless zoned")
    parser.add_argument("--until", type=_when, default=None, help="end (default: now)")
    parser.add_argument(
        "--hours", type=float, default=8.0, help="without --since: this many hours before --until"
    )


def window(args: argparse.Namespace, command: str) -> tuple[datetime, datetime] | None:
    """The window ``add_window`` read: ``--until`` (default now), ``--since`` (default ``--hours`` before it).
    None, the refusal (``floor <command>: ...``) on stderr, where it does not start before it ends or spans more
    than ``MAX_WINDOW``."""
    until = args.until or datetime.now(UTC)
    since = args.since or until - timedelta(hours=args.hours)
    if not since < until or until - since > MAX_WINDOW:
        print(f"floor {command}: the window must start before it ends and span at most {MAX_WINDOW.days} days",
              file=sys.stderr)  # fmt: skip
        return None
    return since, until


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_window(parser)
    parser.add_argument(
        "--layout", type=Path, default=None, help="floor.toml: pits and areas (docs/floor.md)"
    )
    parser.add_argument(
        "--csv", type=Path, nargs="?", const=STDOUT, default=None,
        help="the CSV (minor units) instead of the table: to this file, or to stdout without one",
    )  # fmt: skip
    parser.add_argument("--html", type=Path, default=None, help="write the self-contained HTML page here")
    parser.add_argument("--table", default=None, help="only this table id")


def main(args: argparse.Namespace) -> int:
    w = window(args, "shift")
    if w is None:
        return 2
    since, until = w
    try:
        layout = load_layout(args.layout)
    except LayoutError as exc:
        print(f"floor shift: {exc}", file=sys.stderr)
        return 2
    try:
        with store.connect(args.dsn) as conn, consistent_read(conn):
            rows = shift_report(conn, since, until, layout, table=args.table)
            dealers = dealer_rows(conn, since, until, args.table)
            wins = win_series(conn, since, until, args.table) if args.html else []
            meters: dict[str, list[tuple[datetime, int]]] = defaultdict(list)
            if args.html:
                for _site, table_id, _eid, ts, _action, meter in meter_history(
                    conn, since, until, args.table
                ):
                    meters[table_id].append((ts, int(meter)))
    except psycopg.Error as exc:
        print(f"floor shift: {exc}", file=sys.stderr)
        return 1
    if args.csv == STDOUT:
        sys.stdout.write(to_csv(rows, dealers))
    elif args.csv:
        args.csv.write_text(to_csv(rows, dealers))
    if args.html:
        args.html.write_text(to_html(rows, since, until, wins, dict(meters), dealers))
    if not args.csv and not args.html:
        sys.stdout.write(to_text(rows, dealers, since, until))
    floor = rows[-1]
    for line in floor.incomplete:
        print(f"INCOMPLETE {safe(line, 300)}", file=sys.stderr)
    state = "complete" if floor.complete else f"INCOMPLETE ({count(len(floor.incomplete), 'table')})"
    print(f"{count(len(floor.tables), 'table')}, {count(floor.figures.rounds, 'round')}, {since:%Y-%m-%d %H:%M} to "
          f"{until:%Y-%m-%d %H:%M} UTC: archive {state}", file=sys.stderr)  # fmt: skip
    return 0
