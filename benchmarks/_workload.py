"""A card workload the table accepts: many short rounds of a continuous shuffler table (PT-2001).

``RoundWorkload.next_input(core)`` looks at the table core (read only) and returns the next input a real
table would see: bets, "no more bets", the cards the rules engine expects (from a seeded 6-deck shoe), the
dealer's decisions (stand, or hit where standing is refused), then the automatic lid cycle after settlement
(PT-2001 r.59-60: lid opens, the round's cards go in, lid closes, the shuffler shuffles) and "next round".
Cards are ~60 % of the inputs; every other input is what a dealer and the shoe would send anyway.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from controller.table import inputs
from drivers import events as ev

CARD_CODES = [r + s for s in ev.SUITS for r in ev.RANKS]
SUPERVISOR = "inspector-bench"


def opening_inputs(decks: int = 6, profile: str = "pt-2001") -> list[inputs.Input]:
    """Open a continuous table: loading in two packets, lid closed, shuffled (PT-2001 r.53-54)."""
    total = decks * 52
    return [
        inputs.supervisor(SUPERVISOR, "open_table", {"profile": profile, "shuffler": "continuous"}),
        inputs.DeviceInput(ev.LidChanged(ev.LidState.OPEN)),
        inputs.DeviceInput(ev.DiscardInserted(total // 2)),
        inputs.DeviceInput(ev.DiscardInserted(total - total // 2)),
        inputs.DeviceInput(ev.LidChanged(ev.LidState.CLOSED)),
        inputs.DeviceInput(ev.ShuffleStarted()),
        inputs.DeviceInput(ev.ShuffleFinished(total)),
    ]


class RoundWorkload:
    def __init__(self, seats: int = 7, amount: int = 500, decks: int = 6, seed: int = 1) -> None:
        self.seats = list(range(1, seats + 1))
        self.amount = amount  # minor units
        self.decks = decks
        self.rng = random.Random(seed)
        self.shoe: deque[str] = deque()
        self.shoe_seq = 0
        self.rounds = 0  # rounds settled
        self.cards = 0  # CardOut inputs produced
        self.out_this_round: list[str] = []

    def _next_card(self) -> ev.CardOut:
        if not self.shoe:
            cards = CARD_CODES * self.decks
            for code in self.out_this_round:  # a continuous shuffler holds every card but the round's
                cards.remove(code)
            self.rng.shuffle(cards)
            self.shoe.extend(cards)
        code = self.shoe.popleft()
        self.out_this_round.append(code)
        self.shoe_seq += 1
        self.cards += 1
        return ev.CardOut(code[0], code[1], self.shoe_seq)

    def card_event(self) -> ev.CardOut:
        """The next card as a device event (for callers that send it through the emulator/pty instead)."""
        return self._next_card()

    def next_input(self, core: Any) -> inputs.Input:
        state = core.state
        if state == "betting":
            placed = {int(s) for s in core.bets}
            for seat in self.seats:
                if seat not in placed:
                    return inputs.dealer("place_bet", {"seat": seat, "amount": self.amount})
            return inputs.dealer("no_more_bets")
        if state in ("dealing", "players", "dealer"):
            engine = core.round.engine
            if engine.expected_recipient() is not None:
                return inputs.DeviceInput(self._next_card())
            allowed = {str(a) for a in engine.allowed_actions()}
            action = next(a for a in ("no_insurance", "stand", "hit") if a in allowed)
            return inputs.dealer("decline_insurance" if action == "no_insurance" else action)
        if state == "settled":
            if core.lid.state != "open":
                return inputs.DeviceInput(ev.LidChanged(ev.LidState.OPEN))  # answer to OpenLid (r.60)
            self.rounds += 1
            return inputs.DeviceInput(ev.DiscardInserted(core.out))
        if state == "cards_returned":
            if core.lid.state == "open":
                return inputs.DeviceInput(ev.LidChanged(ev.LidState.CLOSED))
            self.out_this_round.clear()  # the round's cards went back in (r.59-60)
            return inputs.dealer("next_round")
        raise RuntimeError(f"workload: unexpected table state {state!r} ({core.view()})")


def is_card(inp: inputs.Input) -> bool:
    return isinstance(inp, inputs.DeviceInput) and isinstance(inp.event, ev.CardOut)
