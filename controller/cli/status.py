"""`tablectl status`: what the running service last reported (docs/deploy.md §8 "Operating a table").

Exit codes (docs/cli.md): 0 the service runs; 1 it does not (no status yet, or a stale one); 2 usage or a missing
configuration file; 3 a configuration that cannot be read."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from controller.ops import status as st


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="/etc/tablectl/table.toml", help="table configuration (TOML)")
    parser.add_argument(
        "--state-dir", help="the service's state directory (default: the one the table's configuration names)"
    )
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the status document as JSON")
    fmt.add_argument("--prometheus", action="store_true", help="print Prometheus text exposition format")


def _status_dirs(args: argparse.Namespace) -> list[Path] | int:
    """Where to look: ``--state-dir``; else the unit's runtime directory (readable without the configuration's
    group) and the configured state directory (demo, bench), the fresher status of the two."""
    if args.state_dir:
        return [Path(args.state_dir)]
    dirs = [st.SYSTEMD_RUNTIME_DIR] if (st.SYSTEMD_RUNTIME_DIR / st.STATUS_FILE).is_file() else []
    try:
        found = Path(args.config).is_file()
    except OSError:
        found = False
    if not found:
        if dirs:
            return dirs
        print(f"status: configuration file not found: {args.config}", file=sys.stderr)
        return 2
    from controller.config.load import load_config

    try:
        return [*dirs, Path(load_config(args.config, check_files=False).table.state_dir)]
    except Exception as exc:
        if dirs:  # e.g. /etc/tablectl not readable by this operator: the runtime directory's status will do
            return dirs
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"status: bad configuration: {first}", file=sys.stderr)
        return 3


def _read_freshest(dirs: list[Path]) -> st.Status:
    """The newest status document among ``dirs`` (the first one's error if none can be read)."""
    found: list[st.Status] = []
    first_error: Exception | None = None
    for d in dirs:
        try:
            found.append(st.read(d))
        except (OSError, ValueError) as exc:
            first_error = first_error or exc
    if not found:
        assert first_error is not None
        raise first_error
    return max(found, key=lambda s: s.written_at)


def running(status: st.Status, now: float) -> bool:
    """Fresh, and its process still exists (a service stopped a moment ago is not running)."""
    if st.stale(status, now):
        return False
    try:
        os.kill(status.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return True


def main(args: argparse.Namespace) -> int:
    dirs = _status_dirs(args)
    if isinstance(dirs, int):
        return dirs
    where = " or ".join(str(d) for d in dirs)
    try:
        status = _read_freshest(dirs)
    except FileNotFoundError:
        print(f"status: service not running (no status in {where})", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"status: cannot read the status in {where}: {exc}", file=sys.stderr)
        return 1
    now = time.time()
    up = running(status, now)
    if args.json:
        print(status.to_json())
    elif args.prometheus:
        print(st.prometheus(status, now if up else status.written_at + st.STALE_AFTER_S + 1), end="")
    else:
        text = st.human(status, now)
        if not up and not st.stale(status, now):
            text = text.replace(f"up {status.uptime_s:.0f} s", f"NOT RUNNING (pid {status.pid} is gone)")
        print(text, end="")
    return 0 if up else 1
