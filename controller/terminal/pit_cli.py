"""`tablectl terminal`: the dealer pit terminal (docs/terminal.md)."""

from __future__ import annotations

import argparse
import sys

from controller.terminal.broker_password import PasswordError, broker_password
from controller.terminal.pit import PitApp
from controller.terminal.pit_connection import PitConnection


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="MQTT broker host")
    p.add_argument("--port", type=int, default=1883, help="MQTT broker port")
    p.add_argument("--user", default="dealer", help="broker account of the pit terminal (dealer role)")
    p.add_argument(
        "--password-file",
        help="file holding its broker password, mode 0600 (else $TABLECTL_MQTT_PASSWORD, else asked)",
    )
    p.add_argument("--site", required=True, help="site of the topic prefix casino/<site>/table/<id>")
    p.add_argument("--table", required=True, help="table id")
    p.add_argument(
        "--supervisor-account",
        help="broker account (supervisor role) for signed supervisor actions (else refused)",
    )
    p.add_argument(
        "--supervisor-password-file",
        help="file holding its broker password, mode 0600 (else $TABLECTL_SUPERVISOR_MQTT_PASSWORD, else asked)",
    )
    p.add_argument("--profile", default="pt-2001", help="rule profile proposed by 'open table'")
    p.add_argument("--seats", type=int, default=7, help="number of seats at the table")
    p.add_argument(
        "--key-dir",
        help="the supervisors' PIN-encrypted key files (default: $TABLECTL_KEY_DIR, ~/.config/tablectl/keys)",
    )


def main(args: argparse.Namespace) -> int:
    if not 1 <= args.seats <= 9:
        print(f"terminal: --seats must be 1..9, got {args.seats}", file=sys.stderr, flush=True)
        return 2
    try:
        password = broker_password(args.password_file, "TABLECTL_MQTT_PASSWORD", f"terminal: {args.user}")
        sup_password = (
            broker_password(
                args.supervisor_password_file,
                "TABLECTL_SUPERVISOR_MQTT_PASSWORD",
                f"terminal: {args.supervisor_account}",
            )
            if args.supervisor_account
            else None
        )
    except PasswordError as exc:
        print(exc, file=sys.stderr, flush=True)
        return 2
    conn = PitConnection(
        host=args.host,
        port=args.port,
        user=args.user,
        password=password,
        prefix=f"casino/{args.site}/table/{args.table}",
        supervisor_account=args.supervisor_account,
        supervisor_password=sup_password,
        profile=args.profile,
        seats=args.seats,
        key_dir=args.key_dir,
    )
    PitApp(conn).run()
    return 0
