"""``tablectl floor migrate``: apply the versioned migrations (floor/migrations/)."""

from __future__ import annotations

import argparse
import sys

import psycopg

from floor.archive import store
from floor.cli.tablectl import add_dsn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dsn(parser)


def main(args: argparse.Namespace) -> int:
    try:
        with store.connect(args.dsn) as conn:
            applied = store.migrate(conn)
            version = store.schema_version(conn)
    except (psycopg.Error, store.MigrationError) as exc:
        print(f"floor migrate: {exc}", file=sys.stderr)
        return 1
    print(f"schema version {version}; applied now: {applied or 'nothing'}")
    return 0
