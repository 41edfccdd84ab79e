"""`tablectl journal verify (--db PATH | --config TABLE.toml [--db PATH]) [--checkpoint FILE]
[--public-key HEX | --manifest FILE]`,
`tablectl journal archive` and `tablectl journal prune` (their options and reports: controller/cli/journal_retention.py)
and `tablectl journal export --db PATH [--session ID] [--out FILE]`.

Without a checkpoint, verify walks the hash chain: it finds a record changed, inserted or deleted in place, but
not a journal truncated, emptied or rewritten with recomputed hashes; given the table's key (--public-key or
--manifest) it also checks every checkpoint record's signature and signed head on the way, so a rewrite before
the last checkpoint record is found. With a checkpoint saved from
``<prefix>/audit/checkpoint`` (the MQTT payload as received, or only its ``data``) it also checks that the
record the checkpoint names carries the hash the table signed, and that the table's key signed it (the key given
with --public-key, or the ``audit_public_key`` of an integrity manifest)."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.cli.journal_retention import (
    Settings,
    add_archive_arguments,
    add_prune_arguments,
    archive_main,
    prune_main,
    settings,
    table_config,
    verify_target,
)
from controller.journal.cadence import missing_checkpoint
from controller.journal.checkpointer import INTERVAL_S
from controller.journal.export import ExportError, export_session
from controller.journal.store import CHECKPOINT_KIND, Journal
from controller.journal.trusted_key import TrustedKey
from controller.words import count

SQLITE_HEADER = b"SQLite format 3\x00"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    verify = sub.add_parser("verify", help="walk the hash chain; exit 1 naming the first bad record")
    verify.add_argument(
        "--config",
        default=None,
        help="the table's configuration (TOML): its journal (unless --db names another file, e.g. an archive)"
        " and its audit public key",
    )
    verify.add_argument("--db", default=None, help="journal database file; required without --config")
    verify.add_argument(
        "--checkpoint",
        default=None,
        help="a signed checkpoint (JSON: the audit/checkpoint payload or its data)",
    )
    trust = verify.add_mutually_exclusive_group()
    trust.add_argument("--public-key", default=None, help="the table's audit public key (64 hex)")
    trust.add_argument(
        "--manifest", default=None, help="the table's integrity manifest (it holds the audit public key)"
    )
    add_archive_arguments(sub)
    add_prune_arguments(sub)
    export = sub.add_parser("export", help="a session's rounds as JSON lines, for tablectl replay")
    export.add_argument("--db", required=True, help="journal database file")
    export.add_argument("--session", default=None, help="session id (default: the latest session)")
    export.add_argument("--out", default=None, help="output file (default: stdout)")


def _open(db: str) -> Journal | None:
    """The journal at ``db``, or None (reason printed) when the file is missing or is not a table journal: an
    inspection never creates or converts a file."""
    path = Path(db)
    if not path.is_file():
        print(f"journal: {db}: no such file", file=sys.stderr)
        return None
    with path.open("rb") as fh:
        header = fh.read(16)
    if header != SQLITE_HEADER:
        what = "an empty file" if not header else "not an SQLite database"
        print(f"journal: {db}: {what}, not a table journal", file=sys.stderr)
        return None
    try:
        ro = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = ro.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'"
            ).fetchone()
        finally:
            ro.close()
    except sqlite3.Error as exc:
        print(f"journal: {db}: cannot be read: {exc}", file=sys.stderr)
        return None
    if not found:
        print(f"journal: {db}: an SQLite database without a journal (no records table)", file=sys.stderr)
        return None
    try:  # an inspection changes nothing in the file (an archive keeps the SHA-256 a prune recorded)
        return Journal.read_only(db)
    except sqlite3.Error as exc:
        print(f"journal: {db}: cannot be read: {exc}", file=sys.stderr)
        return None


def read_checkpoint_file(path: str) -> dict[str, Any]:
    """The checkpoint dict from a file holding the MQTT envelope or the bare checkpoint. ValueError says why."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"checkpoint {path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"checkpoint {path}: not JSON: {exc}") from None
    if isinstance(doc, dict) and doc.get("type") == "checkpoint" and isinstance(doc.get("data"), dict):
        data: dict[str, Any] = doc["data"]
        return data
    if not isinstance(doc, dict):
        raise ValueError(f"checkpoint {path}: expected a JSON object")
    return doc


def _interval(args: argparse.Namespace) -> float:
    """The table's checkpoint cadence: ``[audit] checkpoint_interval_s`` with --config, else the default."""
    if args.config is None:
        return INTERVAL_S
    audit = table_config(args.config).audit
    return float(audit.checkpoint_interval_s) if audit else INTERVAL_S


