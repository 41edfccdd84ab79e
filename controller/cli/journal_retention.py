"""`tablectl journal archive` (controller/journal/archive.py) and `tablectl journal prune`
(controller/ops/prune.py): their options and their one-line reports.

With ``--config`` (the table's TOML, as `tablectl run --config`) the journal, the audit key file, the trusted
public key and ``[journal] event_retention_days`` come from the configuration (controller/journal/table_files.py,
controller/journal/trusted_key.py); an option given as well must agree with it (``--event-retention-days`` may
only be longer: it keeps more), else exit 2 naming both. Without ``--config`` the options are required one by
one. Exit 2: usage (a missing or contradicting option, a bad configuration, a missing journal); 1: refused."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from controller.audit.keys import KeyFileError, load_key
from controller.journal.table_files import audit_key_file, journal_file
from controller.journal.trusted_key import TrustedKey, configured_key, given_key

if (
    TYPE_CHECKING
):  # the configuration (its package: the rules, the schema) is imported by the commands that read one
    from controller.config.model import TableConfig


@dataclass(frozen=True, slots=True)
class Settings:
    """What an archive or a prune works on, from the options and the configuration."""

    db: str
    key: TrustedKey
    key_file: str  # "" for an archive (it signs nothing)
    event_retention_days: int


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=None,
        help="the table's configuration (TOML, as tablectl run --config takes it): the journal, the audit key, the"
        " trusted public key (and the event retention) default to the table's own",
    )


def _add_trust(parser: argparse.ArgumentParser) -> None:
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument("--public-key", default=None, help="the table's audit public key (64 hex)")
    trust.add_argument(
        "--manifest",
        default=None,
        help="the table's integrity manifest, holding its audit public key "
        "(this or --public-key: required without --config)",
    )


def add_archive_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    arch = sub.add_parser(
        "archive",
        help="copy the records up to a signed checkpoint into a new archive file and verify it (the live"
        " journal is only read)",
    )
    _add_config(arch)
    arch.add_argument("--db", default=None, help="journal database file; required without --config")
    arch.add_argument("--to", required=True, help="the archive file to create (never overwritten)")
    arch.add_argument(
        "--before", type=int, default=None, help="archive up to the newest checkpoint at or before this seq"
    )
    _add_trust(arch)


def add_prune_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pr = sub.add_parser(
        "prune",
        help="delete the records an archive holds, up to a signed checkpoint (service stopped; see docs/security.md)",
    )
    _add_config(pr)
    pr.add_argument("--db", default=None, help="journal database file; required without --config")
    pr.add_argument("--archive", required=True, help="the archive made by tablectl journal archive")
    pr.add_argument("--by", required=True, help="who prunes (recorded in the journal with the prune)")
    pr.add_argument(
        "--key-file",
        default=None,
        help="the table's audit key (the configuration's audit key file, by default audit_key.pem in the "
        "state directory): the prune is signed;"
        " required without --config",
    )
    pr.add_argument(
        "--up-to", type=int, default=None, help="cut at this checkpoint record (default: the newest allowed)"
    )
    pr.add_argument(
        "--event-retention-days",
        type=int,
        default=None,
        help="days the events are kept, as the table's configuration says (event retention days; "
        "default: with --config the table's, without it the"
        " configuration's default); with --config it may only be longer",
    )
    _add_trust(pr)


def _same_file(given: str, configured: Path) -> bool:
    return os.path.realpath(given) == os.path.realpath(configured)


def _from_options(args: argparse.Namespace, given_days: int | None, *, prune: bool) -> Settings:
    """Without --config: every option as today (ValueError names the missing ones)."""
    from controller.ops.prune import DEFAULT_EVENT_RETENTION_DAYS

    key = given_key(args.public_key, args.manifest)
    missing = [
        name
        for name, absent in (
            ("--db", args.db is None),
            ("--key-file", prune and args.key_file is None),
            ("one of --public-key/--manifest", key is None),
        )
        if absent
    ]
    if missing or key is None:
        raise ValueError(f"missing {', '.join(missing)} (or --config: the table's configuration gives them)")
    return Settings(
        db=args.db,
        key=key,
        key_file=args.key_file if prune else "",
        event_retention_days=DEFAULT_EVENT_RETENTION_DAYS if given_days is None else given_days,
    )


def _tables_key(config: TableConfig, given: TrustedKey | None) -> TrustedKey:
    """The table's key from its configuration; a key given as well must be that one (ValueError names both)."""
    key = configured_key(config)
    if given is not None and given.hex != key.hex:
        raise ValueError(
            f"{given.source} ({given.hex}) is not the table's: {key.source} ({key.hex}), from the configuration"
            f" {config.path}"
        )
    return key


