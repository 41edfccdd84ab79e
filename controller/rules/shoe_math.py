"""House edge of a rule profile for the shoe actually dealt: the profile's number of decks, by recursion over the
shoe's composition (issue 39). ``controller/rules/strategy.py`` keeps the infinite shoe as the check.

What is exact, and what is not:

- every round starts from a full shoe of ``profile.decks`` decks (a continuous shuffler puts the cards back each
  round; a cut card deep in the shoe changes the figure by less than the approximations below);
- the up card and the player's first two cards are drawn from that shoe without replacement, each combination
  weighted by its exact probability;
- every later card, the player's and the dealer's, is drawn from what is left: the dealer's final total is
  computed from the shoe as the player's hand leaves it (by exchangeability this is also exact where the hole
  card was dealt before the player drew and is looked at only at the end: PT-2001 r.17, r.33-34);
- the dealer stands on every 17, soft 17 included (PT-2001 r.6, r.19; MO-2004 art.6.1; IT; RO);
- where the dealer checks for blackjack first (``table.dealer_peek``: RO), the round ends before the players act
  and the player then plays on knowing there is none; **approximated**: the player's draws are not conditioned
  on the hole card not being the blackjack card (the dealer's are);
- every payout as the engine settles it: blackjack ``payouts.blackjack``, a win ``payouts.win``; a dealer
  blackjack takes every stake on the table except what ``dealer_blackjack.original_bet_only`` limits (MO-2004
  art.10.7); a surrender costs half whatever the dealer holds (PT-2001 r.36); MO-2004 art.19's payment of half
  the bet on exactly five cards is taken during play and kept whatever the dealer makes; the special prizes
  (PT-2001 r.35, MO-2004 art.15: 6-7-8 of one suit or three 7s among a hand's first three cards, 3 x the
  original bet) are paid whatever the dealer holds, on split hands where ``prizes.split_hands``; suits are taken
  as evenly spread over what is left (exact for a full shoe);
- **approximated**: a split pair's hands are each valued as if the other hand's cards were still in the shoe,
  and a resplit as two hands of the same start (as in strategy.py); insurance and even money are never taken.

Two figures: **composition-dependent** (every decision made for the hand's exact cards and the up card: the best
a player without counting can do) and **basic strategy** (total-dependent: one decision per total, soft or
hard, pair and up card, taken from the same recursion on a shoe missing only the up card, then played exactly).

Pure: no I/O. The recursion takes seconds per profile; results are cached per game. Inside the recursion a shoe
is one int (``_pack``: each value's count in a field of ``_W`` bits): taking a card is a subtraction and a shoe
hashes as a number, where the tuples of the public functions hash ten counts at every call. The arithmetic on the
probabilities is the same, in the same order: the figures are the same to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from controller.rules.profile_model import Profile
from controller.rules.strategy import Game, Move, chart_rows

Shoe = tuple[int, ...]  # cards left of each value, index 0 = ace ... index 9 = ten-values
VALUES = tuple(range(1, 11))
BJ = 6  # index of the dealer's blackjack in an outcome vector: 0..4 = 17..21, 5 = bust, 6 = blackjack
FINALS = (17, 18, 19, 20, 21, 22)


_W = 8  # bits of one value's count in a packed shoe: up to 255 cards of a value (16 decks of ten-values)
_M = (1 << _W) - 1
_ONE = tuple(1 << (_W * i) for i in range(10))  # one card of value i + 1, packed
_KEY = 12  # bits of a hand's state (hard total, cards, soft, split) below the shoe in a solver's memo key


def _pack(shoe: Shoe) -> int:
    if len(shoe) != 10 or not all(0 <= c <= _M for c in shoe):
        raise ValueError(f"not a shoe of ten counts of 0..{_M}: {shoe!r}")
    return sum(c << (_W * i) for i, c in enumerate(shoe))


def _unpack(packed: int) -> Shoe:
    return tuple((packed >> (_W * i)) & _M for i in range(10))


def full_shoe(decks: int) -> Shoe:
    return tuple(16 * decks if v == 10 else 4 * decks for v in VALUES)


def take(shoe: Shoe, v: int) -> Shoe:
    i = v - 1
    return (*shoe[:i], shoe[i] - 1, *shoe[i + 1 :])


def _best(hard: int, aces: bool) -> int:
    return hard + 10 if aces and hard + 10 <= 21 else hard


@cache
def _dealer(shoe: Shoe, hard: int, aces: bool, ncards: int) -> tuple[float, ...]:
    """The dealer's outcome (17..21, bust, blackjack) from his cards so far, drawing from ``shoe``."""
    total = _best(hard, aces)
    if ncards >= 2 and total >= 17:
        out = [0.0] * 7
        out[BJ if (ncards == 2 and total == 21) else min(total, 22) - 17] = 1.0
        return tuple(out)
    left = sum(shoe)
    acc = [0.0] * 7
    for i, count in enumerate(shoe):
        if not count:
            continue
        v, p = i + 1, count / left
        h = hard + v
        if h > 21:
            acc[5] += p
            continue
        sub = _dealer(take(shoe, v), h, aces or v == 1, ncards + 1)
        for k in range(7):
            acc[k] += p * sub[k]
    return tuple(acc)


