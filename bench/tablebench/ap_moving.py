"""Simulated players who move between two tables (issue 41), for the advantage-play benchmark: each table deals its
own batch shoes (pt-2001, 6 decks, cut card at ``penetration``) through the real rules engine with a table
regular at seat 1; the player under test takes seat 5 at whichever table he chooses, round by round, the two
tables dealing in turn. His visits (which table, from which round to which) are what the tables' player events
would say (``player_in``/``player_out``). Every player plays the printed chart (tablebench/published_chart.py).

- ``flat_mover``: one unit, basic strategy; moves to the other table every 8-30 rounds;
- ``random_mover``: 1-12 units at random, basic strategy; moves like the flat mover;
- ``counter_mover``: Hi-Lo, bets like ap_players' counter; leaves for the other table when his table's true count
  falls below -1 (wonging out);
- ``wonger``: watches both tables, sits down at a table whose true count reaches 2 (the higher of the two), leaves
  below 1, bets like the counter: short stays, each at high counts.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from controller.rules.cards import Card, full_deck
from controller.rules.profiles import load_profile
from controller.rules.types import SeatBet
from floor.reports.play_rounds import ShoeCount
from tablebench.ap_players import REGULAR_SEAT, SUBJECT_SEAT, SimRound, _play_round, _Player, _ramp

MOVERS = ("flat_mover", "random_mover", "counter_mover", "wonger")
TABLES = ("A", "B")


@dataclass
class _Shoe:
    no: int
    stream: Iterator[Card]
    count: ShoeCount
    cut: int
    dealt: int = 0


@dataclass
class MovingRun:
    rounds: dict[str, list[SimRound]] = field(default_factory=dict)  # per table, in order
    # (table, first round, end round) per visit
    visits: list[tuple[str, int, int]] = field(default_factory=list)


class _Mover:
    def __init__(self, kind: str, rng: random.Random) -> None:
        self.kind, self.rng = kind, rng
        self.at: str | None = None if kind == "wonger" else TABLES[0]
        self.left = rng.randint(8, 30)

    def choose(self, table: str, counts: dict[str, float]) -> None:
        """Before ``table`` deals: where he sits now."""
        other = TABLES[1 - TABLES.index(table)]
        if self.kind in ("flat_mover", "random_mover"):
            if self.at == table:
                self.left -= 1
                if self.left <= 0:
                    self.at, self.left = other, self.rng.randint(8, 30)
        elif self.kind == "counter_mover":
            if self.at == table and counts[table] < -1:
                self.at = other
        elif self.at is None or (self.at == table and counts[table] < 1):
            best = max(TABLES, key=lambda t: counts[t])
            self.at = best if counts[best] >= 2 else None

    def units(self, tc: float) -> int:
        if self.kind in ("counter_mover", "wonger"):
            return _ramp(tc)
        return self.rng.randint(1, 12) if self.kind == "random_mover" else 1


def simulate_moving(kind: str, *, shoes: int, seed: int, profile: str = "pt-2001",
                    penetration: float = 0.75) -> MovingRun:  # fmt: skip
    """Both tables deal ``shoes`` shoes each, in turn; the ``kind`` of player moves between them."""
    prof = load_profile(profile)
    rng = random.Random(seed)
    mover = _Mover(kind, rng)
    chart_player = _Player("flat", rng)  # plays the printed chart, never sloppy
    run = MovingRun({t: [] for t in TABLES})
    shoe: dict[str, _Shoe | None] = dict.fromkeys(TABLES)
    done = dict.fromkeys(TABLES, 0)
    open_visit: tuple[str, int] | None = None

    def new_shoe(t: str) -> _Shoe | None:
        if done[t] >= shoes:
            return None
        done[t] += 1
        cards = [c for _ in range(prof.decks) for c in full_deck()]
        rng.shuffle(cards)
        return _Shoe(done[t], iter(cards), ShoeCount(prof.decks), int(len(cards) * penetration))

    for t in TABLES:
        shoe[t] = new_shoe(t)
    while any(shoe.values()):
        for t in TABLES:
            s = shoe[t]
            if s is None:
                continue
            counts = {u: (x.count.true() if (x := shoe[u]) else -99.0) for u in TABLES}
            mover.choose(t, counts)
            here = len(run.rounds[t])
            if open_visit and open_visit[0] != mover.at:  # he left that table (for another or to watch)
                table, first = open_visit
                run.visits.append((table, first, len(run.rounds[table])))
                open_visit = None
            bets = [SeatBet(REGULAR_SEAT, prof.min_bet)]
            if mover.at == t:
                if open_visit is None:
                    open_visit = (t, here)
                bets.append(SeatBet(SUBJECT_SEAT, mover.units(s.count.true()) * prof.min_bet))
            tc = s.count.true()
            engine = _play_round(prof, bets, s.stream, chart_player, first=s.dealt == 0)
            s.dealt += 1
            desc = engine.description()
            run.rounds[t].append(SimRound(f"{t}s{s.no}r{s.dealt}", s.no, tc, desc))
            s.count.feed(desc["cards"])
            if s.count.out >= s.cut:
                shoe[t] = new_shoe(t)
    if open_visit:
        run.visits.append((open_visit[0], open_visit[1], len(run.rounds[open_visit[0]])))
    return run
