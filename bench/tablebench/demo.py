"""`tablectl demo`: a whole table on this machine in one command (the README's first command).

It starts a :class:`tablebench.stack.Stack` (embedded mosquitto on a free port, the emulated shuffler-shoe
and jackpot display on pseudo-terminals, the real service process), prepares a session the way a chief
inspector does (PT-2001 r.53-54: the shoe is emptied, the table opened by the demo supervisor alice/123456, the
cards loaded in two packets, the lid closed), then starts the pit terminal connected to it. In the terminal
the key ``c`` makes the emulated shoe deal the next card (its ``draw`` control op): it stands in for the
dealer pulling a card out of the shoe. ``--auto N`` runs a scripted dealer instead (no terminal) and prints
every card and settlement as it arrives over MQTT. Everything is stopped on exit."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.client import Event, TableClient
from tablebench.stack import DEMO_PINS, ROOT, Stack, StackOptions

# its line in `tablectl --help` (entry point tablectl.commands, bench/pyproject.toml)
HELP = "run the demo: emulated shoe + controller + broker + pit terminal"

PROFILES_DIR = ROOT / "firmware_configs" / "profiles"
DEMO_SUPERVISOR = "alice"
WAIT = 30.0  # generous bound for one step of the emulated table (not a timing check)
Out = Callable[[str], None]


class DemoError(Exception):
    """The demo cannot go on; the message says why."""


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


def main(args: argparse.Namespace) -> int:
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


class StackHardware:
    """The pit terminal's demo keys (controller/terminal/pit_connection.py ``DemoHardware``) on a stack's emulated shoe
    (its control socket, docs/emulator.md) and fake GPIO board (tablebench/gpio_server.py)."""

    def __init__(self, shoe_control: str, gpio_control: str) -> None:
        self.shoe_control = shoe_control
        self.gpio_control = gpio_control
        self.chip_sensor = bool(gpio_control)
        self._ctl: Any = None

    async def connect(self) -> Any:
        from tablebench.emulator.control_client import ControlClient

        self._ctl = await ControlClient.connect(self.shoe_control)
        return self._ctl

    async def close(self) -> None:
        if self._ctl is not None:
            await self._ctl.close()

    async def sense_chip(self, seat: int) -> None:
        from tablebench import gpio_server

        for present in (False, True):  # the slot empties first: the dealer took the last chip
            reply = await gpio_server.call(self.gpio_control, "set", name=f"chip_slot_{seat}", value=present)
            if not reply.get("ok"):
                raise RuntimeError(str(reply.get("error")))


def terminal_connection(stack: Stack, profile: str) -> Any:
    from controller.terminal.pit_connection import PitConnection

    return PitConnection(
        host=stack.host,
        port=stack.port,
        user="dealer",
        password=stack.users["dealer"],
        prefix=stack.prefix,
        supervisor_account="supervisor1",
        supervisor_password=stack.users["supervisor1"],
        demo=StackHardware(stack.shoe_control, stack.gpio_socket),
        floor_console=floor_console_line(stack),
        profile=profile,
        key_dir=str(stack.key_dir),
    )


FLOOR_ACCOUNT = "supervisor2"  # the floor console's broker account in the demo (the pit uses supervisor1)


def floor_console_line(stack: Stack) -> str:
    """The one line that attaches the floor alert console to the demo's broker (docs/terminal.md)."""
    return (
        f"TABLECTL_MQTT_PASSWORD={stack.users[FLOOR_ACCOUNT]} tablectl alerts --host {stack.host} "
        f"--port {stack.port} --user {FLOOR_ACCOUNT} --key-dir {stack.key_dir}"
    )


async def cut(dealer: TableClient, seat: int, out: Out) -> None:
    """PT-2001 r.8: the seat with the right cuts (the first time the lowest occupied seat; later the right
    passes on: the controller's refusal names the seat that has it)."""
    import re

    from controller.client import CommandFailed

    try:
        await dealer.dealer("cut", seat=seat)
    except CommandFailed as exc:
        m = re.search(r"seat (\d+) has the right to cut", exc.reason)
        if m is None:
            raise
        seat = int(m.group(1))
        await dealer.dealer("cut", seat=seat)
    out(f"demo: Seat {seat} cuts the cards (PT-2001 r.8)")