def _cadence_broken(journal: Journal, args: argparse.Namespace, after_seq: int = 0) -> bool:
    """Checkpoint records the journal's own rules require (round ends, the cadence) are there; else say where
    (issue 27 §4: deleting them all and recomputing the chain must not pass a verification with the key)."""
    missing = missing_checkpoint(journal.records(after_seq=after_seq), _interval(args))
    if missing is None:
        return False
    print(f"journal BROKEN at record {missing.seq}: {missing.reason}", file=sys.stderr)
    return True


def _verify_checkpoint(journal: Journal, args: argparse.Namespace, trusted: TrustedKey | None) -> int:
    try:
        checkpoint = read_checkpoint_file(args.checkpoint)
    except ValueError as exc:
        print(f"journal verify: {exc}", file=sys.stderr)
        return 2
    key = trusted.hex if trusted else None
    result = journal.verify_against_checkpoint(checkpoint, key)
    seq = checkpoint.get("seq")
    if not result.ok:
        where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else f"checkpoint {seq}"
        print(f"journal BROKEN at {where}: {result.reason}", file=sys.stderr)
        return 1
    # the records after the checkpoint: still the chain (and, with the key, every checkpoint record on the way)
    journal.audit_public_key = key
    head = journal.verify_after(int(seq)) if isinstance(seq, int) else None
    if head is not None and not head.ok:
        print(
            f"journal BROKEN at record {head.first_bad_seq} (after checkpoint {seq}): {head.reason}",
            file=sys.stderr,
        )
        return 1
    if key is not None and _cadence_broken(journal, args):
        return 1
    if key is None:
        print(
            "warning: checkpoint signature checked against its own key only; pass --public-key or --manifest"
            " to know the table signed it",
            file=sys.stderr,
        )
    signed = f", signed by {trusted.source}" if trusted else ""
    after = head.records if head is not None else 0
    print(
        f"journal ok: {result.records} records up to checkpoint {seq} match the signed head{signed}; "
        f"{count(after, 'record')} after it chain to it (not covered by this checkpoint)"
    )
    return 0


# archive and prune (controller/cli/journal_retention.py): the journal they work on is checked here first
RETENTION: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "archive": archive_main,
    "prune": prune_main,
}


def _retention(args: argparse.Namespace) -> int:
    """`journal archive` / `journal prune`: options (or --config) resolved, the journal checked, then run."""
    try:
        chosen = settings(args, prune=args.journal_command == "prune")
    except ValueError as exc:
        print(f"journal {args.journal_command}: {exc}", file=sys.stderr)
        return 2
    checked = _open(chosen.db)  # missing or not a journal: exit 2
    if checked is None:
        return 2
    checked.close()
    return RETENTION[args.journal_command](args, chosen)


def main(args: argparse.Namespace) -> int:
    if args.journal_command in RETENTION:
        return _retention(args)
    trusted: TrustedKey | None = None
    db = args.db
    if args.journal_command == "verify":
        try:
            db, trusted = verify_target(args)
        except ValueError as exc:
            print(f"journal verify: {exc}", file=sys.stderr)
            return 2
    journal = _open(db)
    if journal is None:
        return 2
    try:
        if args.journal_command == "verify":
            if args.checkpoint is not None:
                return _verify_checkpoint(journal, args, trusted)
            # With a trusted key every checkpoint record on the way must carry its signature: a rewrite with
            # recomputed hashes cannot re-sign them (without a key only the chain is checked).
            key = trusted.hex if trusted else None
            journal.audit_public_key = key
            result = journal.verify()
            if result.ok and key is not None and _cadence_broken(journal, args):
                return 1
            if result.ok:
                signed = ""
                if trusted is not None:
                    n = sum(1 for _ in journal.records(kinds=(CHECKPOINT_KIND,)))
                    signed = f"; {count(n, 'checkpoint record')} signed by {trusted.source}"
                anchor = ""
                if result.from_seq:
                    anchor = (
                        f" from its anchor, checkpoint record {result.from_seq + 1} (records before it pruned:"
                        " see the journal archive)"
                    )
                print(f"journal ok: {result.records} records, hash chain intact{anchor}{signed}")
                if result.from_seq and key is None:
                    print(
                        "warning: the anchor's signature was not checked; pass --public-key or --manifest",
                        file=sys.stderr,
                    )
                return 0
            print(f"journal BROKEN at record {result.first_bad_seq}: {result.reason}", file=sys.stderr)
            return 1
        try:
            if args.out:
                with open(args.out, "w", encoding="utf-8") as out:
                    exported, void = export_session(journal, out, args.session)
            else:
                exported, void = export_session(journal, sys.stdout, args.session)
        except ExportError as exc:
            print(f"journal export: {exc}", file=sys.stderr)
            return 1
        print(f"exported {count(exported, 'round')}; {count(void, 'void round')} skipped", file=sys.stderr)
        return 0
    finally:
        journal.close()
