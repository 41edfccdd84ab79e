"""``tablectl floor players``: player ratings (issue 41) and the players' personal data.

- ``tablectl floor players [--player CARD] [--since T] [--until T] [--hours N] [--csv [F]] [--html F] [--names]``:
  each visit and each player's rating over the window (floor/players/: names and meanings of the figures in
  floor/reports/figures.py); names from the registry only with ``--names``;
- ``tablectl floor players register --card N --name NAME [--details TEXT] --by USER``;
- ``tablectl floor players erase --player CARD|PSEUDONYM --by USER --reason TEXT``: the player's personal data
  erased (floor/players/registry.py), journaled;
- ``tablectl floor players settings [--comp-share PCT] [--retention-days N | --keep-until-erased] --by USER``;
- ``tablectl floor players retention --by USER``: erase every player not seen for the retention days (a daily
  timer runs it; docs/floor.md "Players").

What is refused says why on stderr (exit 2); nothing personal is printed without ``--names``."""

from __future__ import annotations

import argparse
import getpass
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from controller.words import count
from floor.archive import store
from floor.cli.shift import STDOUT, add_window
from floor.common.text import safe
from floor.players import registry
from floor.players.load import MAX_WINDOW, load_players
from floor.players.report import to_csv, to_html, to_text
from floor.reports.queries import consistent_read


def _common(parser: argparse.ArgumentParser) -> None:
    """An action's ``--dsn`` (given before the action, the players' own ``--dsn`` stands: no default here that
    would replace it) and ``--by``."""
    parser.add_argument("--dsn", default=argparse.SUPPRESS, help="PostgreSQL connection string (as above)")
    parser.add_argument("--by", default=getpass.getuser(), help="who does it (the journal says): default you")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_window(parser)
    parser.add_argument(
        "--player", default=None, help="one player: card number, card:N, anon:S-N or pseudonym"
    )
    parser.add_argument(
        "--csv", type=Path, nargs="?", const=STDOUT, default=None,
        help="the CSV (minor units) instead of the text: to this file, or to stdout without one",
    )  # fmt: skip
    parser.add_argument("--html", type=Path, default=None, help="write the self-contained HTML page here")
    parser.add_argument("--names", action="store_true", help="show registered players' names (personal data)")
    sub = parser.add_subparsers(dest="players_command", metavar="ACTION")
    reg = sub.add_parser(
        "register", help="register a card with a name (personal data: the floor's database only)"
    )
    reg.add_argument("--card", required=True, help="the card number (4-32 letters and digits)")
    reg.add_argument(
        "--name", required=True, help="the player's name (personal data: shown to supervisors only)"
    )
    reg.add_argument("--details", default="", help="other personal details (at most 500 characters)")
    _common(reg)
    er = sub.add_parser("erase", help="erase a player's personal data (journaled)")
    er.add_argument("--player", required=True, help="card number or pseudonym")
    er.add_argument("--reason", required=True, help="why (the journal keeps it: no personal data here)")
    _common(er)
    st = sub.add_parser("settings", help="the comp share and how long personal details are kept")
    st.add_argument("--comp-share", default=None, help="comp: this per cent of theoretical win (0-100)")
    st.add_argument("--retention-days", type=int, default=None, help="erase players not seen for N days")
    st.add_argument("--keep-until-erased", action="store_true", help="no retention: kept until erased")
    _common(st)
    rt = sub.add_parser("retention", help="erase every player not seen for the retention days")
    _common(rt)


def _refused(text: str) -> int:
    print(f"floor players: {text}", file=sys.stderr)
    return 2


def _report(args: argparse.Namespace) -> int:
    until = args.until or datetime.now(UTC)
    since = args.since or until - timedelta(hours=args.hours)
    if not since < until or until - since > MAX_WINDOW:
        return _refused(f"the window must start before it ends and span at most {MAX_WINDOW.days} days")
    try:
        with store.connect(args.dsn) as conn, consistent_read(conn):
            rep = load_players(conn, since, until, args.player)
    except LookupError as exc:
        return _refused(str(exc.args[0]))
    except psycopg.Error as exc:
        print(f"floor players: {exc}", file=sys.stderr)
        return 1
    if args.csv == STDOUT:
        sys.stdout.write(to_csv(rep, args.names))
    elif args.csv:
        args.csv.write_text(to_csv(rep, args.names))
    if args.html:
        args.html.write_text(to_html(rep, args.names))
    if not args.csv and not args.html:
        sys.stdout.write(to_text(rep, args.names))
    for line in rep.problems:
        print(f"not used: {safe(line, 300)}", file=sys.stderr)
    print(f"{count(len(rep.players), 'player')}, {count(len(rep.visits), 'visit')}, "
          f"{count(rep.refused, 'player event')} refused", file=sys.stderr)  # fmt: skip
    return 0


def _register(conn: psycopg.Connection, args: argparse.Namespace) -> str:
    pid = registry.register(conn, args.card, args.name, args.details, args.by)
    return f"registered as {pid}"


def _erase(conn: psycopg.Connection, args: argparse.Namespace) -> str:
    if not args.reason.strip() or len(args.reason) > 200:
        raise registry.PlayerError("reason: 1 to 200 characters")
    return f"personal data erased: now {registry.erase(conn, args.player, args.by, args.reason).reference}"


def _settings(conn: psycopg.Connection, args: argparse.Namespace) -> str:
    share = registry.parse_share(args.comp_share) if args.comp_share is not None else None
    s = registry.change_settings(conn, args.by, comp_share_pct=share, retention_days=args.retention_days,
                                 keep_forever=args.keep_until_erased)  # fmt: skip
    return f"comp share {s.comp_share_pct} %, retention {s.retention_days or 'until erased'} days"


def _retention(conn: psycopg.Connection, args: argparse.Namespace) -> str:
    return f"{count(len(registry.erase_expired(conn, args.by)), 'player')} erased"


_ACTIONS = {"register": _register, "erase": _erase, "settings": _settings, "retention": _retention}


def main(args: argparse.Namespace) -> int:
    action = _ACTIONS.get(args.players_command or "")
    if action is None:
        return _report(args)
    try:
        with store.connect(args.dsn) as conn:
            print(action(conn, args))
    except registry.PlayerError as exc:
        return _refused(str(exc))
    except psycopg.Error as exc:
        print(f"floor players: {exc}", file=sys.stderr)
        return 1
    return 0
