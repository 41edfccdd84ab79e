"""Basic strategy and house edge of a rule profile, computed from the profile's own settings (issue 32).

The model is the infinite shoe: every card value has its fixed probability (ten-values 4/13, each other 1/13) at
every draw. A shoe of six or more decks plays within about a tenth of a percentage point of it, slightly in the
player's favour; the figures say so. For each two-card hand (by its two card values) and dealer up card the player's
best decision is the one with the highest expected return, found by exact recursion over the cards still to come:

- the dealer stands on every 17, soft 17 included (PT-2001 r.6, r.19; MO-2004 art.6.1; IT; RO);
- a dealer who checks for blackjack (``table.dealer_peek``: RO, with an ace and, where ``peek_with_ten``, a ten)
  ends the round before the players act; otherwise (no hole card, or a hole card looked at only at the end:
  PT-2001 r.17, r.33-34) a dealer blackjack takes every stake on the table, doubles and splits included, except
  what ``dealer_blackjack.original_bet_only`` limits (MO-2004 art.10.7);
- doubling on the totals the profile allows (``play.double``; a soft double counting its ace as 1 where
  ``play.soft_double_ace_fixed``, PT-2001 r.32), after a split where ``double_after_split``;
- splitting equal values into at most ``play.max_hands`` hands (no limit is taken as four), split aces one card
  each and split again only where ``resplit_aces``; a resplit is valued as two hands of the same start
  (the shared hand limit is approximated);
- surrender for half where ``play.surrender`` (never against an ace unless ``surrender_vs_ace``), taken before the
  dealer's blackjack is known (PT-2001 r.36, MO-2004 art.18);
- MO-2004 art.19's five-card payment (half the bet, not against an ace) where ``play.five_card_rule``;
- the special prizes of PT-2001 r.35 / MO-2004 art.15 (6-7-8 of one suit, three 7s: 3 x the bet) on the first
  three cards of an unsplit hand;
- blackjack pays ``payouts.blackjack`` (3:2), a win ``payouts.win``; insurance and even money are never taken (at
  an infinite shoe insurance returns 9/13 x 3 - 1 = -7.7 %).

Pure: no I/O. ``tablectl strategy --profile NAME`` prints the tables and the edge (controller/cli/strategy.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from controller.rules.profile_model import Profile

VALUES = tuple(range(1, 11))  # 1 = ace, 10 = any ten-value card
P = {v: (4 / 13 if v == 10 else 1 / 13) for v in VALUES}
DEALER_FINALS = (17, 18, 19, 20, 21, 22)  # 22 = bust
NO_LIMIT_HANDS = 4  # "no limit" on splitting is computed as four hands


class Move(StrEnum):
    STAND = "S"
    HIT = "H"
    DOUBLE = "D"
    SPLIT = "P"
    SURRENDER = "R"
    FIVE_CARD = "5"


MOVE_WORDS = {
    Move.STAND: "stand",
    Move.HIT: "hit",
    Move.DOUBLE: "double",
    Move.SPLIT: "split",
    Move.SURRENDER: "surrender",
    Move.FIVE_CARD: "take half (five cards)",
}


def _total(hard: int, aces: bool) -> tuple[int, bool]:
    """(best total, soft) of a hand whose cards add to ``hard`` with aces at 1."""
    if aces and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


@cache
def _dealer_from(hard: int, aces: bool) -> tuple[float, ...]:
    """The dealer's final totals (17..21, bust) from a hand of at least two cards, standing on every 17."""
    total, _soft = _total(hard, aces)
    if total >= 17:
        out = [0.0] * 6
        out[min(total, 22) - 17] = 1.0
        return tuple(out)
    acc = [0.0] * 6
    for v in VALUES:
        h = hard + v
        if h > 21:
            acc[5] += P[v]
            continue
        for i, x in enumerate(_dealer_from(h, aces or v == 1)):
            acc[i] += P[v] * x
    return tuple(acc)


