"""`tablectl emulate-shoe`: run the emulated shuffler-shoe on a pseudo-terminal (docs/emulator.md).

Prints one JSON line on stdout once ready:
    {"device": "/dev/pts/N", "link": LINK, "control": SOCKET, "pid": N}
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import signal
import sys

from tablebench.emulator.control import ControlServer
from tablebench.emulator.device import EmulatedShoe
from tablebench.emulator.scenario import ScenarioError, load_scenario, parse_scenario

# its line in `tablectl --help` (entry point tablectl.commands, bench/pyproject.toml)
HELP = "run the emulated shuffler-shoe on a pseudo-terminal"

DEFAULT_LINK = "/tmp/tablectl-shoe"


# `tablectl emulate-shoe --help`'s examples (controller/cli/examples.py shows them)
EXAMPLES = {
    ("emulate-shoe",): (
        (
            "tablectl emulate-shoe --link /tmp/tablectl-shoe --seed 3",
            "a shoe on a pseudo-terminal, same cards each run",
        ),
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario", help="scenario file (.json or .toml); default: 6-deck continuous shuffler"
    )
    parser.add_argument(
        "--link", default=DEFAULT_LINK, help=f"symlink to the pty slave (default {DEFAULT_LINK})"
    )
    parser.add_argument("--control", help="control socket path (default: LINK.ctl)")
    parser.add_argument(
        "--seed",
        type=int,
        help="seed of the card order and line noise (overrides the scenario's); default: random",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")


async def _serve(shoe: EmulatedShoe, control: ControlServer) -> None:
    await shoe.start()
    await control.start()
    print(
        json.dumps(
            {"device": shoe.device_path, "link": shoe.link_path, "control": control.path, "pid": os.getpid()}
        ),
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await control.stop()
        await shoe.stop()


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        scenario = load_scenario(args.scenario) if args.scenario else parse_scenario({})
        if args.seed is not None:
            if args.seed < 0:
                raise ScenarioError(f"--seed: {args.seed} is not an integer >= 0")
            scenario = dataclasses.replace(scenario, seed=args.seed)
    except ScenarioError as exc:
        print(f"emulate-shoe: {exc}", file=sys.stderr)
        return 2
    shoe = EmulatedShoe(scenario, link_path=args.link)
    control = ControlServer(shoe, args.control or f"{args.link}.ctl")
    try:
        asyncio.run(_serve(shoe, control))
    except OSError as exc:
        print(f"emulate-shoe: {exc}", file=sys.stderr)
        return 1
    return 0
