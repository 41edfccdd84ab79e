"""``tablectl floor archive``: one archive worker (run several with distinct ``--worker`` names)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

import psycopg

from controller.floor.archive import ArchiveConfig, ArchiveWorker
from controller.floor.cli import add_dsn
from controller.mqtt import client_options as opts
from controller.mqtt.paho_client import default_port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)
    parser.add_argument("--host", default="127.0.0.1", help="floor broker host")
    parser.add_argument(
        "--port", type=int, default=None, help="floor broker port (default 8883 with --ca, else 1883)"
    )
    opts.add_options(parser, opts.TLS_KEYS, {})
    parser.add_argument("--username", default="archive", help="broker account (an archive* account)")
    parser.add_argument(
        "--password-env",
        default="FLOOR_ARCHIVE_PASSWORD",
        help="environment variable holding the account's password (never on the command line)",
    )
    parser.add_argument("--worker", default="1", help="this worker's name: its persistent session's id")
    parser.add_argument("--group", default="floor-archive", help="shared-subscription group of the workers")
    parser.add_argument("--site", default="+", help="archive one site only (default: every site)")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds a gap may last before a re-fetch")


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    password = os.environ.get(args.password_env)
    if not password:
        print(f"floor archive: set the broker password in ${args.password_env}", file=sys.stderr)
        return 2
    try:
        tls = opts.tls_from_args(args)
    except opts.ClientConfigError as exc:
        print(f"floor archive: {exc}", file=sys.stderr)
        return 2
    cfg = ArchiveConfig(
        dsn=args.dsn,
        host=args.host,
        port=args.port if args.port is not None else default_port(tls),
        username=args.username,
        password=password,
        worker=args.worker,
        group=args.group,
        site=args.site,
        tls=tls,
        grace=args.grace,
    )
    worker = ArchiveWorker(cfg)
    signal.signal(signal.SIGTERM, lambda *_: worker.request_stop())  # systemd stop: unacked stays queued
    try:
        worker.run_forever()
    except KeyboardInterrupt:
        return 0
    except (psycopg.Error, TimeoutError, OSError) as exc:
        print(f"floor archive: {exc}", file=sys.stderr)
        return 1
    return 0