def dealer_from_up(shoe: Shoe, up: int) -> tuple[float, ...]:
    """The dealer's outcome vector for ``up`` with the rest of his cards from ``shoe``, exactly."""
    return _dealer(shoe, up, up == 1, 1)


def _given(out: tuple[float, ...], peeked: bool) -> tuple[float, ...]:
    if not peeked or out[BJ] == 0.0:
        return out
    norm = 1.0 - out[BJ]
    return (*(x / norm for x in out[:BJ]), 0.0)


class DealerModel:
    """The dealer's outcomes for one up card as the player's cards leave the shoe: exact for the shoe missing the
    up card, and for each further card removed the change that one removal makes (first-order effects of
    removal; the second-order terms are of the order of (cards removed / cards in the shoe) squared, and
    ``tests/test_shoe_math.py`` measures them against the exact recursion)."""

    def __init__(self, base: Shoe, up: int) -> None:
        self.base, self.up = base, up
        self.at_base = dealer_from_up(base, up)
        self.effect = {
            v: tuple(x - y for x, y in zip(dealer_from_up(take(base, v), up), self.at_base, strict=True))
            for v in VALUES
            if base[v - 1]
        }
        self._fields = [(self.base[v - 1], _W * (v - 1), eff) for v, eff in self.effect.items()]
        self._memo: dict[int, tuple[float, ...]] = {}  # by packed shoe

    def outcomes(self, shoe: Shoe) -> tuple[float, ...]:
        return self._outcomes(_pack(shoe))

    def _outcomes(self, shoe: int) -> tuple[float, ...]:
        got = self._memo.get(shoe)
        if got is None:
            acc = list(self.at_base)
            for in_base, shift, eff in self._fields:
                n = in_base - ((shoe >> shift) & _M)
                if n:
                    acc = [a + n * e for a, e in zip(acc, eff, strict=True)]
            got = self._memo[shoe] = tuple(acc)
        return got


@dataclass(frozen=True)
class Prizes:
    six_seven_eight: int  # x the original bet (PT-2001 r.35, MO-2004 art.15)
    three_sevens: int
    split_hands: bool

    @classmethod
    def of(cls, p: Profile) -> Prizes:
        g = Game.of(p)  # the one reading of the profile's prize table
        return cls(g.prize_678, g.prize_777, bool(p.prizes.split_hands))

    def on_third(self, c1: int, c2: int, shoe: Shoe) -> float:
        """The prize's expected value when a hand holding c1 c2 takes its third card from ``shoe``."""
        pair = sorted((c1, c2))
        left = sum(shoe)
        if pair == [7, 7] and self.three_sevens:
            return self.three_sevens * shoe[6] / left
        if pair in ([6, 7], [6, 8], [7, 8]) and self.six_seven_eight:
            third = ({6, 7, 8} - set(pair)).pop()
            # the first two of one suit (1/4), the third of that suit (a quarter of its value's cards)
            return self.six_seven_eight * 0.25 * (shoe[third - 1] / 4) / left
        return 0.0


