"""``tablectl floor judge [--since T] [--until T] [--hours N] [--table T]``: the judging pass (issue 44,
floor/reports/judged.py). Judges the window's settled rounds that have no current stored judgement (never judged,
or judged of another version of the round or by other code) and stores them in ``judged_rounds``, one transaction
per table; ``floor sessions`` then reads them instead of replaying those rounds. Idempotent: run it again and it
judges nothing new. Run it off the archive's write path, periodically (a timer or cron, e.g. every 10 minutes
with ``--hours 1``) and once with a long window after an upgrade (new judging code makes every row stale). Prints
one line per table with work done and the totals; exit 0, 1 on a database error."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime

import psycopg

from floor.archive import store
from floor.cli.shift import add_window, window
from floor.common.text import safe
from floor.reports.judged import ToStore, encode, pending


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_window(parser)
    parser.add_argument("--table", default=None, help="only this table id")


def save(conn: psycopg.Connection, site: str, table: str, rows: list[ToStore]) -> None:
    """Store judgements (idempotent: the row of the same round's first event is replaced)."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO judged_rounds (site, table_id, first_event, round_id, digest, judgement)"
            " VALUES (%s, %s, %s, %s, %s, %s::jsonb) ON CONFLICT (site, table_id, first_event) DO UPDATE SET"
            " round_id = excluded.round_id, digest = excluded.digest, judgement = excluded.judgement,"
            " judged_at = now()",
            [
                (site, table, r.first_event, r.round_id, r.digest, json.dumps(encode(r.judgement)))
                for r in rows
            ],
        )


def judge_window(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None = None
) -> dict[str, int]:
    """The pass over every table (or one): judged now, of them stale, current already, not judgeable."""
    tables = conn.execute(
        "SELECT site, table_id FROM floor_tables WHERE (%s::text IS NULL OR table_id = %s) ORDER BY 1, 2",
        (table, table),
    ).fetchall()
    conn.commit()
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # each table's rounds from one snapshot
    total = {"judged": 0, "stale": 0, "current": 0, "open": 0, "tables": len(tables)}
    for site, table_id in tables:
        with conn.transaction():
            p = pending(conn, site, table_id, since, until)
            save(conn, site, table_id, p.new)
        for k, v in (("judged", len(p.new)), ("stale", p.stale), ("current", p.current), ("open", p.open)):
            total[k] += v
        if p.new:
            print(f"{safe(site, 40)}/{safe(table_id, 40)}: {len(p.new)} judged ({p.stale} stale),"
                  f" {p.current} current, {p.open} void or incomplete")  # fmt: skip
    return total


def main(args: argparse.Namespace) -> int:
    w = window(args, "judge")
    if w is None:
        return 2
    since, until = w
    t0 = time.monotonic()
    try:
        with store.connect(args.dsn) as conn:
            t = judge_window(conn, since, until, args.table)
    except psycopg.Error as exc:
        print(f"floor judge: {exc}", file=sys.stderr)
        return 1
    print(f"judged {t['judged']} round(s) ({t['stale']} stale), {t['current']} judged already,"
          f" {t['open']} void or incomplete, {t['tables']} table(s), {time.monotonic() - t0:.1f} s")  # fmt: skip
    return 0