@cache
def dealer_outcomes(up: int) -> tuple[float, tuple[float, ...]]:
    """(probability of a dealer blackjack, the final totals 17..21/bust given no blackjack) for an up card."""
    bj = P[10] if up == 1 else (P[1] if up == 10 else 0.0)
    acc = [0.0] * 6
    for v in VALUES:
        if (up == 1 and v == 10) or (up == 10 and v == 1):
            continue
        for i, x in enumerate(_dealer_from(up + v, up == 1 or v == 1)):
            acc[i] += P[v] * x
    norm = 1 - bj
    return bj, tuple(x / norm for x in acc)


@dataclass(frozen=True)
class Game:
    """The settings of a profile the strategy depends on, as plain values (hashable for the caches)."""

    peek_ace: bool
    peek_ten: bool
    double: str  # "9-11" | "11" | "any" | "none"
    double_after_split: bool
    soft_double_ace_fixed: bool
    max_hands: int
    resplit_aces: bool
    surrender: bool
    surrender_vs_ace: bool
    five_card: bool
    doubles_lose_original_only: bool
    blackjack_pays: float
    win_pays: float
    prize_678: int
    prize_777: int

    @classmethod
    def of(cls, p: Profile) -> Game:
        play = p.play
        return cls(
            peek_ace=p.dealer_peek,
            peek_ten=p.dealer_peek and p.peek_with_ten,
            double=play.double,
            double_after_split=play.double_after_split,
            soft_double_ace_fixed=play.soft_double_ace_fixed,
            max_hands=play.max_hands or NO_LIMIT_HANDS,
            resplit_aces=play.resplit_aces,
            surrender=play.surrender,
            surrender_vs_ace=play.surrender_vs_ace,
            five_card=play.five_card_rule,
            doubles_lose_original_only=p.original_bet_only == "doubles",
            blackjack_pays=float(p.blackjack_pays),
            win_pays=float(p.win_pays),
            prize_678=int(p.special_prizes.get("six_seven_eight_suited", 0)),
            prize_777=int(p.special_prizes.get("three_sevens", 0)),
        )

    def peeks(self, up: int) -> bool:
        return (up == 1 and self.peek_ace) or (up == 10 and self.peek_ten)

    def may_double(self, hard: int, aces: bool, split: bool) -> bool:
        if self.double == "none" or (split and not self.double_after_split):
            return False
        totals = {hard, _total(hard, aces)[0]}
        allowed = {"9-11": {9, 10, 11}, "11": {11}}.get(self.double)
        return allowed is None or bool(totals & allowed)


