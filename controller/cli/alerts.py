"""`tablectl alerts`: the floor supervisor's alert console over every table of a site (docs/terminal.md)."""

from __future__ import annotations

import argparse

from controller.cli.screen import run_screen
from controller.mqtt import client_options as opts
from controller.terminal.alerts import AlertsApp
from controller.terminal.broker_password import broker_password
from controller.terminal.fleet import FleetAlerts

# The connection: the command line, else --client-config (its table, if any, is not used: the console shows
# every table of the site), else these; password: else $TABLECTL_MQTT_PASSWORD, else asked.
KEYS = (opts.HOST, opts.PORT, opts.USERNAME, opts.PASSWORD_FILE, *opts.TLS_KEYS, opts.SITE)
DEFAULTS = {opts.HOST.name: "127.0.0.1", opts.USERNAME.name: "supervisor1", opts.SITE.name: "+"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    opts.add_client_config(p)
    opts.add_options(p, KEYS, DEFAULTS)
    p.add_argument(
        "--key-dir",
        help="the supervisors' PIN-encrypted key files, to sign acknowledgements "
        "(default: $TABLECTL_KEY_DIR, ~/.config/tablectl/keys)",
    )


def fleet(args: argparse.Namespace) -> FleetAlerts:
    """The console's connection, from the options and ``--client-config``; ``ClientConfigError`` or
    ``PasswordError`` with the one line to print."""
    where = opts.merged(args, KEYS, DEFAULTS)
    tls = opts.tls_of(where)
    user = where[opts.USERNAME.name]
    password = broker_password(where[opts.PASSWORD_FILE.name], "TABLECTL_MQTT_PASSWORD", f"alerts: {user}")
    return FleetAlerts(where[opts.HOST.name], where[opts.PORT.name], username=user, password=password,
                       site=where[opts.SITE.name], key_dir=args.key_dir, tls=tls)  # fmt: skip


def main(args: argparse.Namespace) -> int:
    return run_screen("alerts", lambda: AlertsApp(fleet(args)))
