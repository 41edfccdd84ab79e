"""`tablectl journal verify --db PATH [--checkpoint FILE [--public-key HEX | --manifest FILE]]`,
`tablectl journal archive` (controller/journal/archive.py), `tablectl journal prune` (controller/journal/prune.py)
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
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

from controller.audit.keys import KeyFileError, load_key, public_key_from_manifest
from controller.journal.export import ExportError, export_session
from controller.journal.store import CHECKPOINT_KIND, Journal

SQLITE_HEADER = b"SQLite format 3\x00"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    verify = sub.add_parser("verify", help="walk the hash chain; exit 1 naming the first bad record")
    verify.add_argument("--db", required=True, help="journal database file")
    verify.add_argument(
        "--checkpoint",
        default=None,
        help="a signed checkpoint (JSON: the audit/checkpoint payload or its data)",
    )
    trust = verify.add_mutually_exclusive_group()
    trust.add_argument("--public-key", default=None, help="the table's audit public key (64 hex)")
    trust.add_argument("--manifest", default=None, help="integrity manifest holding audit_public_key")
    arch = sub.add_parser(
        "archive",
        help="copy the records up to a signed checkpoint into a new archive file and verify it (the live"
        " journal is only read)",
    )
    arch.add_argument("--db", required=True, help="journal database file")
    arch.add_argument("--to", required=True, help="the archive file to create (never overwritten)")
    arch.add_argument(
        "--before", type=int, default=None, help="archive up to the newest checkpoint at or before this seq"
    )
    arch_trust = arch.add_mutually_exclusive_group(required=True)
    arch_trust.add_argument("--public-key", default=None, help="the table's audit public key (64 hex)")
    arch_trust.add_argument("--manifest", default=None, help="integrity manifest holding audit_public_key")
    pr = sub.add_parser(
        "prune",
        help="delete the records an archive holds, up to a signed checkpoint (service stopped; see docs/security.md)",
    )
    pr.add_argument("--db", required=True, help="journal database file")
    pr.add_argument("--archive", required=True, help="the archive made by `tablectl journal archive`")
    pr.add_argument("--by", required=True, help="who prunes (recorded in the journal_pruned record)")
    pr.add_argument(
        "--key-file",
        required=True,
        help="the table's audit key ([audit] key_file, default <state_dir>/audit_key.pem): the prune is signed",
    )
    pr.add_argument(
        "--up-to", type=int, default=None, help="cut at this checkpoint record (default: the newest allowed)"
    )
    pr.add_argument(
        "--event-retention-days",
        type=int,
        default=None,
        help="the table's [journal] event_retention_days (default: the configuration's default)",
    )
    pr_trust = pr.add_mutually_exclusive_group(required=True)
    pr_trust.add_argument("--public-key", default=None, help="the table's audit public key (64 hex)")
    pr_trust.add_argument("--manifest", default=None, help="integrity manifest holding audit_public_key")
    export = sub.add_parser("export", help="a session's rounds as JSON lines for `tablectl replay`")
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
        return doc["data"]
    if not isinstance(doc, dict):
        raise ValueError(f"checkpoint {path}: expected a JSON object")
    return doc


def _trusted_key(args: argparse.Namespace) -> tuple[str | None, str]:
    if args.public_key:
        key = args.public_key.strip().lower()
        if not _HEX64.match(key):
            raise ValueError("--public-key: expected 64 hex digits (the raw Ed25519 public key)")
        return key, "the given public key"
    if args.manifest:
        key = public_key_from_manifest(args.manifest)
        if key is None:
            raise ValueError(f"manifest {args.manifest} records no audit_public_key")
        return key, f"the key in {args.manifest}"
    return None, ""


def _verify_checkpoint(journal: Journal, args: argparse.Namespace) -> int:
    try:
        checkpoint = read_checkpoint_file(args.checkpoint)
        key, source = _trusted_key(args)
    except ValueError as exc:
        print(f"journal verify: {exc}", file=sys.stderr)
        return 2
    result = journal.verify_against_checkpoint(checkpoint, key)
    seq = checkpoint.get("seq")
    if not result.ok:
        where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else f"checkpoint {seq}"
        print(f"journal BROKEN at {where}: {result.reason}", file=sys.stderr)
        return 1
    if key is None:
        print(
            "warning: checkpoint signature checked against its own key only; pass --public-key or --manifest"
            " to know the table signed it",
            file=sys.stderr,
        )
    trusted = f", signed by {source}" if key else ""
    print(f"journal ok: {result.records} records up to checkpoint {seq} match the signed head{trusted}")
    return 0


def _archive(args: argparse.Namespace) -> int:
    from controller.journal.archive import ArchiveError, archive

    try:
        key, source = _trusted_key(args)
    except ValueError as exc:
        print(f"journal archive: {exc}", file=sys.stderr)
        return 2
    assert key is not None  # the argument group is required
    try:
        done = archive(args.db, args.to, key, args.before)
    except ArchiveError as exc:
        print(f"journal archive: {exc}", file=sys.stderr)
        return 1
    print(
        f"archived: {done.records} records up to checkpoint record {done.checkpoint_seq} ({done.checkpoint_ts})"
        f" in {done.path}; chain and checkpoints verified, signed by {source}"
    )
    return 0


def _prune(args: argparse.Namespace) -> int:
    from controller.journal.prune import DEFAULT_EVENT_RETENTION_DAYS, PruneError, prune

    days = DEFAULT_EVENT_RETENTION_DAYS if args.event_retention_days is None else args.event_retention_days
    try:
        key, source = _trusted_key(args)
        if not 1 <= days <= 3650:
            raise ValueError("--event-retention-days: 1 to 3650")
        if not Path(args.archive).is_file():
            raise ValueError(f"--archive {args.archive}: no such file")
    except ValueError as exc:
        print(f"journal prune: {exc}", file=sys.stderr)
        return 2
    assert key is not None  # the argument group is required
    try:
        signing_key = load_key(args.key_file)
    except KeyFileError as exc:
        print(f"journal prune: {exc}", file=sys.stderr)
        return 2
    try:
        done = prune(
            args.db, args.archive, key, signing_key, by=args.by, up_to=args.up_to, event_retention_days=days
        )
    except PruneError as exc:
        print(f"journal prune: refused: {exc}", file=sys.stderr)
        return 1
    lowered = f" (not at the archive's end: {done.lowered_by})" if done.lowered_by else ""
    print(
        f"pruned: records {done.first_seq_before} to {done.anchor_seq - 1} deleted ({done.records_deleted} records,"
        f" {done.events_deleted} kept events, {done.snapshots_deleted} snapshots){lowered}; the journal starts at"
        f" checkpoint record {done.anchor_seq} (its anchor, signed by {source}); prune recorded as record"
        f" {done.record_seq}; archive sha256 {done.archive_sha256}; journal {done.bytes_before} -> {done.bytes_after}"
        " bytes"
    )
    return 0


def main(args: argparse.Namespace) -> int:
    if args.journal_command in ("archive", "prune"):
        checked = _open(args.db)  # missing or not a journal: exit 2
        if checked is None:
            return 2
        checked.close()
        return _archive(args) if args.journal_command == "archive" else _prune(args)
    journal = _open(args.db)
    if journal is None:
        return 2
    try:
        if args.journal_command == "verify":
            if args.checkpoint is not None:
                return _verify_checkpoint(journal, args)
            try:
                key, source = _trusted_key(args)
            except ValueError as exc:
                print(f"journal verify: {exc}", file=sys.stderr)
                return 2
            # With a trusted key every checkpoint record on the way must carry its signature: a rewrite with
            # recomputed hashes cannot re-sign them (without a key only the chain is checked).
            journal.audit_public_key = key
            result = journal.verify()
            if result.ok:
                signed = ""
                if key is not None:
                    n = sum(1 for _ in journal.records(kinds=(CHECKPOINT_KIND,)))
                    signed = f"; {n} checkpoint record(s) signed by {source}"
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
        print(f"exported {exported} round(s); {void} void round(s) skipped", file=sys.stderr)
        return 0
    finally:
        journal.close()