class Solver:
    """Expected returns of every decision for one game and up card, per unit of the original bet, given that
    the dealer has no blackjack (its cost is added by ``initial``)."""

    def __init__(self, game: Game, up: int) -> None:
        self.g, self.up = game, up
        self.bj, self.dealer = dealer_outcomes(up)
        self._hand: dict[tuple[int, bool, int, bool], float] = {}

    def stand(self, total: int) -> float:
        if total > 21:
            return -1.0
        ev = 0.0
        for i, x in enumerate(self.dealer):
            d = DEALER_FINALS[i]
            ev += x * (self.g.win_pays if d == 22 or total > d else (0.0 if total == d else -1.0))
        return ev

    def hand(self, hard: int, aces: bool, ncards: int, split: bool) -> float:
        """Best of stand / hit (/ five-card payment) for a hand that may not double any more."""
        key = (hard, aces, ncards, split)
        if key in self._hand:
            return self._hand[key]
        total, _ = _total(hard, aces)
        best = self.stand(total)
        if total < 21:
            best = max(best, self.hit(hard, aces, ncards, split))
        if self._five_card(total, ncards):
            best = max(best, 0.5)
        self._hand[key] = best
        return best

    def _five_card(self, total: int, ncards: int) -> bool:
        return self.g.five_card and ncards == 5 and total <= 21 and self.up != 1

    def hit(self, hard: int, aces: bool, ncards: int, split: bool) -> float:
        ev = 0.0
        for v in VALUES:
            h = hard + v
            ev += P[v] * (-1.0 if h > 21 else self.hand(h, aces or v == 1, ncards + 1, split))
        return ev

    def double(self, hard: int, aces: bool) -> float:
        fixed = aces and self.g.soft_double_ace_fixed  # PT-2001 r.32: the ace stays at 1
        ev = 0.0
        for v in VALUES:
            h = hard + v
            ev += P[v] * (-1.0 if h > 21 else self.stand(_total(h, (aces and not fixed) or v == 1)[0]))
        return 2 * ev

    def split_hand(self, card: int, hands_left: int) -> float:
        """One hand of a split pair of ``card``s: its second card, then the best play (doubling after a split
        where allowed, split aces one card each); ``hands_left``: how many more hands a resplit may add."""
        ev = 0.0
        for v in VALUES:
            hard, aces = card + v, card == 1 or v == 1
            if card == 1:  # split aces: one card each (PT-2001 r.26, MO-2004 art.16.3)
                value = self.stand(_total(hard, aces)[0])
                if v == 1 and self.g.resplit_aces and hands_left > 0:
                    value = max(value, 2 * self.split_hand(1, hands_left - 1))
            else:
                value = self.hand(hard, aces, 2, True)
                if self.g.may_double(hard, aces, True):
                    value = max(value, self.double(hard, aces))
                if v == card and hands_left > 0:
                    value = max(value, 2 * self.split_hand(card, hands_left - 1))
            ev += P[v] * value
        return ev

    def moves(self, c1: int, c2: int) -> dict[Move, float]:
        """Every decision's expected return on the two-card hand c1 c2 (no blackjack), dealer blackjack excluded."""
        hard, aces = c1 + c2, c1 == 1 or c2 == 1
        total, _ = _total(hard, aces)
        out = {Move.STAND: self.stand(total)}
        if total < 21:
            out[Move.HIT] = self.hit(hard, aces, 2, False) + self._prize_on_third(c1, c2, 1)
        if self.g.may_double(hard, aces, False):
            out[Move.DOUBLE] = self.double(hard, aces) + self._prize_on_third(c1, c2, 1)
        if c1 == c2 and self.g.max_hands >= 2:
            out[Move.SPLIT] = 2 * self.split_hand(c1, self.g.max_hands - 2)
        if self.g.surrender and (self.up != 1 or self.g.surrender_vs_ace):
            out[Move.SURRENDER] = -0.5
        return out

    def _prize_on_third(self, c1: int, c2: int, units: int) -> float:
        """PT-2001 r.35 / MO-2004 art.15: the third card completing 6-7-8 of one suit or three 7s pays 3 x the bet,
        whatever the hand's result (two cards of one suit: 1/4; the third card of that suit and value: 1/52)."""
        pair = sorted((c1, c2))
        if pair == [7, 7]:
            return units * self.g.prize_777 * P[7]
        if pair in ([6, 7], [6, 8], [7, 8]):
            return units * self.g.prize_678 * (1 / 4) * (1 / 52)
        return 0.0


@dataclass(frozen=True)
class Decision:
    c1: int
    c2: int
    up: int
    move: Move
    ev: float  # expected return per unit of the original bet, the dealer's blackjack included


def _with_blackjack_cost(g: Game, up: int, bj: float, move: Move, ev: float) -> float:
    """The move's return with the dealer's blackjack counted: none where the dealer checks first (the round ends
    before anyone plays, for the same -1 whatever the move); else every stake on the table is lost (a double 2,
    a split pair 2; MO-2004 art.10.7: a double only its original bet), a surrender still -1/2 and the five-card
    payment is not reached."""
    if g.peeks(up):
        return ev  # conditional: the peek's -1 is in ``initial``
    lost = {Move.DOUBLE: 1.0 if g.doubles_lose_original_only else 2.0, Move.SPLIT: 2.0, Move.SURRENDER: 0.5}
    return bj * -lost.get(move, 1.0) + (1 - bj) * ev


@cache
def _solver(g: Game, up: int) -> Solver:
    return Solver(g, up)  # its own caches fill as hands are asked about: one per game and up card


