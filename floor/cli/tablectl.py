"""``tablectl floor <command>``: the floor's commands, one module each (``add_arguments``/``main``).

Every command takes ``--dsn`` (default ``$FLOOR_DSN`` or ``postgresql://postgres@127.0.0.1:5432/floor``)."""

from __future__ import annotations

import argparse
import importlib
import os

from floor.archive.store import DEFAULT_DSN
from floor.cli.examples import (
    EXAMPLES as EXAMPLES,
)  # tablectl's --help shows them (controller/cli/examples.py)

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "migrate": ("floor.cli.migrate", "create or upgrade the floor database schema"),
    "archive": (
        "floor.cli.archive",
        "archive worker: every table's events from the floor broker to the database",
    ),
    "alerts": (
        "floor.cli.alerts",
        "the floor's alerts (events missing from the archive, a table's signatures that do not check out)",
    ),
    "rounds": ("floor.cli.rounds", "archived rounds as replayable round descriptions"),
    "jackpot": ("floor.cli.jackpot", "jackpot meter history per table"),
    "report": ("floor.cli.report", "a day's summary per table (CSV or HTML)"),
    "shift": ("floor.cli.shift", "a shift's figures per table, pit and floor (CSV or HTML)"),
    "sessions": (
        "floor.cli.sessions",
        "play sessions: win, expected win, how close to basic strategy, bets against the count, advantage play",
    ),
    "judge": (
        "floor.cli.judge",
        "the judging pass: store the judgement of each settled round, which floor sessions then reads",
    ),
    "players": (
        "floor.cli.players",
        "player ratings (visits, handle, win, theoretical win, comp) and the players' personal data",
    ),
    "bridge": ("floor.cli.bridge", "write a table broker's bridge section to the floor broker"),
    "web": ("floor.cli.web", "the floor dashboard (web, live updates, behind a login)"),
    "user": (
        "floor.cli.users",
        "the dashboard's user accounts (add, password, role, disable, list)",
    ),
    "enrol": ("floor.cli.enrol", "enrol a table's audit key (from its integrity manifest)"),
    "backup": (
        "floor.cli.backup",
        "the database's base backups, their restore check, WAL archiving: run, verify, status",
    ),
    "restore": ("floor.cli.restore", "prepare a new data directory restored to a point in time"),
    "promote": ("floor.cli.promote", "make the standby floor server the primary (after its checks)"),
    "progressive": (
        "floor.cli.progressive",
        "the linked progressive's controller, its dual-control changes and its report",
    ),
}


def add_dsn(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dsn",
        default=os.environ.get("FLOOR_DSN", DEFAULT_DSN),
        help="PostgreSQL connection string (default: $FLOOR_DSN or %(default)s)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="floor_command", metavar="COMMAND", required=True)
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