async def prepare_session(stack: Stack, profile: str, out: Out, shoe: str = "continuous") -> None:
    """Open the table (alice), load the decks in two packets, close the lid (PT-2001 r.53-54), over MQTT and
    the emulator's control socket. A machine that starts full is emptied first. A batch shoe is shuffled when
    the table opens and then cut by seat 1 (PT-2001 r.8)."""
    from tablebench.emulator.control_client import ControlClient

    dealer, sup = stack.client("dealer"), stack.client("supervisor1")
    ctl = await ControlClient.connect(stack.shoe_control)
    try:
        await dealer.connect()
        await sup.connect()
        await dealer.wait_for(lambda v: v.status == "online" and "table" in v.states, WAIT)
        from controller.rules.profiles import load_profile

        if shoe == "batch":
            await sup.supervisor(DEMO_SUPERVISOR, DEMO_PINS[DEMO_SUPERVISOR], "open_table", profile=profile,
                                 shuffler="batch")  # fmt: skip
            await dealer.wait_for(lambda v: v.states["table"].get("state") == "cut", WAIT)
            await cut(dealer, 1, out)
            await dealer.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)
            out(f"demo: table open ({profile}), batch shoe shuffled and cut, opened by {DEMO_SUPERVISOR}")
            return
        total = load_profile(profile).decks * 52
        inside = int((await ctl.state())["cards_inside"])
        if inside:  # a machine that starts full: its cards come out first, to be shown and loaded again
            await ctl.draw(inside)
            await dealer.wait_for(lambda v: v.states["table"].get("cards_out") == inside, WAIT)
        await sup.supervisor(DEMO_SUPERVISOR, DEMO_PINS[DEMO_SUPERVISOR], "open_table", profile=profile,
                             shuffler="continuous")  # fmt: skip
        await dealer.wait_for(lambda v: v.states.get("lid", {}).get("state") == "open", WAIT)
        await ctl.insert(total // 2)
        await ctl.insert(total - total // 2)
        await ctl.close_lid()
        await dealer.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)
        out(f"demo: table open ({profile}), {total} cards loaded in two packets by {DEMO_SUPERVISOR}")
    finally:
        await ctl.close()
        await dealer.close()
        await sup.close()


def card_line(data: dict[str, Any]) -> str:
    """One events/card as a line; what came over MQTT is printed as plain text (controller/terminal/plain.py)."""
    from controller.terminal.plain import clean

    card = "face down (hole card)" if data.get("hidden") else str(data.get("code"))
    return clean(f"card #{data.get('shoe_seq')} {data.get('recipient')}: {card}", 200)


def settlement_line(data: dict[str, Any]) -> str:
    from controller.terminal.plain import clean
    from controller.terminal.view import hand_label, money

    dealer = " ".join(str(c) for c in data.get("dealer_cards") or [])
    hands = "; ".join(
        f"{hand_label(h.get('seat'), h.get('hand'))} {' '.join(str(c) for c in h.get('cards') or [])} = "
        f"{h.get('total')} {h.get('outcome')} net {money(h.get('net'))}"
        for h in data.get("hands") or []
        if isinstance(h, dict)
    )
    return clean(
        f"settlement {data.get('round_id')}: dealer {dealer} = {data.get('dealer_total')} | {hands}", 1000
    )


def round_summary(data: dict[str, Any]) -> str:
    """One round in words: each hand's bet, cards, total, result and what it won or lost, then the dealer."""
    from controller.terminal.plain import clean
    from controller.terminal.view import card_text, hand_label, money

    def signed(cents: Any) -> str:
        text = money(cents)
        return f"+{text}" if isinstance(cents, int) and cents > 0 else text

    hands = [h for h in data.get("hands") or [] if isinstance(h, dict)]
    split = {str(h.get("seat")) for h in hands if h.get("hand")}
    parts = [
        f"{hand_label(h.get('seat'), h.get('hand'), str(h.get('seat')) in split)} bet "
        f"{money(h.get('stake', h.get('bet')))}: {' '.join(card_text(c) for c in h.get('cards') or [])} = "
        f"{h.get('total')}, {str(h.get('outcome')).replace('_', ' ')}, {signed(h.get('net'))}"
        for h in hands
    ]
    for ins in data.get("insurance") or []:
        if isinstance(ins, dict):
            parts.append(f"Seat {ins.get('seat')} insurance {signed(ins.get('net'))}")
    tag = ", blackjack" if data.get("dealer_blackjack") else (", bust" if data.get("dealer_bust") else "")
    dealer = " ".join(card_text(c) for c in data.get("dealer_cards") or [])
    line = f"round {data.get('round_id')}: {'; '.join(parts)} · dealer {dealer} = {data.get('dealer_total')}{tag}"
    return clean(line, 1000)


class AutoDealer:
    """A scripted dealer over MQTT: bets, draws a card whenever one is due (no input allowed), hits below 17,
    stands otherwise, declines insurance, then the lid cycle (PT-2001 r.59-60) and the next round.

    Each step waits for the document that proves the controller processed the previous one: after a card the
    ``state/shoe`` count (published last in the controller's step, after ``state/round``); after a decision
    a changed ``state/round``; so no decision is taken on a stale round."""

    def __init__(
        self, client: TableClient, ctl: Any, min_bet: int, out: Out, shoe: str = "continuous"
    ) -> None:
        self.c, self.ctl, self.min_bet, self.out, self.shoe = client, ctl, min_bet, out, shoe

    def st(self, name: str) -> dict[str, Any]:
        return self.c.view.states.get(name, {})

    async def draw(self) -> None:
        before = (self.st("shoe").get("shoe_no"), self.st("shoe").get("dealt_this_shoe"))
        await self.ctl.draw(1)
        await self.c.wait_for(
            lambda v: (v.states["shoe"].get("shoe_no"), v.states["shoe"].get("dealt_this_shoe")) != before,
            WAIT,
        )

    async def decide(self, allowed: list[str]) -> None:
        rnd = self.st("round")
        if "decline_insurance" in allowed:
            action = "decline_insurance"
        else:
            turn = rnd.get("turn") or {}
            hand = next(
                (h for s in rnd.get("seats") or [] if s.get("seat") == turn.get("seat")
                 for h in s.get("hands") or [] if h.get("hand") == turn.get("hand", 0)),
                {},
            )  # fmt: skip
            action = "hit" if int(hand.get("total") or 0) < 17 and "hit" in allowed else "stand"
            if action not in allowed:
                action = allowed[0]
        await self.c.dealer(
            action, **({"seat": rnd["turn"]["seat"]} if action == "decline_insurance" else {})
        )
        if action in ("hit", "double"):
            await self.draw()  # the card for that hand comes next
        else:
            await self.c.wait_for(lambda v: v.states.get("round") != rnd, WAIT)

    async def play_round(self) -> str:
        await self.c.wait_for(lambda v: not v.states["shoe"].get("shuffling"), WAIT)
        for seat, amount in ((1, 2 * self.min_bet), (3, self.min_bet)):
            await self.c.dealer("place_bet", seat=seat, amount=amount)
        rid = (await self.c.dealer("no_more_bets"))["result"]["round_id"]
        await self.c.wait_for(lambda v: v.states.get("round", {}).get("round_id") == rid, WAIT)
        while not self.st("round").get("complete"):
            if self.st("table").get("state") not in ("dealing", "players", "dealer"):
                raise DemoError(f"round {rid} stopped in state {self.st('table').get('state')}")
            allowed = list(self.st("round").get("allowed_actions") or [])
            if allowed:
                await self.decide(allowed)
            else:
                await self.draw()
        if self.shoe == "batch":  # the cards go to the discard; no lid cycle
            await self.c.wait_for(
                lambda v: v.states["table"].get("state") in ("settled", "cards_returned"), WAIT
            )
            if self.st("shoe").get("last_round_of_shoe"):
                self.out(
                    "demo: the warning card came out: that was the last round of this shoe (PT-2001 r.11)"
                )
            return str(rid)
        # the lid opens by itself; the cards go in through the window; the dealer closes it (r.59-60)
        await self.c.wait_for(lambda v: v.states["lid"].get("state") == "open", WAIT)
        await self.ctl.insert()
        await self.c.wait_for(lambda v: v.states["table"].get("state") == "cards_returned", WAIT)
        await self.ctl.close_lid()
        await self.c.wait_for(lambda v: v.states["lid"].get("state") == "locked", WAIT)
        return str(rid)


async def auto_dealer(stack: Stack, rounds: int, min_bet: int, out: Out, shoe: str = "continuous") -> int:
    from tablebench.emulator.control_client import ControlClient

    client = stack.client("dealer")
    await client.connect()
    await client.wait_for(lambda v: {"table", "round", "shoe", "lid"} <= v.states.keys(), WAIT)
    ctl = await ControlClient.connect(stack.shoe_control)
    settled: set[str] = set()

    def show(event: Event) -> None:
        if event.topic == "events/card":
            out(card_line(event.data))
        elif event.topic == "events/settlement":
            settled.add(str(event.data.get("round_id")))
            out(settlement_line(event.data))
            out(round_summary(event.data))
        elif event.topic == "events/round" and event.data.get("phase") == "dealing":
            from controller.terminal.plain import clean
            from controller.terminal.view import money

            bets = ", ".join(
                f"Seat {b.get('seat')} {money(b.get('amount'))}"
                for b in event.data.get("bets") or []
                if isinstance(b, dict)
            )
            out(clean(f"round {event.data.get('round_id')}: bets {bets}", 400))

    async def printer() -> None:
        while True:
            show(await client.events.get())

    while not client.events.empty():  # what happened before the first round is not part of the demo
        client.events.get_nowait()
    task = asyncio.create_task(printer())
    try:
        dealer = AutoDealer(client, ctl, min_bet, out, shoe)
        for n in range(rounds):
            if n:
                await client.dealer("next_round")
                await client.wait_for(lambda v: v.states["table"].get("state") in ("betting", "cut"), WAIT)
                if client.view.states["table"].get("state") == "cut":  # a new batch shoe (PT-2001 r.8, r.11)
                    await cut(client, 1, out)
                    await client.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)
            rid = await dealer.play_round()
            await client.wait_for(lambda v, rid=rid: rid in settled, WAIT)
        out(f"demo: {rounds} round(s) dealt and settled")
        return 0
    finally:
        task.cancel()
        while not client.events.empty():
            show(client.events.get_nowait())
        await ctl.close()
        await client.close()
