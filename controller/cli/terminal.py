"""`tablectl terminal`: the dealer pit terminal (docs/terminal.md)."""

from __future__ import annotations

import argparse

from controller.cli.screen import run_screen
from controller.mqtt import client_options as opts
from controller.terminal.broker_password import broker_password
from controller.terminal.pit import PitApp
from controller.terminal.pit_connection import PitConnection

# The connection: the command line, else --client-config, else these (password: else $TABLECTL_MQTT_PASSWORD,
# else asked). The dealer's screen on the Pi or a pit PC: docs/deploy.md "The dealer's screen".
KEYS = (opts.HOST, opts.PORT, opts.USERNAME, opts.PASSWORD_FILE, *opts.TLS_KEYS, opts.SITE, opts.TABLE)
DEFAULTS = {opts.HOST.name: "127.0.0.1", opts.USERNAME.name: "dealer"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    opts.add_client_config(p)
    opts.add_options(p, KEYS, DEFAULTS)
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


def connection(args: argparse.Namespace) -> PitConnection:
    """Where the terminal connects, from the options and ``--client-config``; ``ClientConfigError`` or
    ``PasswordError`` with the one line to print."""
    if not 1 <= args.seats <= 9:
        raise opts.ClientConfigError(f"--seats must be 1..9, got {args.seats}")
    where = opts.merged(args, KEYS, DEFAULTS)
    tls = opts.tls_of(where)
    missing = [k.flag for k in (opts.SITE, opts.TABLE) if where[k.name] in (None, "+")]
    if missing:
        raise opts.ClientConfigError(f"give {' and '.join(missing)} (or site/table in --client-config)")
    user = where[opts.USERNAME.name]
    password = broker_password(where[opts.PASSWORD_FILE.name], "TABLECTL_MQTT_PASSWORD", f"terminal: {user}")
    sup_password = (
        broker_password(
            args.supervisor_password_file,
            "TABLECTL_SUPERVISOR_MQTT_PASSWORD",
            f"terminal: {args.supervisor_account}",
        )
        if args.supervisor_account
        else None
    )
    return PitConnection(
        host=where[opts.HOST.name],
        port=where[opts.PORT.name],
        user=user,
        password=password,
        prefix=f"casino/{where[opts.SITE.name]}/table/{where[opts.TABLE.name]}",
        tls=tls,
        supervisor_account=args.supervisor_account,
        supervisor_password=sup_password,
        profile=args.profile,
        seats=args.seats,
        key_dir=args.key_dir,
    )


def main(args: argparse.Namespace) -> int:
    return run_screen("terminal", lambda: PitApp(connection(args)))
