"""`tablectl journal verify --db PATH` and `tablectl journal export --db PATH [--session ID] [--out FILE]`."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from controller.journal.export import ExportError, export_session
from controller.journal.store import Journal

SQLITE_HEADER = b"SQLite format 3\x00"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    verify = sub.add_parser("verify", help="walk the hash chain; exit 1 naming the first bad record")
    verify.add_argument("--db", required=True, help="journal database file")
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
    return Journal(db)


def main(args: argparse.Namespace) -> int:
    journal = _open(args.db)
    if journal is None:
        return 2
    try:
        if args.journal_command == "verify":
            result = journal.verify()
            if result.ok:
                print(f"journal ok: {result.records} records, hash chain intact")
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