def _from_config(
    args: argparse.Namespace, config: TableConfig, given_days: int | None, *, prune: bool
) -> Settings:
    """With --config: the table's own; an option given too must agree (ValueError names both)."""
    where = f"the configuration {config.path}"
    db = journal_file(config.table.state_dir)
    if args.db is not None and not _same_file(args.db, db):
        raise ValueError(f"--db {args.db} is not the table's journal {db} ({where})")
    key = _tables_key(config, given_key(args.public_key, args.manifest))
    key_file = audit_key_file(config)
    if prune and args.key_file is not None and not _same_file(args.key_file, key_file):
        raise ValueError(f"--key-file {args.key_file} is not the table's audit key {key_file} ({where})")
    days = config.journal.event_retention_days
    if given_days is not None and given_days < days:
        raise ValueError(
            f"--event-retention-days {given_days} is below [journal] event_retention_days {days} of {where}:"
            " the prune could delete kept events cmd/replay must still serve"
        )
    return Settings(
        db=str(db),
        key=key,
        key_file=str(key_file) if prune else "",
        event_retention_days=days if given_days is None else given_days,
    )


def settings(args: argparse.Namespace, *, prune: bool) -> Settings:
    """The journal, key and retention to work on. ValueError: one line saying what to fix (exit 2)."""
    given_days = args.event_retention_days if prune else None  # archive has no such option
    if given_days is not None and not 1 <= given_days <= 3650:
        raise ValueError("--event-retention-days: 1 to 3650")
    if args.config is None:
        return _from_options(args, given_days, prune=prune)
    return _from_config(args, table_config(args.config), given_days, prune=prune)


def table_config(path: str) -> TableConfig:
    """The table's configuration for a journal command; ValueError: one line, its first problem (`tablectl
    config check` lists them all)."""
    from controller.config.errors import ConfigError
    from controller.config.load import load_config
    from controller.paste import command

    try:
        return load_config(path, check_files=False)
    except ConfigError as exc:
        more = len(exc.problems) - 1
        also = f" (and {more} more: {command('config', 'check', path)})" if more else ""
        raise ValueError(f"bad configuration: {exc.problems[0]}{also}") from None


def verify_target(args: argparse.Namespace) -> tuple[str, TrustedKey | None]:
    """`journal verify`: the file (``--db``, with --config by default the table's journal; another file, such
    as an archive, may be named) and the key to trust (with --config the table's; a key given as well must be
    the same). ValueError: one line (exit 2)."""
    given = given_key(args.public_key, args.manifest)
    if args.config is None:
        if args.db is None:
            raise ValueError(
                "missing --db (or --config: the table's configuration gives the journal and key)"
            )
        return args.db, given
    config = table_config(args.config)
    return (args.db or str(journal_file(config.table.state_dir))), _tables_key(config, given)


def archive_main(args: argparse.Namespace, chosen: Settings) -> int:
    from controller.journal.archive import ArchiveError, archive

    try:
        made = archive(chosen.db, args.to, chosen.key.hex, args.before)
    except ArchiveError as exc:
        print(f"journal archive: {exc}", file=sys.stderr)
        return 1
    print(
        f"archived: {made.records} records up to checkpoint record {made.checkpoint_seq} ({made.checkpoint_ts})"
        f" in {made.path}; chain and checkpoints verified, signed by {chosen.key.source}"
    )
    return 0


def prune_main(args: argparse.Namespace, chosen: Settings) -> int:
    from controller.ops.prune import PruneError, prune

    if not Path(args.archive).is_file():
        print(f"journal prune: --archive {args.archive}: no such file", file=sys.stderr)
        return 2
    try:
        signing_key = load_key(chosen.key_file)
    except KeyFileError as exc:
        print(f"journal prune: {exc}", file=sys.stderr)
        return 2
    try:
        done = prune(
            chosen.db,
            args.archive,
            chosen.key.hex,
            signing_key,
            by=args.by,
            up_to=args.up_to,
            event_retention_days=chosen.event_retention_days,
        )
    except PruneError as exc:
        print(f"journal prune: refused: {exc}", file=sys.stderr)
        return 1
    lowered = f" (not at the archive's end: {done.lowered_by})" if done.lowered_by else ""
    print(
        f"pruned: records {done.first_seq_before} to {done.anchor_seq - 1} deleted ({done.records_deleted} records,"
        f" {done.events_deleted} kept events, {done.snapshots_deleted} snapshots){lowered}; the journal starts at"
        f" checkpoint record {done.anchor_seq} (its anchor, signed by {chosen.key.source}); prune recorded as record"
        f" {done.record_seq}; archive sha256 {done.archive_sha256}; journal {done.bytes_before} -> {done.bytes_after}"
        " bytes"
    )
    return 0
