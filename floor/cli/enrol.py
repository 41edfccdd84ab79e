"""``tablectl floor enrol``: enrol a table's audit public key on the floor (floor/archive/enrol.py), from the
table's integrity manifest (``--manifest``) or as hex (``--key``); ``--trust-on-first-use on|off`` for a table
whose key is not at hand. Without a key or a setting: show the table's enrolment."""

from __future__ import annotations

import argparse
import re
import sys

import psycopg

from controller.journal.trusted_key import given_key
from floor.archive import store
from floor.archive.enrol import enrol, enrolment, set_trust_on_first_use
from floor.cli.tablectl import add_dsn
from floor.common.messages import TableRef
from floor.common.text import safe

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--site", required=True, help="the table's site")
    parser.add_argument("--table", required=True, help="the table id")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--manifest", default=None, help="the table's integrity manifest (it holds the audit public key)"
    )
    source.add_argument("--key", default=None, help="the table's audit public key (64 hex)")
    parser.add_argument("--user", default=None, help="who enrols (recorded)")
    parser.add_argument("--replace", action="store_true", help="replace a key the floor already trusts")
    parser.add_argument(
        "--trust-on-first-use", choices=("on", "off"), default=None, help="for this table only (default off)"
    )


def main(args: argparse.Namespace) -> int:
    if not (_NAME.match(args.site) and _NAME.match(args.table)):
        print("floor enrol: --site and --table are plain names", file=sys.stderr)
        return 2
    table = TableRef(args.site, args.table)
    try:
        key = given_key(args.key, args.manifest)
        with store.connect(args.dsn) as conn:
            store.migrate(conn)
            if key is not None:
                if not args.user:
                    print("floor enrol: give --user (who enrols)", file=sys.stderr)
                    return 2
                changed = enrol(conn, table, key.hex, args.user, replace=args.replace)
                print(f"{'enrolled' if changed else 'already enrolled'}: {args.site}/{args.table} audit key"
                      f" {key.hex} ({key.source})")  # fmt: skip
            if args.trust_on_first_use is not None:
                set_trust_on_first_use(conn, table, args.trust_on_first_use == "on")
                print(f"trust on first use {args.trust_on_first_use} for {args.site}/{args.table}")
            now = enrolment(conn, table)
    except (ValueError, OSError) as exc:  # EnrolError, a bad key or manifest
        print(f"floor enrol: {exc}", file=sys.stderr)
        return 1
    except psycopg.Error as exc:
        print(f"floor enrol: {exc}", file=sys.stderr)
        return 1
    if key is None and args.trust_on_first_use is None:
        if now is None or now.public_key is None:
            tofu = "on" if now is not None and now.trust_on_first_use else "off"
            print(f"{args.site}/{args.table}: no audit key (trust on first use {tofu})")
        else:
            print(f"{args.site}/{args.table}: audit key {now.public_key} ({now.key_source}"
                  f"{', by ' + safe(now.enrolled_by) if now.enrolled_by else ''})")  # fmt: skip
    return 0
