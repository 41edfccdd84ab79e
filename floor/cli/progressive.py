"""``tablectl floor progressive <command>``: the linked progressive's controller and its operators' commands
(docs/progressive.md).

    run     --config link.toml                 the link's controller (systemd: tablectl-floor-progressive@LINK)
    record  --config link.toml                 record the software's digest and the link's key in the manifest
    suspend|resume --link L --by A --with B --reason TEXT      dual control (two supervisors' passwords)
    set     --link L --config new.toml --by A --with B --reason TEXT   new parameters (link suspended)
    correct --link L --to-minor N --by A --with B --reason TEXT       a meter correction (link suspended)
    report  --link L [--csv]                   meters and records

Passwords are read from files (``--by-password-file``, ``--with-password-file``; ``-`` is standard input, one
line each), never from the command line. Exit 2: refused (the reason on stderr, journaled)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from datetime import time
from pathlib import Path

import psycopg

from controller.jackpot.config import LINK_NAME
from floor.accounts.users import UserError
from floor.archive import store
from floor.cli.tablectl import add_dsn
from floor.cli.users import read_password
from floor.progressive import config as link_config
from floor.progressive import control, integrity, report


def _link(text: str) -> str:
    if not LINK_NAME.match(text):
        raise argparse.ArgumentTypeError("a link is named [a-z0-9-]{1,32}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="progressive_command", metavar="COMMAND", required=True)
    run = sub.add_parser("run", help="the link's controller", allow_abbrev=False)
    add_dsn(run)
    run.add_argument("--config", type=Path, required=True, help="the link's link.toml")
    run.add_argument("--link", type=_link, default=None, help="the link (must be link.toml's)")
    talk = run.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    talk.add_argument("-v", "--verbose", action="store_true", help="debug lines as well")
    rec = sub.add_parser("record", help="record the software digest and the link's key in the manifest")
    rec.add_argument("--config", type=Path, required=True, help="the link's link.toml")
    for name in ("suspend", "resume", "set", "correct"):
        sp = sub.add_parser(name, help=f"{name} a link (dual control)", allow_abbrev=False)
        add_dsn(sp)
        sp.add_argument("--link", type=_link, required=True, help="the link's name, e.g. bank-a")
        sp.add_argument("--by", required=True, help="the first supervisor (a dashboard account)")
        sp.add_argument(
            "--by-password-file", required=True, help="a file whose first line is the password; - stdin"
        )
        sp.add_argument("--with", dest="second", required=True, help="the second supervisor, another person")
        sp.add_argument("--with-password-file", required=True, help="as --by-password-file")
        sp.add_argument("--reason", required=True, help="why (journaled)")
        if name == "set":
            sp.add_argument("--config", type=Path, required=True, help="a link.toml with the new [link]")
        if name == "correct":
            sp.add_argument("--to-minor", type=int, required=True, help="the meter's new value, minor units")
    rep = sub.add_parser("report", help="a link's meters and records")
    add_dsn(rep)
    rep.add_argument("--link", type=_link, required=True, help="the link's name, e.g. bank-a")
    rep.add_argument("--csv", action="store_true", help="CSV instead of text")
    rep.add_argument("--shift-hours", type=int, default=8, choices=(4, 6, 8, 12, 24), help="a shift's length")
    rep.add_argument(
        "--shift-anchor", type=time.fromisoformat, default=time(6, 0), help="a shift's start, UTC"
    )


def _run(args: argparse.Namespace) -> int:
    from floor.progressive.service import Controller, StartRefused  # paho and the key only for the service

    level = logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    cfg = link_config.load(args.config)
    if args.link is not None and args.link != cfg.params.link:
        print(f"floor progressive: {args.config} is link {cfg.params.link}, not {args.link}", file=sys.stderr)
        return 2
    password = os.environ.get(cfg.password_env)
    if not password:
        print(f"floor progressive: set the broker password in ${cfg.password_env}", file=sys.stderr)
        return 2
    ctl = Controller(cfg, args.dsn, password)
    signal.signal(signal.SIGTERM, lambda *_: ctl.request_stop())
    try:
        ctl.run_forever()
    except (integrity.IntegrityError, StartRefused) as exc:
        print(f"floor progressive: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    except (psycopg.Error, TimeoutError, OSError) as exc:
        print(f"floor progressive: {exc}", file=sys.stderr)
        return 1
    return 0


def _record(args: argparse.Namespace) -> int:
    from controller.audit.checkpoint import public_key_hex
    from controller.audit.keys import load_or_create

    cfg = link_config.load(args.config)
    key = public_key_hex(load_or_create(cfg.key_file).public_key())
    doc = integrity.record(cfg.manifest, {cfg.params.link: key})
    print(f"recorded {cfg.manifest}: software {doc['software_sha256']}, link {cfg.params.link} key {key}")
    return 0


def _control(args: argparse.Namespace) -> int:
    first = control.Credential(args.by, read_password(args.by_password_file))
    second = control.Credential(args.second, read_password(args.with_password_file))
    with store.connect(args.dsn, autocommit=True) as conn:
        cmd = args.progressive_command
        if cmd == "set":
            params = link_config.load(args.config).params
            link = control.set_params(conn, args.link, params, first, second, args.reason)
        elif cmd == "correct":
            link = control.correct(conn, args.link, args.to_minor, first, second, args.reason)
        else:
            link = (control.suspend if cmd == "suspend" else control.resume)(
                conn, args.link, first, second, args.reason
            )
    print(
        f"link {link.link}: {cmd} done ({link.status.value}, parameters version {link.params_version},"
        f" journal record {link.journal.seq})"
    )
    return 0


def _report(args: argparse.Namespace) -> int:
    with store.connect(args.dsn) as conn:
        r = report.link_report(conn, args.link, shift_hours=args.shift_hours, shift_anchor=args.shift_anchor)
    if r is None:
        print(f"floor progressive: no link {args.link}", file=sys.stderr)
        return 2
    sys.stdout.write(report.to_csv(r) if args.csv else report.to_text(r))
    return 0


_COMMANDS = {
    "run": _run,
    "record": _record,
    "report": _report,
    "suspend": _control,
    "resume": _control,
    "set": _control,
    "correct": _control,
}


def main(args: argparse.Namespace) -> int:
    try:
        return _COMMANDS[args.progressive_command](args)
    except (link_config.LinkConfigError, control.Refused, UserError, integrity.IntegrityError) as exc:
        print(f"floor progressive: {exc}", file=sys.stderr)
        return 2
    except psycopg.Error as exc:
        print(f"floor progressive: {exc}", file=sys.stderr)
        return 1