# What a total-dependent decision is taken on: (up card, total, soft, stage, detail); stage FIRST / SPLIT_FIRST
# (the first two cards of a hand, unsplit or of a split pair: detail 1 for a pair) or LATER / SPLIT_LATER (three
# cards or more: detail the number of cards, up to five, where MO-2004 art.19 makes it matter).
Key = tuple[int, int, bool, int, int]
FIRST, SPLIT_FIRST, LATER, SPLIT_LATER = range(4)


_DRAWS: dict[int, list[tuple[int, float, int, int]]] = {}  # the next card's values from a packed shoe, shared
_DRAWS_KEPT = 400_000  # bounded: emptied when it grows past this many shoes


class Decide:
    """How a decision is taken: the best for the hand's exact cards, or a total-dependent chart."""

    def __call__(self, key: Key, options: dict[Move, float]) -> Move:
        return max(options, key=lambda m: options[m])


class ChartDecide(Decide):
    """Basic strategy: the decision for (up, total, soft, first two cards, split hand), fixed in advance."""

    def __init__(self, chart: dict[Key, tuple[Move, ...]]) -> None:
        self.chart = chart

    def __call__(self, key: Key, options: dict[Move, float]) -> Move:
        for move in self.chart.get(key, ()):
            if move in options:
                return move
        return max(options, key=lambda m: options[m])


