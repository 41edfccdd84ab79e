"""`tablectl demo --floor` (`./scripts/demo --floor`): a casino floor in one command (docs/floor.md).

It starts a :class:`tablebench.floor_stack.FloorStack` (N emulated tables, each on its own broker bridged to a
floor broker; a private PostgreSQL; archive workers; the dashboard), prints the dashboard's URL and login, opens
every table the way a chief inspector does (demo_session.py) and deals on all of them with scripted dealers
(demo_dealer.py), one line per round, until stopped: Ctrl-C (SIGINT) or SIGTERM stops everything it started.
``--rounds N`` deals N rounds on each table, waits until the archive holds all of them, and stops."""

from __future__ import annotations

import argparse
import asyncio
import functools
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType

from controller.paste import command
from controller.words import count
from tablebench.demo_dealer import auto_dealer
from tablebench.demo_session import DemoError, Out, prepare_session
from tablebench.floor_stack import SITE, FloorOptions, FloorStack
from tablebench.stack import Stack

MAX_TABLES = 8
ARCHIVED_WAIT = 60.0  # bound on the archive catching up after the last round (not a timing check)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--floor", action="store_true", help="a floor: tables bridged to a floor broker, archive, "
                   "PostgreSQL and dashboard (docs/floor.md)")  # fmt: skip
    p.add_argument("--tables", type=int, default=3, metavar="N", help="--floor: how many tables (default 3)")
    p.add_argument("--rounds", type=int, metavar="N", help="--floor: N rounds a table, archived, then stop")


def main(args: argparse.Namespace, min_bet: int) -> int:
    if not 1 <= args.tables <= MAX_TABLES:
        print(f"demo: --tables must be 1..{MAX_TABLES}, got {args.tables}", file=sys.stderr)
        return 2
    if args.rounds is not None and args.rounds < 1:
        print(f"demo: --rounds needs a positive number of rounds, got {args.rounds}", file=sys.stderr)
        return 2
    temp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="tablectl-floor-demo-") if temp else args.workdir)
    # Ctrl-C and SIGTERM stop it at once (not asyncio's cancel-first handler, whose clean-up can end in another
    # error); a terminal's Ctrl-C also reaches the children, so a table may fail first: still a stop, not an error
    stopping = threading.Event()

    def interrupt(signum: int, frame: FrameType | None) -> None:
        stopping.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)  # table i deals with seed + i
    floor = FloorStack(workdir, FloorOptions(tables=args.tables, profile=args.profile, seed=seed))
    out: Out = functools.partial(print, flush=True)
    try:
        out(f"floor demo: starting {args.tables} tables, the floor broker, PostgreSQL, archive and dashboard")
        floor.start()
        _introduce(floor, workdir, args.rounds, out)
        asyncio.run(_deal(floor, args.profile, args.rounds, min_bet, out))
        if args.rounds is not None:
            _wait_archived(floor, args.rounds)
            out(f"floor demo: {count(args.rounds, 'round')} of every table archived in PostgreSQL; stopping")
        return 0
    except KeyboardInterrupt:
        out("floor demo: stopping everything it started")
        return 130
    except Exception as exc:  # a demo that cannot go on says why, with each table's last words
        if stopping.is_set():
            out("floor demo: stopping everything it started")
            return 130
        logs = "\n".join(
            f"--- {t.opts.table_id} controller log ---\n{t.controller_log(10)}" for t in floor.tables
        )
        print(f"floor demo: {type(exc).__name__}: {exc}\n{logs}", file=sys.stderr)
        return 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C does not abandon the clean-up
            signal.signal(sig, signal.SIG_IGN)
        floor.stop()
        if temp:
            shutil.rmtree(workdir, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _introduce(floor: FloorStack, workdir: Path, rounds: int | None, out: Out) -> None:
    assert floor.floor is not None and floor.login is not None
    tables = " ".join(floor.table_ids)
    out(f"floor demo: tables {tables} (site {SITE}), each on its own broker bridged to the floor broker "
        f"{floor.floor.host}:{floor.floor.port}")  # fmt: skip
    out(f"floor demo: PostgreSQL {floor.dsn} (started for this demo, removed when it stops)")
    out(f"floor demo: {len(floor.workers)} archive workers; logs in {workdir}")
    out(f"floor demo: dashboard {floor.url}")
    out(f"floor demo: login {floor.login.user} / {floor.login.secret} ({floor.login.what})")
    out(
        f"floor demo: the floor's alerts (another terminal): {command('floor', 'alerts', '--dsn', floor.dsn)}"
    )
    some = floor.table_ids[min(1, len(floor.table_ids) - 1)]
    out(f"floor demo: cause a fault at a table (jam, damaged or lid): "
        f"{command('demo', '--workdir', workdir, 'fault', some, 'jam')}")  # fmt: skip
    out(
        f"floor demo: clear it as the chief inspector would: {command('demo', '--workdir', workdir, 'clear', some)}"
    )
    out(
        "floor demo: a faulted table pauses until it is cleared; its alerts show on the dashboard, where a "
        "supervisor acknowledges them with a signing key made on the page and enrolled by the command it shows"
    )
    out(
        f"floor demo: card order seed {floor.opts.seed} (--seed {floor.opts.seed} deals the same cards again)"
    )
    out(f"floor demo: dealing {count(rounds, 'round') if rounds else 'until Ctrl-C'} on every table")


async def _deal(floor: FloorStack, profile: str, rounds: int | None, min_bet: int, out: Out) -> None:
    async def table(stack: Stack) -> None:
        def said(line: str, tid: str = stack.opts.table_id) -> None:
            out(f"{tid}: {line}")

        await prepare_session(stack, profile, said)
        if await auto_dealer(stack, rounds, min_bet, said, brief=True) != 0:
            raise DemoError(f"table {stack.opts.table_id}: the scripted dealer stopped")

    await asyncio.gather(*(table(stack) for stack in floor.tables))


def _wait_archived(floor: FloorStack, rounds: int) -> None:
    deadline = time.monotonic() + ARCHIVED_WAIT
    while True:
        counts = floor.settlements_archived()
        if all(counts.get(t, 0) >= rounds for t in floor.table_ids):
            return
        if time.monotonic() > deadline:
            raise DemoError(f"the archive holds {counts} settlements after {ARCHIVED_WAIT:.0f} s")
        time.sleep(0.2)
