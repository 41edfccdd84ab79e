"""Simulated players for the advantage-play detector (issue 32), run through the real rules engine.

A batch shoe of the profile's decks (6 for pt-2001), shuffled by a seeded generator, with the cut card placed
``penetration`` into it: after the round in which the cut card came out the shoe is reshuffled (PT-2001 r.11).
Seat 1 holds a table regular (flat bets, basic strategy) so the game goes on whoever else plays; the player under
test sits at seat 5. Every round is driven card by card and decision by decision through ``RoundEngine``; its
``description()`` is what the floor's archive rebuilds, so the floor's own code (floor/reports/play_rounds.py)
judges it exactly as it would a real table's round.

Every player's basic strategy is the printed chart of ``tablebench/published_chart.py``, written apart from the
floor's judge (nothing of controller/rules/strategy.py or shoe_math.py), so the judge is tried, not copied.

The players (a unit is the table minimum):

- ``flat``: one unit, basic strategy;
- ``poor``: one or two units at random, a random allowed decision a third of the time;
- ``random``: 1-12 units at random, basic strategy;
- ``counter``: Hi-Lo, one unit up to true count 1, then 2, 4, 8 and 12 units from true counts 2, 3, 4, 5;
- ``backcounter``: watches, sits down when the true count reaches 2, leaves below 1, bets like the counter.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from controller.rules.cards import Card, full_deck
from controller.rules.engine import RoundEngine
from controller.rules.profiles import Profile, load_profile
from controller.rules.types import Action, RoundPhase, SeatBet
from floor.reports.play_rounds import ShoeCount
from tablebench.published_chart import chart_action

PLAYERS = ("flat", "poor", "random", "counter", "backcounter")
REGULAR_SEAT, SUBJECT_SEAT = 1, 5


@dataclass(frozen=True)
class SimRound:
    round_id: str
    shoe: int
    count: float  # the floor's Hi-Lo true count before the round's bets
    description: dict[str, Any]


def _ramp(tc: float) -> int:
    return 1 if tc < 2 else 2 if tc < 3 else 4 if tc < 4 else 8 if tc < 5 else 12


class _Player:
    def __init__(self, kind: str, rng: random.Random) -> None:
        self.kind, self.rng, self.seated = kind, rng, kind != "backcounter"

    def units(self, tc: float) -> int | None:
        if self.kind == "backcounter":
            self.seated = tc >= 2 or (self.seated and tc >= 1)
            return _ramp(tc) if self.seated else None
        if self.kind == "counter":
            return _ramp(tc)
        if self.kind == "random":
            return self.rng.randint(1, 12)
        if self.kind == "poor":
            return self.rng.randint(1, 2)
        return 1

    def sloppy(self) -> bool:
        return self.kind == "poor" and self.rng.random() < 1 / 3


def _decide(engine: RoundEngine, seat: int, hand: int, player: _Player | None) -> Action:
    allowed = set(engine.allowed_actions())
    if player is not None and player.sloppy():
        return player.rng.choice(sorted(allowed))
    if engine.surrender_window_open and engine.explain(Action.SURRENDER, seat, hand) is None:
        allowed.add(Action.SURRENDER)
    up = engine.up_card
    cards = engine.seats[seat].hands[hand].cards
    if up is None or len(cards) < 2:
        return Action.STAND if Action.STAND in allowed else sorted(allowed)[0]
    return chart_action(cards, up, allowed)


def _play_round(
    profile: Profile, bets: list[SeatBet], cards: Iterator[Card], subject: _Player, *, first: bool
) -> RoundEngine:
    burn = profile.burn_before_round(shoe_start=first)  # PT-2001 r.10: one card burnt at the shoe's start
    engine = RoundEngine(profile, bets, burn_before_deal=burn, first_of_game=first and burn > 0)
    while not engine.is_complete():
        t = engine.turn()
        if engine.phase is RoundPhase.INSURANCE and t is not None:
            engine.act(Action.NO_INSURANCE, seat=t.seat)
        elif t is not None and t.kind == "player" and t.seat is not None and t.hand is not None:
            who = subject if t.seat == SUBJECT_SEAT else None
            engine.act(_decide(engine, t.seat, t.hand, who), seat=t.seat, hand=t.hand)
        else:
            engine.on_card(next(cards))
    return engine


def simulate(
    kind: str,
    *,
    shoes: int,
    seed: int,
    profile: str = "pt-2001",
    penetration: float = 0.75,
    player: str | None = "subject",
    on_round: Callable[[SimRound], None] | None = None,
) -> list[SimRound]:
    """``shoes`` shoes of play at a table with the simulated ``kind`` of player at seat 5."""
    prof = load_profile(profile)
    rng = random.Random(seed)
    subject = _Player(kind, rng)
    unit = prof.min_bet
    out: list[SimRound] = []
    for shoe_no in range(1, shoes + 1):
        shoe = [c for _ in range(prof.decks) for c in full_deck()]
        rng.shuffle(shoe)
        cut = int(len(shoe) * penetration)  # the cut card: the shoe's last round is the one it comes out in
        count = ShoeCount(prof.decks)
        stream = iter(shoe)
        n = 0
        while count.out < cut:
            tc = count.true()
            bets = [SeatBet(REGULAR_SEAT, unit)]
            units = subject.units(tc)
            if units is not None:
                bets.append(SeatBet(SUBJECT_SEAT, units * unit, player=player))
            engine = _play_round(prof, bets, stream, subject, first=n == 0)
            n += 1
            desc = engine.description()
            rnd = SimRound(f"s{shoe_no}r{n}", shoe_no, tc, desc)
            out.append(rnd)
            if on_round:
                on_round(rnd)
            count.feed(desc["cards"])
    return out