class FiniteSolver:
    """Expected returns per unit of the original bet for one up card, drawing every card from the shoe left.

    The public methods take the shoe as a tuple; each packs it once and the recursion (``_stand``, ``_play``,
    ``_hit``, ...) runs on packed shoes."""

    def __init__(
        self,
        g: Game,
        prizes: Prizes,
        up: int,
        decide: Decide,
        dealer: DealerModel,
        *,
        frozen: Shoe | None = None,
    ) -> None:
        self.g, self.prizes, self.up, self.decide, self.dealer = g, prizes, up, decide, dealer
        self.peeked = g.peeks(up)
        self.frozen = frozen  # a shoe every draw comes from unchanged: the reference for the chart
        self._frozen = None if frozen is None else _pack(frozen)
        self._frozen_draws: list[tuple[int, float, int, int]] | None = None
        # (packed shoe << _KEY) | (hard << 7) | (cards << 2) | (soft << 1) | split -> the hand's value
        self._memo: dict[int, float] = {}
        self._out: dict[
            int, tuple[float, ...]
        ] = {}  # packed shoe -> the dealer's outcomes as the hand sees them
        # what standing on each total wins against each final of the dealer's (FINALS), and what a dealer's
        # blackjack takes from a stake of 1 and of 2 (with a double, only the original bet where the rules say so)
        self._pays = [
            tuple(g.win_pays if d == 22 or total > d else (0.0 if total == d else -1.0) for d in FINALS)
            for total in range(22)
        ]
        self._lost_to_bj = (0.0, 1.0, 1.0 if g.doubles_lose_original_only else 2.0)
        self._best_only = type(decide) is Decide  # the best move's value: no decision to record or look up

    def _draws(self, shoe: int) -> list[tuple[int, float, int, int]]:
        """Each value the next card may have, its probability, the shoe after it and that shoe << _KEY."""
        if self._frozen is not None:
            if self._frozen_draws is None:
                src = _unpack(self._frozen)
                left = sum(src)
                self._frozen_draws = [
                    (i + 1, c / left, self._frozen, self._frozen << _KEY) for i, c in enumerate(src) if c
                ]
            return self._frozen_draws
        got = _DRAWS.get(shoe)
        if got is None:
            counts = _unpack(shoe)
            left = sum(counts)
            got = []
            for i, c in enumerate(counts):
                if c:
                    rest = shoe - _ONE[i]
                    got.append((i + 1, c / left, rest, rest << _KEY))
            if len(_DRAWS) > _DRAWS_KEPT:
                _DRAWS.clear()
            _DRAWS[shoe] = got
        return got

    def _seen(self, shoe: int) -> int:
        """The shoe the dealer's outcomes and the prizes are taken from."""
        return shoe if self._frozen is None else self._frozen

    def stand(self, shoe: Shoe, total: int, stake: int = 1) -> float:
        """A hand (not a blackjack) standing on ``total`` with ``stake`` units (2 once doubled)."""
        return self._stand(_pack(shoe), total, stake)

    def _stand(self, shoe: int, total: int, stake: int = 1) -> float:
        if total > 21:
            return -float(stake)
        out = self._out.get(shoe)
        if out is None:
            out = self._out[shoe] = _given(self.dealer._outcomes(self._seen(shoe)), self.peeked)
        # the sum over FINALS from 0.0 in their order, as a loop adding only the finals the dealer can make would
        # (a term of 0.0 leaves a sum that is never -0.0 as it is)
        w = self._pays[total]
        ev = (
            0.0
            + out[0] * w[0]
            + out[1] * w[1]
            + out[2] * w[2]
            + out[3] * w[3]
            + out[4] * w[4]
            + out[5] * w[5]
        )
        return stake * ev - out[BJ] * self._lost_to_bj[stake]

    def play(self, shoe: Shoe, hard: int, aces: bool, ncards: int, split: bool) -> float:
        """Stand, hit or (MO-2004 art.19) take half on five cards: no double, no split any more."""
        return self._play(_pack(shoe), hard, aces, ncards, split)

    def _play(self, shoe: int, hard: int, aces: bool, ncards: int, split: bool) -> float:
        key = (shoe << _KEY) | (hard << 7) | (ncards << 2) | (aces << 1) | split
        got = self._memo.get(key)
        if got is not None:
            return got
        total = _best(hard, aces)
        options = {Move.STAND: self._stand(shoe, total)}
        if total < 21:
            options[Move.HIT] = self._hit(shoe, hard, aces, ncards, split)
        if self.g.five_card and ncards == 5 and total <= 21 and self.up != 1:
            options[Move.FIVE_CARD] = 0.5  # paid during play, whatever the dealer then makes
        if self._best_only:
            value = max(options.values())  # Decide's choice (the first of the best) is worth this
        else:
            stage = SPLIT_LATER if split else LATER
            value = options[self.decide((self.up, total, total != hard, stage, min(ncards, 6)), options)]
        self._memo[key] = value
        return value

    def hit(self, shoe: Shoe, hard: int, aces: bool, ncards: int, split: bool) -> float:
        return self._hit(_pack(shoe), hard, aces, ncards, split)

    def _hit(self, shoe: int, hard: int, aces: bool, ncards: int, split: bool) -> float:
        ev, memo, n = 0.0, self._memo, ncards + 1
        state = (n << 2) | split
        draws = _DRAWS.get(shoe) if self._frozen is None else None
        for v, p, rest, rest_key in draws or self._draws(shoe):
            h = hard + v
            if h > 21:
                ev -= p
                continue
            a = aces or v == 1
            got = memo.get(rest_key | (h << 7) | (a << 1) | state)
            ev += p * (got if got is not None else self._play(rest, h, a, n, split))
        return ev

    def double(self, shoe: Shoe, hard: int, aces: bool) -> float:
        return self._double(_pack(shoe), hard, aces)

    def _double(self, shoe: int, hard: int, aces: bool) -> float:
        fixed = aces and self.g.soft_double_ace_fixed  # PT-2001 r.32: the ace stays at 1
        ev = 0.0
        for v, p, rest, _ in self._draws(shoe):
            h = hard + v
            ev += p * (-2.0 if h > 21 else self._stand(rest, _best(h, (aces and not fixed) or v == 1), 2))
        return ev

    def first_moves(self, shoe: Shoe, c1: int, c2: int, *, split: bool, hands_left: int) -> dict[Move, float]:
        """Every decision on a two-card hand c1 c2 (not a blackjack) with the rest of the cards in ``shoe``."""
        return self._first_moves(_pack(shoe), c1, c2, split=split, hands_left=hands_left)

    def _first_moves(self, shoe: int, c1: int, c2: int, *, split: bool, hands_left: int) -> dict[Move, float]:
        hard, aces = c1 + c2, c1 == 1 or c2 == 1
        total = _best(hard, aces)
        prize = (
            self.prizes.on_third(c1, c2, _unpack(self._seen(shoe)))
            if (self.prizes.split_hands or not split)
            else 0.0
        )
        if split and c1 == 1:  # split aces: one card each (PT-2001 r.26, MO-2004 art.16.3)
            out = {Move.STAND: self._stand(shoe, total)}
            if c2 == 1 and self.g.resplit_aces and hands_left > 0:
                out[Move.SPLIT] = 2 * self._split_hand(shoe, 1, hands_left - 1)
            return out
        out = {Move.STAND: self._stand(shoe, total)}
        if total < 21:
            out[Move.HIT] = self._hit(shoe, hard, aces, 2, split) + prize
        if self.g.may_double(hard, aces, split):
            out[Move.DOUBLE] = self._double(shoe, hard, aces) + prize
        if c1 == c2 and hands_left > 0:
            out[Move.SPLIT] = 2 * self._split_hand(shoe, c1, hands_left - 1)
        if not split and self.g.surrender and (self.up != 1 or self.g.surrender_vs_ace):
            out[Move.SURRENDER] = -0.5
        return out

    def split_hand(self, shoe: Shoe, card: int, hands_left: int) -> float:
        """One hand of a split pair: its second card from ``shoe``, then the best play (approximated: the other
        hand's cards are not removed)."""
        return self._split_hand(_pack(shoe), card, hands_left)

    def _split_hand(self, shoe: int, card: int, hands_left: int) -> float:
        ev = 0.0
        for v, p, rest, _ in self._draws(shoe):
            options = self._first_moves(rest, card, v, split=True, hands_left=hands_left)
            hard = card + v
            total = _best(hard, card == 1 or v == 1)
            key = (self.up, total, total != hard, SPLIT_FIRST, int(card == v))
            ev += p * options[self.decide(key, options)]
        return ev

    def initial(self, shoe: Shoe, c1: int, c2: int) -> float:
        """The round's expected return for c1 c2 against the up card, ``shoe`` the cards left after the three."""
        packed = _pack(shoe)
        bj_dealer = self.dealer._outcomes(self._seen(packed))[BJ]
        if sorted((c1, c2)) == [1, 10]:  # the player's blackjack: a push against the dealer's
            return (1 - bj_dealer) * self.g.blackjack_pays
        options = self._first_moves(packed, c1, c2, split=False, hands_left=self.g.max_hands - 1)
        hard = c1 + c2
        total = _best(hard, c1 == 1 or c2 == 1)
        ev = options[self.decide((self.up, total, total != hard, FIRST, int(c1 == c2)), options)]
        if self.peeked:  # the round ends at once on a dealer blackjack: the stake is lost whatever the hand
            return bj_dealer * -1.0 + (1 - bj_dealer) * ev
        return ev


