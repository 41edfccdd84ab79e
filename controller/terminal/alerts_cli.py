"""`tablectl alerts`: the floor supervisor's alert console over every table of a site (docs/terminal.md)."""

from __future__ import annotations

import argparse
import sys

from controller.terminal.alerts import AlertsApp
from controller.terminal.broker_password import PasswordError, broker_password
from controller.terminal.fleet import FleetAlerts


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="MQTT broker host")
    p.add_argument("--port", type=int, default=1883, help="MQTT broker port")
    p.add_argument("--user", default="supervisor1", help="broker account (supervisor role)")
    p.add_argument(
        "--password-file",
        help="file holding its broker password, mode 0600 (else $TABLECTL_MQTT_PASSWORD, else asked)",
    )
    p.add_argument("--site", default="+", help="one site, or every site (default)")
    p.add_argument(
        "--key-dir",
        help="the supervisors' PIN-encrypted key files, to sign acknowledgements "
        "(default: $TABLECTL_KEY_DIR, ~/.config/tablectl/keys)",
    )


def main(args: argparse.Namespace) -> int:
    if "/" in args.site or "#" in args.site:
        print(f"alerts: --site must be a site name or '+', got {args.site!r}", file=sys.stderr, flush=True)
        return 2
    try:
        password = broker_password(args.password_file, "TABLECTL_MQTT_PASSWORD", f"alerts: {args.user}")
    except PasswordError as exc:
        print(exc, file=sys.stderr, flush=True)
        return 2
    fleet = FleetAlerts(
        args.host, args.port, username=args.user, password=password, site=args.site, key_dir=args.key_dir
    )
    AlertsApp(fleet).run()
    return 0
