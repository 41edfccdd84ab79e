"""``tablectl floor alerts``: the floor's own alerts, most severe and newest first (``--all``: acknowledged
too; ``--ack ID --user NAME``: acknowledge one on the floor; ``--json``)."""

from __future__ import annotations

import argparse
import json
import sys

import psycopg

from controller.words import alert_words
from floor.archive import store
from floor.cli.tablectl import add_dsn
from floor.common.alerts import acknowledge_alert
from floor.common.text import safe
from floor.reports.queries import floor_alerts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--table", default=None, help="one table only")
    parser.add_argument("--all", action="store_true", help="acknowledged alerts too")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--ack", type=int, default=None, metavar="ALERT", help="acknowledge the floor alert with this number"
    )
    parser.add_argument("--user", default=None, help="who acknowledges (with --ack)")


def main(args: argparse.Namespace) -> int:
    try:
        with store.connect(args.dsn) as conn:
            if args.ack is not None:
                if not args.user:
                    print("floor alerts: --ack needs --user", file=sys.stderr)
                    return 2
                if not acknowledge_alert(conn, args.ack, args.user):
                    print(f"floor alerts: no open floor alert {args.ack}", file=sys.stderr)
                    return 1
                print(f"acknowledged floor alert {args.ack}")
                return 0
            alerts = floor_alerts(conn, open_only=not args.all, table=args.table)
    except psycopg.Error as exc:
        print(f"floor alerts: {exc}", file=sys.stderr)
        return 1
    for a in alerts:
        if args.json:
            print(json.dumps(a.to_json(), sort_keys=True))
        else:
            ack = f"  acknowledged by {safe(a.acknowledged_by)}" if a.acknowledged_by else ""
            print(
                f"#{a.alert_id} {a.raised_at:%Y-%m-%d %H:%M:%S} {a.severity:<8} {safe(a.site)}/{safe(a.table_id)}"
                f" {safe(alert_words(a.kind))}: {safe(a.message)}{ack}"
            )
    if not alerts and not args.json:
        print("no open floor alerts" if not args.all else "no floor alerts")
    return 0