def best(g: Game, c1: int, c2: int, up: int) -> Decision:
    s = _solver(g, up)
    options = {m: _with_blackjack_cost(g, up, s.bj, m, ev) for m, ev in s.moves(c1, c2).items()}
    move = max(options, key=lambda m: options[m])
    return Decision(c1, c2, up, move, options[move])


def initial(g: Game, c1: int, c2: int, up: int) -> float:
    """Expected return of the two-card hand c1 c2 against ``up``, played best, everything included."""
    bj = dealer_outcomes(up)[0]
    if sorted((c1, c2)) == [1, 10]:  # the player's blackjack: a push against the dealer's (PT-2001 r.21)
        return (1 - bj) * g.blackjack_pays
    d = best(g, c1, c2, up)
    return bj * -1.0 + (1 - bj) * d.ev if g.peeks(up) else d.ev


@dataclass(frozen=True)
class Edge:
    house_edge: float  # the house's expected win per unit of the original bet (0.0041 = 0.41 %)

    @property
    def rtp(self) -> float:
        return 1 - self.house_edge


def house_edge(p: Profile) -> Edge:
    g = Game.of(p)
    ret = 0.0
    for up in VALUES:
        for c1 in VALUES:
            for c2 in VALUES:
                ret += P[up] * P[c1] * P[c2] * initial(g, c1, c2, up)
    return Edge(-ret)


def chart_rows() -> dict[str, tuple[int, int]]:
    """The rows of a strategy chart ("hard 16", "soft 18", "pair 8s") and the two cards each row is read on."""
    samples: dict[str, tuple[int, int]] = {}
    for total in range(5, 18):  # a hard total from two different non-ace values (the commonest pair of cards)
        pair = next(((a, total - a) for a in range(2, 11) if 2 <= total - a <= 10 and a != total - a), None)
        if pair:
            samples[f"hard {total}"] = pair
    for other in range(2, 10):
        samples[f"soft {11 + other}"] = (1, other)
    for v in VALUES:
        samples[f"pair {'A' if v == 1 else v}s"] = (v, v)
    return samples


def chart(p: Profile) -> dict[str, dict[int, Move]]:
    """Basic strategy: a row per hand ("hard 16", "soft 18", "pair 8s"), a column per dealer up card (1 = ace)."""
    g = Game.of(p)
    return {name: {up: best(g, c1, c2, up).move for up in VALUES} for name, (c1, c2) in chart_rows().items()}


def move_values(
    g: Game, values: list[int], up: int, *, split: bool, first: bool, hands: int
) -> dict[Move, float]:
    """Every decision open to a hand of card ``values`` (1 = ace) in play, with its expected return per unit of
    the original bet: ``first`` while the hand has its first two cards and no decision yet (double, split and
    surrender are open; the dealer's blackjack counted as in the charts), ``split`` for a hand of a split pair,
    ``hands`` the seat's hands now. The same recursion as the charts, for any hand the round reaches."""
    s = _solver(g, up)
    hard, aces = sum(values), 1 in values
    total, _ = _total(hard, aces)
    if first and len(values) == 2 and not split:
        return {
            m: _with_blackjack_cost(g, up, s.bj, m, ev) for m, ev in s.moves(values[0], values[1]).items()
        }
    options = {Move.STAND: s.stand(total)}
    if total < 21:
        options[Move.HIT] = s.hit(hard, aces, len(values), split)
    if s._five_card(total, len(values)):
        options[Move.FIVE_CARD] = 0.5
    if len(values) == 2 and split:
        if g.may_double(hard, aces, True):
            options[Move.DOUBLE] = s.double(hard, aces)
        if values[0] == values[1] and hands < g.max_hands and (values[0] != 1 or g.resplit_aces):
            options[Move.SPLIT] = 2 * s.split_hand(values[0], g.max_hands - hands - 1)
    return options


def next_move(g: Game, values: list[int], up: int, *, split: bool, first: bool, hands: int) -> Move:
    """The strategy's decision for a hand in play (``move_values``: the one of the highest return)."""
    options = move_values(g, values, up, split=split, first=first, hands=hands)
    return max(options, key=lambda m: options[m])