@dataclass(frozen=True)
class FiniteEdge:
    decks: int
    composition_dependent: float  # the house's expected win per unit of the original bet (0.0041 = 0.41 %)
    basic_strategy: float

    @property
    def rtp(self) -> float:
        return 1 - self.basic_strategy


def _starts(decks: int) -> list[tuple[int, int, int, float, Shoe]]:
    """Every (up, c1, c2) with its exact probability from a full shoe and the shoe left after the three."""
    shoe = full_shoe(decks)
    n = sum(shoe)
    out = []
    for up in VALUES:
        s1 = take(shoe, up)
        for c1 in VALUES:
            s2 = take(s1, c1)
            for c2 in VALUES:
                if c2 < c1:
                    continue
                rest = take(s2, c2)
                p = shoe[up - 1] / n * s1[c1 - 1] / (n - 1) * s2[c2 - 1] / (n - 2)
                out.append((up, c1, c2, p if c1 == c2 else 2 * p, rest))
    return out


def chart_for(g: Game, prizes: Prizes, decks: int) -> ChartDecide:
    """Total-dependent basic strategy: for each up card, the decisions of the recursion on a shoe missing only
    the up card (the same for every hand), ranked best first."""
    ranked: dict[Key, tuple[Move, ...]] = {}

    class Recorder(Decide):
        def __call__(self, key: Key, options: dict[Move, float]) -> Move:
            # the fullest choice seen decides (a forced move, as on split aces, or a resplit no longer allowed,
            # says nothing about the hands that have the choice)
            if len(options) > len(ranked.get(key, ())):
                ranked[key] = tuple(sorted(options, key=lambda m: -options[m]))
            return max(options, key=lambda m: options[m])

    full = full_shoe(decks)
    for up in VALUES:
        ref = take(full, up)
        solver = FiniteSolver(g, prizes, up, Recorder(), DealerModel(ref, up), frozen=ref)
        # the commonest hands of each total first, so the chart's decision is theirs
        for c1 in VALUES:
            for c2 in VALUES:
                if c2 >= c1 and sorted((c1, c2)) != [1, 10]:
                    solver.initial(ref, c1, c2)
        for hard in range(4, 21):  # multi-card hands of every total, hard and soft
            for aces in (False, True):
                if aces and hard > 11:
                    continue
                for ncards in (3, 4, 5):
                    solver.play(ref, hard, aces, ncards, False)
                    solver.play(ref, hard, aces, ncards, True)
    return ChartDecide(ranked)


