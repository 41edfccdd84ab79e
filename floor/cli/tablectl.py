"""``tablectl floor <command>``: the floor's commands, one module each (``add_arguments``/``main``).

Every command takes ``--dsn`` (default ``$FLOOR_DSN`` or ``postgresql://postgres@127.0.0.1:5432/floor``)."""

from __future__ import annotations

import argparse
import importlib
import os

from controller.floor.store import DEFAULT_DSN

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "migrate": ("controller.floor.migrate_cli", "create or upgrade the floor database schema"),
    "archive": ("controller.floor.archive_cli", "archive worker: floor broker -> PostgreSQL"),
    "alerts": (
        "controller.floor.alerts_cli",
        "the floor's alerts (missing events, broken checkpoint chains)",
    ),
    "rounds": ("controller.floor.rounds_cli", "archived rounds as replayable round descriptions"),
    "jackpot": ("controller.floor.jackpot_cli", "jackpot meter history per table"),
    "report": ("controller.floor.report_cli", "a day's summary per table (CSV or HTML)"),
    "shift": ("controller.floor.shift_cli", "a shift's figures per table, pit and floor (CSV or HTML)"),
    "sessions": (
        "controller.floor.sessions_cli",
        "play sessions: win, theoretical win, play precision, bet vs count, advantage-play flags",
    ),
    "bridge": ("controller.floor.bridge_cli", "write a table broker's bridge section to the floor broker"),
    "web": ("controller.floor.web_cli", "the floor dashboard (web, live updates, behind a login)"),
    "user": (
        "controller.floor.users_cli",
        "the dashboard's user accounts (add, password, role, disable, list)",
    ),
    "enrol": ("controller.floor.enrol_cli", "enrol a table's audit key (from its integrity manifest)"),
}


def add_dsn(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dsn",
        default=os.environ.get("FLOOR_DSN", DEFAULT_DSN),
        help="PostgreSQL connection string (default: $FLOOR_DSN or %(default)s)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="floor_command", metavar="FLOOR_COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(_floor_module=module_name)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            sp.set_defaults(_floor_unavailable=f"floor {name}: not available ({exc})")
            continue
        module.add_arguments(sp)


def main(args: argparse.Namespace) -> int:
    if getattr(args, "_floor_unavailable", None):
        print(args._floor_unavailable)
        return 2
    return int(importlib.import_module(args._floor_module).main(args) or 0)
