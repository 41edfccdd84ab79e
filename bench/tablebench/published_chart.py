"""A basic-strategy player written apart from the judge (issue 39): a printed chart, copied out cell by cell.

The floor judges play precision with the strategy it computes (floor/reports/play_rounds.py,
controller/rules/shoe_math.py); a benchmark or a test that plays with that same code can only agree with it. This player
shares nothing with it: it reads the chart below, the published total-dependent basic strategy for four to eight decks
under the European no-hole-card rules (the dealer stands on soft 17 and takes every stake with a blackjack), double on
9-11 only, double after a split, no resplit of aces, with the early surrender against a ten (half the bet,
whatever the dealer holds: 14-16, 7-7 and 8-8) and the late surrender of 16 against a 9. That is PT-2001's game
(r.17, r.29, r.31, r.26, r.36) except its special prizes (r.35), which no printed chart knows of.

Cells: ``H`` hit, ``S`` stand, ``D`` double (else hit), ``P`` split, ``R`` surrender (else the hand's total
row). After the first decision a hand is played by its total (``D`` and ``R`` then mean hit).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from controller.rules.cards import Card
from controller.rules.types import Action

UP_CARDS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)  # the columns: 2-9, ten, ace

#           2 3 4 5 6 7 8 9 T A
HARD = {
    8: "H H H H H H H H H H",  # 8 or less
    9: "H D D D D H H H H H",
    10: "D D D D D D D D H H",
    11: "D D D D D D D D H H",
    12: "H H S S S H H H H H",
    13: "S S S S S H H H H H",
    14: "S S S S S H H H R H",
    15: "S S S S S H H H R H",
    16: "S S S S S H H R R H",
    17: "S S S S S S S S S S",  # 17 or more
}
SOFT = {
    17: "H H H H H H H H H H",  # soft 17 or less
    18: "S S S S S S S H H H",
    19: "S S S S S S S S S S",  # soft 19 or more
}
PAIRS = {
    1: "P P P P P P P P P H",
    2: "P P P P P P H H H H",
    3: "P P P P P P H H H H",
    4: "H H H P P H H H H H",
    5: "D D D D D D D D H H",
    6: "P P P P P H H H H H",
    7: "P P P P P P H H R H",
    8: "P P P P P P P P R H",
    9: "P P P P P S P P S S",
    10: "S S S S S S S S S S",
}
_CELL = {"H": Action.HIT, "S": Action.STAND, "D": Action.DOUBLE, "P": Action.SPLIT, "R": Action.SURRENDER}


def _cell(row: str, up: int) -> str:
    return row.split()[UP_CARDS.index(up)]


def _total_cell(values: Sequence[int], up: int) -> str:
    hard = sum(values)
    if 1 in values and hard + 10 <= 21:
        return _cell(SOFT[min(max(hard + 10, 17), 19)], up)
    return _cell(HARD[min(max(hard, 8), 17)], up)


def chart_action(cards: Sequence[Card], up: Card, allowed: Collection[Action]) -> Action:
    """The chart's decision for a hand of ``cards`` against the dealer's ``up`` card, among ``allowed``."""
    values = [c.value for c in cards]
    col = up.value
    cells = []
    if len(values) == 2 and values[0] == values[1]:
        cells.append(_cell(PAIRS[values[0]], col))
    cells.append(_total_cell(values, col))
    for code in cells:
        if _CELL[code] in allowed:
            return _CELL[code]
    if cells[-1] in ("D", "R") and Action.HIT in allowed:
        return Action.HIT
    if Action.STAND in allowed:
        return Action.STAND  # a total the chart says to hit that the rules no longer let draw
    return sorted(allowed)[0]
