"""``tablectl floor sessions [--since T] [--until T] [--hours N] [--table T] [--gap N] [--csv F] [--html F]
[--alert] [thresholds]``: play sessions per seat and per player (floor/reports/sessions_play.py), and each player the
tables seated (issue 41, floor/players/: his visits across tables and shoes, level ``player_visits``), with their
figures, the bet-versus-count trend and the advantage-play flags (floor/protection/advantage.py); ``--alert``
raises the ``advantage_play`` floor alerts of the flagged sessions. Without ``--csv``/``--html`` the CSV goes to
stdout; rounds that could not be used go to stderr. Surveillance material: run it on the floor host."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from controller.words import count
from floor.archive import store
from floor.cli.shift import STDOUT, add_window
from floor.common.text import safe
from floor.players.load import player_sessions
from floor.protection.advantage import CALIBRATED_PRECISION, DEFAULT_THRESHOLDS, Thresholds, raise_alerts
from floor.protection.sessions_report import to_csv, to_html
from floor.reports.queries import consistent_read, table_currencies
from floor.reports.sessions_play import DEFAULT_GAP, load_sessions
from floor.reports.shift import MAX_WINDOW

MAX_PROBLEMS_SHOWN = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_window(parser)
    parser.add_argument("--table", default=None, help="only this table")
    parser.add_argument(
        "--gap", type=int, default=DEFAULT_GAP, help="rounds a seat may sit out (default %(default)s)"
    )
    parser.add_argument(
        "--csv", type=Path, nargs="?", const=STDOUT, default=None,
        help="write the CSV here (without a file: to stdout, as without --csv/--html)",
    )  # fmt: skip
    parser.add_argument("--html", type=Path, default=None, help="write the self-contained HTML page here")
    parser.add_argument(
        "--alert",
        action="store_true",
        help="raise an advantage play alert on the floor for each flagged session",
    )
    d = DEFAULT_THRESHOLDS
    parser.add_argument(
        "--min-rounds", type=int, default=d.min_rounds, help="rounds before any flag (%(default)s)"
    )
    parser.add_argument("--max-p", type=float, default=d.max_p, help="largest p-value flagged (%(default)s)")
    parser.add_argument(
        "--min-rho", type=float, default=d.min_rho, help="smallest bet-count rho (%(default)s)"
    )
    parser.add_argument(
        "--min-entry", type=float, default=d.min_entry, help="smallest mean count (%(default)s)"
    )
    parser.add_argument("--min-precision", type=float, default=d.min_precision,
                        help="flag a basic-strategy share at least this (0-1; default: off; "
                             f"{CALIBRATED_PRECISION} is reached by correct players, docs/floor.md)")  # fmt: skip


def thresholds(args: argparse.Namespace) -> Thresholds:
    d = DEFAULT_THRESHOLDS
    return Thresholds(args.min_rounds, args.max_p, args.min_rho, args.min_entry, d.min_entry_rounds,
                      d.min_decisions, args.min_precision)  # fmt: skip


def main(args: argparse.Namespace) -> int:
    until = args.until or datetime.now(UTC)
    since = args.since or until - timedelta(hours=args.hours)
    if not since < until or until - since > MAX_WINDOW or args.gap < 0:
        print(f"floor sessions: the window must start before it ends and span at most {MAX_WINDOW.days} days;"
              " --gap is at least 0", file=sys.stderr)  # fmt: skip
        return 2
    th = thresholds(args)
    try:
        with store.connect(args.dsn) as conn:
            with consistent_read(conn):  # one snapshot of the archive for the whole report
                report = load_sessions(conn, since, until, table=args.table, gap=args.gap)
                currencies = table_currencies(conn)
                # the players seated by the tables (issue 41): each one's play across tables and shoes
                visits = [] if args.table else player_sessions(conn, since, until, report.tables)
            new = raise_alerts(conn, report.sessions + report.players + visits, th) if args.alert else 0
    except psycopg.Error as exc:
        print(f"floor sessions: {exc}", file=sys.stderr)
        return 1
    rows = report.sessions + report.players + visits
    if args.csv == STDOUT:
        sys.stdout.write(to_csv(rows, th, currencies))
    elif args.csv:
        args.csv.write_text(to_csv(rows, th, currencies))
    if args.html:
        args.html.write_text(to_html(rows, th, currencies, since, until))
    if not args.csv and not args.html:
        sys.stdout.write(to_csv(rows, th, currencies))
    for line in report.problems[:MAX_PROBLEMS_SHOWN]:
        print(f"not used: {safe(line, 300)}", file=sys.stderr)
    print(f"{count(len(report.sessions), 'session')}, {count(len(report.players), 'player')}, "
          f"{count(len(visits), 'seated player')}, {count(len(report.problems), 'round')} not used"
          + (f", {count(new, 'new advantage play alert')}" if args.alert else ""), file=sys.stderr)  # fmt: skip
    return 0
