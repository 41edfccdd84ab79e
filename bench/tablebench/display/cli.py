"""`tablectl emulate-display`: an emulated jackpot sign on a pseudo-terminal.

Prints one JSON line ``{"pty": PATH, "link": LINK}`` on stdout, then logs every text the sign shows (stderr)
until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys

from tablebench.display.emulator import DisplayEmulator

# its line in `tablectl --help` (entry point tablectl.commands, bench/pyproject.toml)
HELP = "run the emulated jackpot display on a pseudo-terminal"


# `tablectl emulate-display --help`'s examples (controller/cli/examples.py shows them)
EXAMPLES = {
    ("emulate-display",): (
        ("tablectl emulate-display --link /tmp/tablectl-display", "a jackpot sign on a pseudo-terminal"),
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--link", help="also create this symlink to the pty (a stable path for configs)")


async def _run(link: str | None) -> int:
    emu = DisplayEmulator(link, on_show=lambda text: print(f"SHOW {text}", file=sys.stderr, flush=True))
    try:
        await emu.start()
    except OSError as exc:
        print(f"emulate-display: cannot create the pty or link {link}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"pty": emu.path, "link": link}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await emu.stop()
    return 0


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    return asyncio.run(_run(args.link))
