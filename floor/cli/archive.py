"""``tablectl floor archive``: one archive worker (run several with distinct ``--worker`` names).

It says what it does (floor/archive/report.py): at start what it consumes and where it stores, then a line of figures
every ``--status-interval`` seconds; ``--status-file`` / ``--metrics-file`` get the same figures as JSON /
a Prometheus textfile. ``--quiet``: warnings and errors only; ``--verbose``: debug lines as well."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

import psycopg

from controller.config.endpoint import default_port
from controller.mqtt import client_options as opts
from controller.mqtt.replay import MAX_RANGE
from floor.archive.repair import CHUNK
from floor.archive.report import DEFAULT_INTERVAL_S, Reporter
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.cli.tablectl import add_dsn


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
    parser.add_argument(
        "--no-backup-check", dest="check_backups", action="store_false",
        help="raise no floor alerts of late or failed backups (a floor without WAL archiving)",
    )  # fmt: skip
    parser.add_argument(
        "--refetch-chunk", type=_chunk, default=CHUNK, metavar="IDS",
        help=f"event ids re-fetched at once over every table (default {CHUNK}): at most the number of"
        " messages the floor broker queues for one client, or most of a larger answer is dropped and asked for again",
    )  # fmt: skip
    parser.add_argument("--status-interval", type=_interval, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
                        help="a line of figures (and the status files) this often (default %(default)g)")  # fmt: skip
    parser.add_argument("--status-file", type=Path, help="write the figures here as JSON (atomically)")
    parser.add_argument(
        "--metrics-file", type=Path, help="write the figures here as a Prometheus textfile (*.prom)"
    )
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    talk.add_argument("-v", "--verbose", action="store_true", help="also each table's figures")


def _chunk(text: str) -> int:
    value = int(text)
    if not 10 <= value <= MAX_RANGE:
        raise argparse.ArgumentTypeError(f"between 10 and {MAX_RANGE} ids")
    return value


def _interval(text: str) -> float:
    value = float(text)
    if not 0.05 <= value <= 86_400:
        raise argparse.ArgumentTypeError("between 0.05 and 86400 seconds")
    return value


def main(args: argparse.Namespace) -> int:
    level = logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.verbose:  # the floor's own debug lines (each table's figures), not the libraries'
        logging.getLogger("floor").setLevel(logging.DEBUG)
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
        refetch_chunk=args.refetch_chunk,
        check_backups=args.check_backups,
    )
    worker = ArchiveWorker(cfg)
    reporter = Reporter(
        worker, args.status_interval, status_file=args.status_file, metrics_file=args.metrics_file
    )
    signal.signal(signal.SIGTERM, lambda *_: worker.request_stop())  # systemd stop: unacked stays queued
    reporter.start()
    try:
        worker.run_forever()
    except KeyboardInterrupt:
        return 0
    except (psycopg.Error, TimeoutError, OSError) as exc:
        print(f"floor archive: {exc}", file=sys.stderr)
        return 1
    finally:
        reporter.stop()  # the last figures, also in the status files
    return 0
