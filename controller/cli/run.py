"""`tablectl run`: the table controller service (controller/service/table_service.py) from its configuration
file, as systemd starts it; exit 2 a bad configuration, 3 the service cannot start (docs/cli.md)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from controller.config import ConfigError, TableConfig, load_config
from controller.service.errors import OptionsError, StartupError
from controller.service.table_service import TableService


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Everything comes from the configuration file (hashed and pinned by the session: docs/security.md); the
    command line has no override of it."""
    parser.add_argument("--config", required=True, help="table configuration (TOML)")
    parser.add_argument(
        "--metrics-file",
        help="also write the status as a Prometheus textfile (for the node exporter's textfile collector)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every detail (debug messages too)")


def main(args: argparse.Namespace, build: Callable[[TableConfig], TableService] = TableService) -> int:
    """`tablectl run`; ``build`` makes the service from the loaded configuration (the bench's launcher adds its
    control socket: tablebench/service.py). Errors are one line on stderr: 2 a bad configuration (or options
    that do not fit it: ``build`` raises OptionsError), 3 the service cannot start (docs/cli.md)."""
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("transitions").setLevel(logging.WARNING)  # the library's per-state chatter: not at INFO
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"tablectl run: bad configuration: {exc}", file=sys.stderr)
        return 2
    try:
        service = build(config)
        service.status_writer.metrics_file = Path(args.metrics_file) if args.metrics_file else None
        asyncio.run(service.run_forever())
    except OptionsError as exc:
        print(exc, file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"tablectl run: {exc}", file=sys.stderr, flush=True)
        return 3
    return 0
