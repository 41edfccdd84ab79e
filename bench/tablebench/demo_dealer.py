"""`tablectl demo --auto N`: the scripted dealer that plays N rounds on the demo's stack over MQTT and the
emulated shoe's control socket, printing every card and settlement as it arrives (tablebench/demo_lines.py)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from controller.client import Event, TableClient
from controller.words import count
from tablebench.demo_lines import bets_line, card_line, round_summary, settlement_line
from tablebench.demo_session import WAIT, DemoError, Out, cut
from tablebench.stack import Stack


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
        for n in itertools.count() if rounds is None else range(rounds):
            if n:
                await client.dealer("next_round")
                await client.wait_for(lambda v: v.states["table"].get("state") in ("betting", "cut"), WAIT)
                if client.view.states["table"].get("state") == "cut":  # a new batch shoe (PT-2001 r.8, r.11)
                    await cut(client, 1, out)
                    await client.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)
            rid = await dealer.play_round()
            await client.wait_for(lambda v, rid=rid: rid in settled, WAIT)
        out(f"demo: {count(rounds, 'round')} dealt and settled")
        return 0
    finally:
        task.cancel()
        while not client.events.empty():
            show(client.events.get_nowait())
        await ctl.close()
        await client.close()