@cache
def _chart(g: Game, prizes: Prizes, decks: int) -> ChartDecide:
    return chart_for(g, prizes, decks)


@cache
def _edge(g: Game, prizes: Prizes, decks: int) -> FiniteEdge:
    starts = _starts(decks)
    chart = _chart(g, prizes, decks)
    full = full_shoe(decks)
    models = {up: DealerModel(take(full, up), up) for up in VALUES}
    figures = []
    for decide in (Decide(), chart):
        solvers = {up: FiniteSolver(g, prizes, up, decide, models[up]) for up in VALUES}
        figures.append(-sum(p * solvers[up].initial(rest, c1, c2) for up, c1, c2, p, rest in starts))
    return FiniteEdge(decks, figures[0], figures[1])


def finite_house_edge(p: Profile, decks: int | None = None) -> FiniteEdge:
    """The profile's house edge for a shoe of ``decks`` decks (the profile's own by default)."""
    return _edge(Game.of(p), Prizes.of(p), decks or p.decks)


def basic_strategy(p: Profile, decks: int | None = None) -> ChartDecide:
    """The profile's total-dependent basic strategy for its shoe (``chart_move`` reads it)."""
    return _chart(Game.of(p), Prizes.of(p), decks or p.decks)


def chart_key(values: list[int], up: int, *, split: bool, first: bool) -> Key:
    """What the chart decides a hand of card ``values`` (1 = ace) on: ``first`` while it holds its first two
    cards and no decision was taken on it, ``split`` for a hand of a split pair."""
    hard = sum(values)
    total = _best(hard, 1 in values)
    if first and len(values) == 2:
        return (up, total, total != hard, SPLIT_FIRST if split else FIRST, int(values[0] == values[1]))
    return (up, total, total != hard, SPLIT_LATER if split else LATER, min(len(values), 6))


def chart_move(chart: ChartDecide, key: Key, allowed: set[Move]) -> Move | None:
    """The chart's decision among ``allowed`` (the best ranked that the rules open now), None when none is."""
    return next((m for m in chart.chart.get(key, ()) if m in allowed), None)


def finite_chart(p: Profile, decks: int | None = None) -> dict[str, dict[int, Move]]:
    """The basic strategy chart for the profile's shoe: a row per hand, a column per up card (1 = ace), each the
    decision on the hand's first two cards."""
    bs = basic_strategy(p, decks)
    rows: dict[str, dict[int, Move]] = {}
    for name, (c1, c2) in chart_rows().items():
        row = {}
        for up in VALUES:
            ranked = bs.chart.get(chart_key([c1, c2], up, split=False, first=True), ())
            row[up] = ranked[0] if ranked else Move.STAND  # a blackjack: nothing to decide
        rows[name] = row
    return rows
