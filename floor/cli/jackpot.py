"""``tablectl floor jackpot [--table T] [--since ...] [--until ...]``: meter history as CSV, from the archived
``events/jackpot``: ``site, table, event_id, ts, action, meter_minor`` (the table's own meter after the event,
integer minor units; empty on a linked progressive's row), ``currency`` (the table's configured one,
queries.table_currencies), ``archive`` (``complete`` / ``INCOMPLETE``: the table's archive over the whole window,
floor/reports/coverage.py), ``gap_before`` (ids not archived between the row before of that table, or the window's
start, and this one: jackpot events may be missing there), ``link`` (the linked progressive's name on its rows, issue
40; empty on the table's own meter's) and ``amount_minor`` (a contribution's or a prize's amount where the event
carries one: ``amount`` of the own meter's, ``amount_minor`` of a link's).
What each table's rows are built on (holes after its last row included) goes to stderr, one line a table."""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import UTC, datetime, timedelta

import psycopg

from floor.archive import store
from floor.cli.rounds import parse_time
from floor.cli.tablectl import add_dsn
from floor.common.text import safe
from floor.reports.coverage import UNKNOWN_TABLE, Coverage, coverage, verdict
from floor.reports.day import csv_cell, jackpot_history
from floor.reports.queries import table_currencies

HEADER = ("site", "table", "event_id", "ts", "action", "meter_minor", "currency", "archive", "gap_before", "link",
          "amount_minor")  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--table", default=None, help="one table only")
    parser.add_argument(
        "--since", type=parse_time, default=None, help="ISO date or time, UTC (default: 24 h ago)"
    )
    parser.add_argument("--until", type=parse_time, default=None, help="ISO date or time, UTC (default: now)")


def _gap_before(cov: Coverage | None, after_id: int, event_id: int) -> str:
    if cov is None:
        return ""
    return " ".join(h.text() for h in cov.holes if h.hi > after_id and h.lo < event_id)


def main(args: argparse.Namespace) -> int:
    until = args.until or datetime.now(UTC)
    since = args.since or until - timedelta(days=1)
    try:
        with store.connect(args.dsn) as conn:
            rows = jackpot_history(conn, since, until, args.table)
            covers = coverage(conn, since, until, args.table)
            currencies = table_currencies(conn)
    except psycopg.Error as exc:
        print(f"floor jackpot: {exc}", file=sys.stderr)
        return 1
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(HEADER)
    previous: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r.site, r.table_id)
        cov = covers.get(key)
        archive = verdict(cov)
        gap = _gap_before(cov, previous.get(key, 0), r.event_id)
        previous[key] = r.event_id
        w.writerow([csv_cell(r.site), csv_cell(r.table_id), r.event_id, r.ts.isoformat(), csv_cell(r.action[:40]),
                    csv_cell(r.meter), currencies.get(key, ""), archive, gap, csv_cell((r.link or "")[:40]),
                    csv_cell(r.amount)])  # fmt: skip
    shown = set(previous) | {k for k, c in covers.items() if not c.complete}
    for key in sorted(shown):
        cov = covers.get(key)
        what = cov.summary() if cov else UNKNOWN_TABLE
        print(f"{safe(key[0], 64)}/{safe(key[1], 64)}: {what}", file=sys.stderr)
    return 0
