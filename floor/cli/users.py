"""``tablectl floor user``: the dashboard's accounts (floor/accounts/users.py).

    tablectl floor user add NAME --role viewer|supervisor --password-file FILE    (FILE "-": standard input)
    tablectl floor user password NAME --password-file FILE
    tablectl floor user role NAME --role viewer|supervisor
    tablectl floor user disable NAME | enable NAME
    tablectl floor user list

A password is read from a file or standard input (its first line), never from the command line, where other
users of the host could read it. A new password, a new role or disabling ends the user's sessions at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import psycopg

from floor.accounts.users import (
    Role,
    UserError,
    add_user,
    list_users,
    set_disabled,
    set_password,
    set_role,
)
from floor.archive import store
from floor.cli.tablectl import add_dsn

ROLE_HELP = (
    "viewer: sees every table and alert; supervisor: also acknowledges alerts; "
    "surveillance: what a viewer sees, and the play sessions and advantage-play alerts"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="user_command", metavar="COMMAND", required=True)
    # no abbreviations: "--password SECRET" must not be taken for --password-file (and echoed in an error)
    add = sub.add_parser("add", help="create an account", allow_abbrev=False)
    add.add_argument("name", help="the account's user name")
    add.add_argument("--role", required=True, choices=[r.value for r in Role], help=ROLE_HELP)
    add.add_argument(
        "--password-file", required=True, help="a file whose first line is the password; - for stdin"
    )
    password = sub.add_parser(
        "password", help="set an account's password (ends its sessions)", allow_abbrev=False
    )
    password.add_argument("name", help="the account's user name")
    password.add_argument("--password-file", required=True, help="as for add")
    role = sub.add_parser("role", help="change an account's role (ends its sessions)")
    role.add_argument("name", help="the account's user name")
    role.add_argument("--role", required=True, choices=[r.value for r in Role], help=ROLE_HELP)
    for name, text in (("disable", "disable an account (ends its sessions)"), ("enable", "enable it again")):
        sub.add_parser(name, help=text).add_argument("name", help="the account's user name")
    sub.add_parser("list", help="every account")
    for each in sub.choices.values():  # after the command: tablectl floor user add ana ... --dsn DSN
        add_dsn(each)


def read_password(source: str) -> str:
    """The first line of ``source`` (a path, or - for standard input), without its line ending."""
    try:
        text = sys.stdin.readline() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"password file {source}: {exc.__class__.__name__}") from None
    return text.splitlines()[0] if text else ""


def main(args: argparse.Namespace) -> int:
    try:
        with store.connect(args.dsn) as conn:
            store.migrate(conn)
            if args.user_command == "add":
                add_user(conn, args.name, Role(args.role), read_password(args.password_file))
                print(f"dashboard user {args.name} ({args.role}) added")
            elif args.user_command == "password":
                set_password(conn, args.name, read_password(args.password_file))
                print(f"dashboard user {args.name}: password set, sessions ended")
            elif args.user_command == "role":
                set_role(conn, args.name, Role(args.role))
                print(f"dashboard user {args.name}: now {args.role}, sessions ended")
            elif args.user_command in ("disable", "enable"):
                set_disabled(conn, args.name, args.user_command == "disable")
                print(f"dashboard user {args.name} {args.user_command}d")
            else:
                for u in list_users(conn):
                    state = "disabled" if u.disabled else "enabled"
                    print(f"{u.name}\t{u.role.value}\t{state}\tcreated {u.created_at:%Y-%m-%d %H:%M:%S %Z}")
    except UserError as exc:
        print(f"floor user: {exc}", file=sys.stderr)
        return 1
    except (psycopg.Error, store.MigrationError) as exc:
        print(f"floor user: {exc}", file=sys.stderr)
        return 1
    return 0
