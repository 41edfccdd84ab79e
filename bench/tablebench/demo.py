"""`tablectl demo`: a whole table on this machine in one command (the README's first command).

It starts a :class:`tablebench.stack.Stack` (embedded mosquitto on a free port, the emulated shuffler-shoe
and jackpot display on pseudo-terminals, the real service process), prepares a session the way a chief
inspector does (PT-2001 r.53-54: the shoe is emptied, the table opened by the demo supervisor alice/123456, the
cards loaded in two packets, the lid closed), then starts the pit terminal connected to it. In the terminal
the key ``c`` makes the emulated shoe deal the next card (its ``draw`` control op): it stands in for the
dealer pulling a card out of the shoe. ``--auto N`` runs a scripted dealer instead (no terminal) and prints
every card and settlement as it arrives over MQTT. Everything is stopped on exit. ``--floor`` starts a floor
instead (tables bridged to a floor broker, archive, PostgreSQL, dashboard: floor_demo.py).

This module is the command (its options and what it starts); the session it prepares is demo_session.py, the
pit terminal's connection demo_terminal.py, the scripted dealer demo_dealer.py, its printed lines
demo_lines.py."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from tablebench import floor_console, floor_demo
from tablebench.demo_dealer import auto_dealer
from tablebench.demo_session import DemoError, Out, prepare_session
from tablebench.demo_terminal import floor_console_line, terminal_connection
from tablebench.stack import ROOT, Stack, StackOptions

# its line in `tablectl --help` (entry point tablectl.commands, bench/pyproject.toml)
HELP = "run the demo: emulated shoe + controller + broker + pit terminal (--floor: a whole floor)"

PROFILES_DIR = ROOT / "firmware_configs" / "profiles"


def profile_facts(name: str) -> tuple[int, list[str]]:
    """(minimum bet in minor units, allowed shufflers) of a rule profile file."""
    path = PROFILES_DIR / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.toml")))
        raise DemoError(f"unknown profile {name!r} (known: {known})")
    from controller.rules.profiles import ProfileError, load_profile  # the one profile parser

    try:
        profile = load_profile(str(path))
    except ProfileError as exc:
        raise DemoError(f"rule profile {name!r}: {exc}") from None
    return profile.min_bet, list(profile.shoe.shufflers)


# `tablectl demo --help`'s examples (controller/cli/examples.py shows them)
EXAMPLES = {
    ("demo",): (
        ("tablectl demo", "a table with its pit terminal: deal with c, decide with the keys it names"),
        ("tablectl demo --auto 3", "three rounds dealt and settled by a scripted dealer, no terminal"),
        (
            "tablectl demo --floor --tables 2 --rounds 5",
            "a floor of two tables, archived, with the dashboard",
        ),
    ),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile", default="pt-2001", help="rule profile (one that allows a continuous shuffler)"
    )
    p.add_argument("--auto", type=int, metavar="N", help="no terminal: a scripted dealer plays N rounds")
    p.add_argument("--workdir", help="keep the broker, shoe, journal and logs here (default: a temp dir)")
    p.add_argument(
        "--shoe",
        choices=("continuous", "batch"),
        default="continuous",
        help="continuous shuffler (lid cycle each round) or a batch shoe with a cut card and a warning card",
    )
    p.add_argument(
        "--seed", type=int, help="the emulated shoe's card order repeats with this seed (default: random)"
    )
    floor_demo.add_arguments(p)
    p.add_argument(
        "console", nargs=argparse.REMAINDER, metavar="fault|clear|enrol ...",
        help="--workdir W of a running floor demo: fault T2 jam|damaged|lid, clear T2, enrol --user U --role R "
        "--public-key HEX (floor_console.py; the floor demo prints them)",
    )  # fmt: skip


def main(args: argparse.Namespace) -> int:
    if args.console:  # a console command for a running floor demo: tablebench/floor_console.py
        return floor_console.main(args.workdir, args.console)
    rounds = args.auto
    if rounds is None and not sys.stdout.isatty():
        rounds = 3  # headless: a terminal UI makes no sense, play three rounds and print them
    if rounds is not None and rounds < 1:
        print(f"demo: --auto needs a positive number of rounds, got {rounds}", file=sys.stderr)
        return 2
    try:
        min_bet, shufflers = profile_facts(args.profile)
    except DemoError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    if args.floor:  # tables bridged to a floor: tablebench/floor_demo.py
        if args.shoe != "continuous" or "continuous" not in shufflers:
            print("demo: --floor deals with the emulated continuous shuffler (profiles pt-2001, mo-2004)",
                  file=sys.stderr)  # fmt: skip
            return 2
        return floor_demo.main(args, min_bet)
    if args.shoe == "continuous" and "continuous" not in shufflers:
        print(f"demo: profile {args.profile} does not allow the emulated continuous shuffler "
              f"(it allows: {', '.join(shufflers)}); try pt-2001 or mo-2004", file=sys.stderr)  # fmt: skip
        return 2
    if args.workdir is not None and Path(args.workdir).exists() and not Path(args.workdir).is_dir():
        print(f"demo: --workdir {args.workdir} is not a directory", file=sys.stderr)
        return 2
    temp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="tablectl-demo-") if temp else args.workdir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops every process
    from controller.rules.profiles import load_profile

    decks = load_profile(args.profile).decks
    # The machine starts empty: the session begins with the loading (PT-2001 r.53-54), cards numbered from 1.
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)  # random order unless --seed
    scenario: dict[str, Any] = {"kind": "continuous", "decks": decks, "seed": seed, "start_empty": True}
    if (
        args.shoe == "batch"
    ):  # a full shoe, shuffled then cut; the warning card 50 from the end (PT-2001 r.8-11)
        scenario = {"kind": "batch", "decks": decks, "seed": seed,
                    "batch": {"warning_from_end": 50, "cut_from_end": 10}}  # fmt: skip
    stack = Stack(workdir, StackOptions(profile=args.profile, scenario=scenario))
    out = _printer()
    try:
        stack.start()
        out(f"demo: broker 127.0.0.1:{stack.port}, table {stack.prefix}, workdir {workdir}")
        out(f"demo: floor alert console (another terminal): {floor_console_line(stack)}")
        out(f"demo: card order seed {seed} (--seed {seed} deals the same cards again)")
        asyncio.run(prepare_session(stack, args.profile, out, shoe=args.shoe))
        if rounds is not None:
            return asyncio.run(auto_dealer(stack, rounds, min_bet, out, shoe=args.shoe))
        from controller.terminal.pit import PitApp

        PitApp(terminal_connection(stack, args.profile)).run()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a demo that cannot go on says why, with the controller's last words
        print(
            f"demo: {type(exc).__name__}: {exc}\n--- controller log ---\n{stack.controller_log(20)}",
            file=sys.stderr,
        )
        return 1
    finally:
        stack.stop()
        if temp:
            shutil.rmtree(workdir, ignore_errors=True)


def _printer() -> Out:
    def out(line: str) -> None:
        print(line, flush=True)

    return out
