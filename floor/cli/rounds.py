"""``tablectl floor rounds --table T --since 2026-11-23 [--until ...] [--out DIR]``: archived rounds.

Prints one JSON object per round (``description`` is a round file for ``tablectl replay``, ``settlement`` what
the table settled, ``complete``/``missing`` what the archive lacks), then one per round the archive does not hold
(``absent: true``: a round id skipped, or a hole of the window's event ids outside every archived round;
floor/reports/rounds_absent.py). ``--out DIR`` also writes each complete round's description to
``DIR/<table>-<round_id>.json``. On stderr: the counts and what the window is built on (coverage.py)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from controller.words import count
from floor.archive import store
from floor.cli.tablectl import add_dsn
from floor.common.text import safe
from floor.reports.coverage import coverage
from floor.reports.rounds import load_rounds
from floor.reports.rounds_absent import absent_rounds

_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def parse_time(text: str) -> datetime:
    """ISO date or date-time; a naive value is UTC."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--table", required=True, help="table id")
    parser.add_argument("--site", default=None, help="site (default: every site with that table id)")
    parser.add_argument("--since", required=True, type=parse_time, help="ISO date or time (UTC)")
    parser.add_argument("--until", default=None, type=parse_time, help="ISO date or time (UTC)")
    parser.add_argument("--out", type=Path, default=None, help="write each complete round file here")


def main(args: argparse.Namespace) -> int:
    try:
        with store.connect(args.dsn) as conn:
            rounds = load_rounds(conn, args.site, args.table, args.since, args.until)
            covers = {
                k: c
                for k, c in coverage(conn, args.since, args.until, args.table).items()
                if args.site is None or k[0] == args.site
            }
    except psycopg.Error as exc:
        print(f"floor rounds: {exc}", file=sys.stderr)
        return 1
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    incomplete = 0
    for rnd in rounds:
        doc = rnd.to_json()
        print(json.dumps(doc, sort_keys=True))
        if not rnd.complete:
            incomplete += 1
        elif args.out:
            name = _SAFE_NAME.sub("_", f"{rnd.table_id}-{rnd.round_id}")[:120]
            (args.out / f"{name}.json").write_text(json.dumps(rnd.description(), indent=2) + "\n")
    absent = absent_rounds(rounds, covers)
    for gone in absent:
        print(json.dumps(gone.to_json(), sort_keys=True))
    named = sum(1 for a in absent if a.round_id is not None)
    holes = len(absent) - named
    total, short = len(rounds) + named, incomplete + named
    print(
        f"{count(total, 'round')}: {total - short} complete, {short} INCOMPLETE ({named} of them absent: round ids"
        f" skipped, no event archived)"
        + (
            f"; {count(holes, 'hole')} of the window outside the archived rounds may hide more"
            if holes
            else ""
        ),
        file=sys.stderr,
    )
    for (site, table_id), cov in sorted(covers.items()):
        print(f"{safe(site, 64)}/{safe(table_id, 64)}: {cov.summary()}", file=sys.stderr)
    return 0
