"""``tablectl config``: check a table configuration, record its integrity manifest, verify against one.

    tablectl config check FILE [--no-file-check]   validate; print one digest line per file and a combined one
    tablectl config record FILE --manifest OUT       validate and write the manifest
    tablectl config verify FILE --manifest M         exit 0 only if every digest matches the manifest

Exit status: 0 good, 1 bad configuration or mismatch (reasons on stderr), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from controller.config.errors import ConfigError
from controller.config.integrity import combined_digest, compute_digests, digest_files, verify
from controller.config.load import load_config
from controller.ops.manifest import write_manifest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", metavar="ACTION")
    check = sub.add_parser("check", help="validate a table configuration and print its digests")
    check.add_argument("file", help="table configuration (TOML)")
    check.add_argument(
        "--no-file-check",
        action="store_true",
        help="do not require the credentials, password and TLS files to exist (checking on a workstation)",
    )
    record = sub.add_parser("record", help="validate and write the integrity manifest")
    record.add_argument("file", help="table configuration (TOML)")
    record.add_argument("--manifest", required=True, help="manifest to write (JSON)")
    record.add_argument("--no-file-check", action="store_true", help="as for check")
    ver = sub.add_parser("verify", help="compare the files' digests with a recorded manifest")
    ver.add_argument("file", help="table configuration (TOML)")
    ver.add_argument("--manifest", required=True, help="recorded manifest (JSON)")


def _print_digests(file: str) -> None:
    files = digest_files(file)
    digests = compute_digests(file)
    for role in sorted(files):
        print(f"{digests[role]}  {role:<16} {files[role]}")
    print(f"{combined_digest(digests)}  combined")


def main(args: argparse.Namespace) -> int:
    action = getattr(args, "config_command", None)
    if action is None:
        print("tablectl config: choose an action: check, record or verify", file=sys.stderr)
        return 2
    if not Path(args.file).is_file():  # a missing input file is a usage error (docs/cli.md: exit 2)
        print(f"tablectl config {action}: {args.file}: no such file", file=sys.stderr)
        return 2
    try:
        if action in ("check", "record"):
            load_config(args.file, check_files=not args.no_file_check)
        if action == "check":
            _print_digests(args.file)
            return 0
        if action == "record":
            manifest = write_manifest(args.file, args.manifest)
            count = len(manifest["files"])
            print(f"recorded {count} digests in {args.manifest}; combined {manifest['combined']}")
            return 0
        mismatches = verify(args.file, args.manifest)
    except ConfigError as exc:
        print(f"configuration refused:\n{exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # e.g. the manifest's folder is not writable
        print(f"tablectl config {action}: {exc}", file=sys.stderr)
        return 1
    if mismatches:
        print("integrity check FAILED; the table must not open:", file=sys.stderr)
        for line in mismatches:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"integrity OK: {args.file} matches {args.manifest}")
    return 0
