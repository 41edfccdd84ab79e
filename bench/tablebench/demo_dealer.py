"""`tablectl demo --auto N`: the scripted dealer that plays N rounds on the demo's stack over MQTT and the
emulated shoe's control socket, printing every card and settlement as it arrives (tablebench/demo_lines.py)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from controller.client import CommandFailed, Event, TableClient, TableView
from controller.words import alert_words, count
from tablebench.demo_lines import bets_line, card_line, round_summary, settlement_line
from tablebench.demo_session import WAIT, DemoError, Out, cut
from tablebench.emulator.control_client import ControlCallError
from tablebench.stack import Stack

PAUSE_CHECK = 600.0  # a pause has no bound; the wait is renewed this often
FAULT_GRACE = (
    5.0  # a refusal is a fault's when the table publishes the fault within this (not a timing check)
)


class Paused(Exception):
    """The table holds the dealer: it published a fault, or a damaged card awaiting its replacement."""


def held_by(view: TableView) -> str | None:
    """Why the table holds the scripted dealer, from what it publishes (``state/table``): a raised fault (jam,
    forced lid, shoe line, link...), a damaged or unreadable card awaiting the chief inspector (PT-2001 r.51),
    or the count of the cards after a fault; None: dealing may go on."""
    table = view.states.get("table") or {}
    faults = [alert_words(f) for f in table.get("faults") or []]  # in words: "Shoe jam", not jam
    if faults:
        return ", ".join(faults)
    if table.get("awaiting_card_replacement"):
        return "a damaged or unreadable card awaits its replacement (PT-2001 r.51)"
    if table.get("state") == "resync":
        return "the cards are being counted after a fault"
    return None


class AutoDealer:
    """A scripted dealer over MQTT: bets, draws a card whenever one is due (no input allowed), hits below 17,
    stands otherwise, declines insurance, then the lid cycle (PT-2001 r.59-60) and the next round.

    Each step waits for the document that proves the controller processed the previous one: after a card the
    ``state/shoe`` count (published last in the controller's step, after ``state/round``); after a decision
    a changed ``state/round``; so no decision is taken on a stale round.

    A table that publishes a fault (``held_by``) holds the dealer: the step in hand ends (``Paused``), the
    dealer waits until the table publishes that the fault is cleared, then goes on from the state the table
    publishes (``play_round`` starts wherever the round stands). A refused command or a shoe that refuses to
    deal is a pause only when the table then publishes a fault; otherwise it ends the demo, as before."""

    def __init__(
        self, client: TableClient, ctl: Any, min_bet: int, out: Out, shoe: str = "continuous"
    ) -> None:
        self.c, self.ctl, self.min_bet, self.out, self.shoe = client, ctl, min_bet, out, shoe
        self.finished: str | None = None  # the last round whose lid cycle this dealer completed
        self.bets: tuple[tuple[int, int], ...] = ((1, 2 * min_bet), (3, min_bet))  # (seat, amount) each round

    def st(self, name: str) -> dict[str, Any]:
        return self.c.view.states.get(name, {})

    def state(self) -> str:
        return str(self.st("table").get("state"))

    async def wait(self, predicate: Callable[[TableView], bool]) -> None:
        """Until ``predicate`` holds; ``Paused`` as soon as the table publishes a fault instead."""
        try:
            await self.c.wait_for(lambda v: predicate(v) or held_by(v) is not None, WAIT)
        except TimeoutError:
            table, lid = self.st("table"), self.st("lid")
            raise DemoError(
                f"the table did not go on within {WAIT:.0f} s: state {table.get('state')}, lid {lid.get('state')} "
                f"(unlocked by {lid.get('unlocked_by')}), round {self.round_id()}"
            ) from None
        if not predicate(self.c.view):
            raise Paused(held_by(self.c.view))

    async def act(self, step: Callable[[], Awaitable[Any]]) -> Any:
        """A command to the table or the shoe; refused because of a fault (the table publishes it within
        ``FAULT_GRACE``): ``Paused``."""
        if (why := held_by(self.c.view)) is not None:
            raise Paused(why)
        try:
            return await step()
        except (CommandFailed, ControlCallError) as exc:
            try:
                await self.c.wait_for(lambda v: held_by(v) is not None, FAULT_GRACE)
            except TimeoutError:
                raise exc from None
            raise Paused(held_by(self.c.view)) from None

    async def pause(self, why: str) -> None:
        """Wait (unbounded) until the table publishes that nothing holds it any more."""
        self.out(f"demo: paused: {why}; dealing goes on once it is cleared")
        while held_by(self.c.view) is not None:  # as long as it takes a person to clear it
            try:
                await self.c.wait_for(lambda v: held_by(v) is None, PAUSE_CHECK)
            except TimeoutError:
                continue
        self.out("demo: cleared; dealing again")

    async def draw(self) -> None:
        before = (self.st("shoe").get("shoe_no"), self.st("shoe").get("dealt_this_shoe"))
        await self.act(lambda: self.ctl.draw(1))
        await self.wait(
            lambda v: (v.states["shoe"].get("shoe_no"), v.states["shoe"].get("dealt_this_shoe")) != before
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
        args = {"seat": rnd["turn"]["seat"]} if action == "decline_insurance" else {}
        await self.act(lambda: self.c.dealer(action, **args))
        if action in ("hit", "double"):
            await self.draw()  # the card for that hand comes next
        else:
            await self.wait(lambda v: v.states.get("round") != rnd)

    async def play_round(self) -> str:
        """One round, from wherever the table stands (a round interrupted by a fault goes on where it stopped):
        the next round called if the last one is done, bets, the cards, the lid cycle. Its round id."""
        await self.wait(lambda v: not v.states["shoe"].get("shuffling"))
        if self.state() in ("settled", "cards_returned") and self.round_id() == self.finished:
            await self.act(lambda: self.c.dealer("next_round"))
            await self.wait(lambda v: v.states["table"].get("state") in ("betting", "cut"))
        if self.state() == "cut":  # a new batch shoe (PT-2001 r.8, r.11)
            await self.act(lambda: cut(self.c, 1, self.out))
            await self.wait(lambda v: v.states["table"].get("state") == "betting")
        if self.state() == "betting":
            placed = self.st("table").get("bets") or {}
            for seat, amount in self.bets:
                if str(seat) not in placed:  # a bet placed before a fault stands
                    await self.act(lambda s=seat, a=amount: self.c.dealer("place_bet", seat=s, amount=a))
            rid = (await self.act(lambda: self.c.dealer("no_more_bets")))["result"]["round_id"]
            await self.wait(lambda v: v.states.get("round", {}).get("round_id") == rid)
        rid = self.round_id()
        while not self.st("round").get("complete"):
            if (why := held_by(self.c.view)) is not None:
                raise Paused(why)
            if self.state() in ("settled", "cards_returned") and self.round_id() == rid:
                # the table's document of a commit can arrive before the round's: wait for the round's
                await self.wait(lambda v: bool(v.states.get("round", {}).get("complete")))
                continue
            if self.state() not in ("dealing", "players", "dealer"):
                raise DemoError(f"round {rid} stopped in state {self.state()}")
            allowed = list(self.st("round").get("allowed_actions") or [])
            if allowed:
                await self.decide(allowed)
            else:
                await self.draw()
        if self.shoe == "batch":  # the cards go to the discard; no lid cycle
            await self.wait(lambda v: v.states["table"].get("state") in ("settled", "cards_returned"))
            if self.st("shoe").get("last_round_of_shoe"):
                self.out(
                    "demo: the warning card came out: that was the last round of this shoe (PT-2001 r.11)"
                )
        else:
            await self.lid_cycle()
        self.finished = rid
        return rid

    def round_id(self) -> str:
        return str(self.st("round").get("round_id"))

    async def lid_cycle(self) -> None:
        """The lid opens by itself; the cards go in through the window; the dealer closes it (r.59-60). A lid
        whose opening a fault ended stays locked: the cards stay in the discard for the next round (r.61)."""
        await self.wait(lambda v: v.states["table"].get("state") in ("settled", "cards_returned"))
        while True:
            lid, state = self.st("lid"), self.state()
            if state == "settled" and lid.get("state") == "open":
                await self.act(self.ctl.insert)
                await self.wait(lambda v: v.states["table"].get("state") == "cards_returned")
            elif state == "settled" and lid.get("unlocked_by") == "auto":
                await self.wait(lambda v: v.states["lid"].get("state") == "open")
            elif state == "cards_returned" and lid.get("state") == "open":
                await self.act(self.ctl.close_lid)
                await self.wait(lambda v: v.states["lid"].get("state") == "locked")
            elif state == "cards_returned" and lid.get("state") != "locked":
                await self.wait(lambda v: v.states["lid"].get("state") == "locked")
            else:
                return


async def auto_dealer(
    stack: Stack, rounds: int | None, min_bet: int, out: Out, shoe: str = "continuous", *, brief: bool = False
) -> int:
    """Deal ``rounds`` rounds (None: until cancelled). ``brief``: one line per round (the floor demo's tables)
    instead of every card, bet and settlement."""
    from tablebench.emulator.control_client import ControlClient

    client = stack.client("dealer")
    await client.connect()
    await client.wait_for(lambda v: {"table", "round", "shoe", "lid"} <= v.states.keys(), WAIT)
    ctl = await ControlClient.connect(stack.shoe_control)
    settled: set[str] = set()

    def show(event: Event) -> None:
        jackpot = client.view.states.get("jackpot")
        currency = (
            jackpot.get("currency") if isinstance(jackpot, dict) else None
        )  # the table's (state/jackpot)
        currency = (
            currency if isinstance(currency, str) and currency.isalpha() and len(currency) == 3 else None
        )
        if brief:
            if event.topic == "events/settlement":
                settled.add(str(event.data.get("round_id")))
                out(round_summary(event.data, currency))
            return
        if event.topic == "events/card":
            out(card_line(event.data))
        elif event.topic == "events/settlement":
            settled.add(str(event.data.get("round_id")))
            out(settlement_line(event.data, currency))
            out(round_summary(event.data, currency))
        elif event.topic == "events/round" and event.data.get("phase") == "dealing":
            out(bets_line(event.data, currency))

    async def printer() -> None:
        while True:
            show(await client.events.get())

    while not client.events.empty():  # what happened before the first round is not part of the demo
        client.events.get_nowait()
    task = asyncio.create_task(printer())
    try:
        dealer = AutoDealer(client, ctl, min_bet, out, shoe)
        for _ in itertools.count() if rounds is None else range(rounds):
            while True:
                try:
                    rid = await dealer.play_round()
                    break
                except Paused as why:  # a faulted table holds the dealer until it is cleared
                    await dealer.pause(str(why))
            await client.wait_for(lambda v, rid=rid: rid in settled, WAIT)
        out(f"demo: {count(rounds, 'round')} dealt and settled")
        return 0
    finally:
        task.cancel()
        while not client.events.empty():
            show(client.events.get_nowait())
        await ctl.close()
        await client.close()
