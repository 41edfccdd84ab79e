"""One round as the session figures need it, per seat (issue 32): the bet, the result, the true count at bet time
and each decision checked against basic strategy, by replaying the round through the rules engine.

The round's description (docs/rounds.md: the archive rebuilds it, floor/reports/rounds.py; the benchmark's
simulated players write it from their own engine) is replayed by ``controller.rules.rounds.replay``, which makes
it exact (each decision with the number of cards out before it). That exact description then drives a second
engine step by step; just before each of a hand's decisions the hand's cards, the dealer's up card and the seat's
hands are read from the engine and ``judge`` says what basic strategy for the profile's shoe does there
(controller/rules/shoe_math.py) and what the decision taken costs in expectation, given what the player could
know (see ``judge``). Insurance and a co-bettor's decisions are not judged (the strategy never insures).

The count (``ShoeCount``) is fed each round's cards after the round: a round's true count is that of the cards
dealt before its bets, never a card dealt later and never a card still in the shoe.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from controller.rules.cards import Card
from controller.rules.engine import RoundEngine
from controller.rules.profile_model import Profile
from controller.rules.profiles import known_profile
from controller.rules.rounds import InvalidRound, replay
from controller.rules.shoe_math import (
    ChartDecide,
    DealerModel,
    FiniteSolver,
    Prizes,
    Shoe,
    basic_strategy,
    chart_key,
    chart_move,
    full_shoe,
    take,
)
from controller.rules.strategy import Game, Move
from controller.rules.types import INSURANCE_ACTIONS, Action, Recipient, RoundError, RuleViolation, SeatBet
from floor.reports.edges import house_edge
from floor.reports.play_stats import hi_lo, true_count

_MOVES = {
    Action.HIT: Move.HIT,
    Action.STAND: Move.STAND,
    Action.DOUBLE: Move.DOUBLE,
    Action.SPLIT: Move.SPLIT,
    Action.SURRENDER: Move.SURRENDER,
    Action.FIVE_CARD: Move.FIVE_CARD,
}


@cache
def _shipped_profile(name: str) -> Profile:
    return known_profile(name)


def shipped_profile(name: object) -> Profile:
    """``known_profile`` (a name the table sent: never a path), each name parsed and validated once per process:
    a shift's rounds name the same profile hundreds of times (the profiles ship with the installation)."""
    return _shipped_profile(name) if isinstance(name, str) else known_profile(name)


@cache
def profile_edge(name: str) -> float:
    """The profile's house edge per unit of the original bet for the shoe it deals, with basic strategy
    (controller/rules/shoe_math.py: the profile's decks): shipped with the floor when current (floor/reports/edges.py),
    else computed; cached per profile name."""
    return house_edge(shipped_profile(name))


@dataclass(frozen=True)
class DecisionCheck:
    taken: Move
    best: Move
    cost: float  # the expected return given up against the best decision, per unit of the original bet
    hand: tuple[str, ...] = ()  # the hand's cards when it was decided ("6H", "7H")
    up: str = ""  # the dealer's up card

    @property
    def matches(self) -> bool:
        return self.taken == self.best


@dataclass(frozen=True)
class SeatRound:
    round_id: str
    shoe: int | None  # the shoe's number (a change breaks a session), None when unknown
    seat: int
    player: str | None  # the rating system's identity, where the bet names one
    bet: int  # the seat's original main bet, minor units (figures.INITIAL_BETS)
    staked: (
        int  # all the seat staked against the house: hands, doubles, splits, insurance, side bets (HANDLE)
    )
    net: int  # the seat's result for the player (main, doubles, splits, side bets, insurance), minor units
    edge: float  # the profile's house edge
    true_count: float | None  # Hi-Lo true count at bet time; None: continuous shuffler or unknown
    checks: tuple[DecisionCheck, ...] = ()


@dataclass
class ShoeCount:
    """The Hi-Lo count of one shoe from the cards dealt since its shuffle (burns count as out, not as seen)."""

    decks: int
    running: int = 0
    out: int = 0

    def true(self) -> float:
        return true_count(self.running, self.out, self.decks)

    def feed(self, cards: list[Any]) -> None:
        for entry in cards:
            self.out += 1
            code = entry.get("card") if isinstance(entry, dict) else entry
            burn = isinstance(entry, dict) and "burn" in (entry.get("to"), entry.get("recipient"))
            if isinstance(code, str) and not burn:
                try:
                    self.running += hi_lo(Card.parse(code).value)
                except ValueError:
                    continue


@dataclass(frozen=True)
class Judged:
    """A decision's reference: basic strategy's move for the hand now and every open move's expected return."""

    best: Move
    values: dict[Move, float]  # per unit of the original bet, given what the player could know

    def cost(self, taken: Move) -> float:
        return max(0.0, self.values[self.best] - self.values[taken])


_MEMO_KEPT = 200_000


@dataclass(frozen=True)
class _Judge:
    """One profile's basic strategy for its shoe (shoe_math) and a finite solver per up card that plays on by it."""

    profile: Profile
    game: Game
    prizes: Prizes
    chart: ChartDecide
    full: Shoe
    solvers: dict[int, FiniteSolver]

    def solver(self, up: int) -> FiniteSolver:
        got = self.solvers.get(up)
        if got is None or len(got._memo) > _MEMO_KEPT:  # bounded: a fresh solver past this many hands
            base = take(self.full, up)
            got = self.solvers[up] = FiniteSolver(
                self.game, self.prizes, up, self.chart, DealerModel(base, up)
            )
        return got


@cache
def _judge(name: str) -> _Judge:
    p = shipped_profile(name)  # a name the table sent: never a path
    return _Judge(p, Game.of(p), Prizes.of(p), basic_strategy(p), full_shoe(p.decks), {})


def _shoe_without(full: Shoe, values: list[int]) -> Shoe | None:
    shoe = full
    for v in values:
        if not shoe[v - 1]:
            return None  # more cards of a value than the shoe holds: not this profile's shoe
        shoe = take(shoe, v)
    return shoe


def _suit_correction(j: _Judge, cards: list[Card], up: Card, shoe: Shoe) -> float:
    """The 6-7-8 prize (PT-2001 r.35, MO-2004 art.15) for the hand's actual suits, less the solver's average (it
    takes two cards of one suit as a quarter chance): suited 6-7 draws to the 8s of that suit left, an unsuited
    pair to nothing. Three 7s pay whatever the suits: no correction."""
    pair = sorted(c.value for c in cards)
    if not j.prizes.six_seven_eight or pair not in ([6, 7], [6, 8], [7, 8]):
        return 0.0
    assumed = j.prizes.on_third(pair[0], pair[1], shoe)
    if cards[0].suit != cards[1].suit:
        return -assumed
    third = ({6, 7, 8} - set(pair)).pop()
    seen = sum(1 for c in (up, *cards) if c.value == third and c.suit == cards[0].suit)
    return j.prizes.six_seven_eight * max(0, j.profile.decks - seen) / sum(shoe) - assumed


def judge(engine: RoundEngine, seat: int, hand: int) -> Judged | None:
    """Basic strategy's decision for the hand now and each decision's expected return, among the decisions the
    engine allows (PT-2001 r.36: no surrender once another hand drew).

    The reference is the total-dependent basic strategy for the profile's shoe (controller/rules/shoe_math.py,
    keyed by ``chart_key``: total, soft, pair, first two cards or the number of cards); the returns are the
    finite solver's for the shoe less the up card and the hand's cards, playing on by that strategy. They are
    what the player could know: where the dealer has not checked for blackjack (no hole card, or one looked at
    only at the end: PT-2001 r.17, r.33-34) a dealer blackjack stays possible and takes the stakes whatever the
    decision, so a decision's cost is weighed by the chance that it matters; where he has checked, none is
    possible. Where the profile pays on suits (6-7-8 of one suit) the prize is valued for the hand's own suits,
    and where those suits change the best decision, that decision is basic strategy's."""
    st = engine.seats[seat]
    h = st.hands[hand]
    up = engine.up_card
    if len(h.cards) < 2 or up is None:
        return None
    j = _judge(engine.profile.name)
    values = [c.value for c in h.cards]
    shoe = _shoe_without(j.full, [up.value, *values])
    if shoe is None:
        return None
    solver = j.solver(up.value)
    hard, aces = sum(values), 1 in values
    total = hard + 10 if aces and hard + 10 <= 21 else hard
    split = h.from_split
    first = len(values) == 2 and not h.doubled
    correction = 0.0
    if first:
        hands_left = max(0, j.game.max_hands - len(st.hands))
        options = solver.first_moves(shoe, values[0], values[1], split=split, hands_left=hands_left)
        if j.prizes.split_hands or not split:
            correction = _suit_correction(j, list(h.cards), up, shoe)
    else:
        options = {Move.STAND: solver.stand(shoe, total)}
        if total < 21:
            options[Move.HIT] = solver.hit(shoe, hard, aces, len(values), split)
        if j.game.five_card and len(values) == 5 and total <= 21 and up.value != 1:
            options[Move.FIVE_CARD] = 0.5
    allowed = {_MOVES[a] for a in engine.allowed_actions() if a in _MOVES}
    if engine.surrender_window_open and engine.explain(Action.SURRENDER, seat, hand) is None:
        allowed.add(Move.SURRENDER)
    plain = {m: v for m, v in options.items() if m in allowed}
    if not plain:
        return None
    real = {m: v + (correction if m in (Move.HIT, Move.DOUBLE) else 0.0) for m, v in plain.items()}
    key = chart_key(values, up.value, split=split, first=first)
    best = chart_move(j.chart, key, set(plain)) or max(plain, key=lambda m: plain[m])
    suited_best = max(real, key=lambda m: real[m])
    if correction and suited_best != max(plain, key=lambda m: plain[m]):
        best = suited_best  # the hand's suits, not the chart's average, decide here
    return Judged(best, real)


class _Checker:
    def __init__(self) -> None:
        self.found: dict[int, list[DecisionCheck]] = {}

    def observe(self, engine: RoundEngine, d: dict[str, Any]) -> None:
        move = _MOVES.get(Action(d["action"]))
        seat, idx = d.get("seat"), d.get("hand", 0)
        st = engine.seats.get(seat) if isinstance(seat, int) else None
        if move is None or st is None or d.get("player") is not None:
            return
        if not isinstance(idx, int) or idx >= len(st.hands):
            return
        judged = judge(engine, st.bet.seat, idx)
        if judged is None or move not in judged.values:
            return  # a decision the strategy has no figure for (the engine refuses it anyway)
        cards, up = tuple(str(c) for c in st.hands[idx].cards), str(engine.up_card or "")
        self.found.setdefault(st.bet.seat, []).append(
            DecisionCheck(move, judged.best, judged.cost(move), cards, up)
        )


def _drive(desc: dict[str, Any], checker: _Checker) -> None:
    """Replay an exact description (``engine.description()``) step by step, showing each decision first."""
    bets = [
        SeatBet(
            b["seat"], b["amount"], dict(b.get("side_bets", {})), bool(b.get("jackpot_chip")), b.get("player")
        )
        for b in desc["bets"]
    ]
    engine = RoundEngine(
        shipped_profile(desc["profile"]),
        bets,
        burn_before_deal=desc.get("burn_before_deal", 0),
        first_of_game=bool(desc.get("first_of_game", False)),
    )
    cards = deque(desc["cards"])
    fed = 0

    def feed() -> None:
        nonlocal fed
        c = cards.popleft()
        to = Recipient.from_json(c["to"]) if "to" in c else None
        engine.on_card(Card.parse(c["card"]), face_up=bool(c.get("face_up", False)), to=to)
        fed += 1

    for d in desc["decisions"]:
        while fed < d.get("after_cards", fed) and cards:
            feed()
        checker.observe(engine, d)
        if d.get("implicit") and d["action"] == "hit" and cards:
            feed()
            continue
        action = Action(d["action"])
        kwargs: dict[str, Any] = {"seat": d["seat"], "amount": d.get("amount")}
        if action not in INSURANCE_ACTIONS or d.get("player") is not None:
            kwargs["hand"] = d.get("hand", 0)
        if d.get("player") is not None:
            kwargs["player"] = d["player"]
        engine.act(action, **kwargs)


def seat_rounds(
    desc: dict[str, Any], *, round_id: str, shoe: int | None, count: float | None
) -> tuple[list[SeatRound], list[str]]:
    """The round's seats, and what could not be judged (an invalid round: no seat figures from it)."""
    try:
        result = replay(desc, profiles=shipped_profile)  # a name the table sent: never a path
    except InvalidRound as exc:
        return [], [f"round {round_id}: not replayable ({exc})"]
    exact = result.engine.description()
    checker = _Checker()
    problems: list[str] = []
    try:
        _drive(exact, checker)
    except (
        RoundError,
        RuleViolation,
        ValueError,
    ) as exc:  # the exact description always replays; said if not
        problems.append(f"round {round_id}: decisions not judged ({exc})")
        checker.found.clear()
    settled = result.settlement
    nets = settled.seat_nets
    staked: dict[int, int] = {}
    for seat, stake in [*((h.seat, h.stake) for h in settled.hands), *((c.seat, c.stake) for c in settled.co_bets),
                        *((i.seat, i.amount) for i in settled.insurance),
                        *((b.seat, b.stake) for b in settled.side_bets)]:  # fmt: skip
        staked[seat] = staked.get(seat, 0) + int(stake)
    edge = profile_edge(desc["profile"])
    out = []
    for seat, st in result.engine.seats.items():
        out.append(
            SeatRound(
                round_id,
                shoe,
                seat,
                st.bet.player,
                st.bet.amount,
                staked.get(seat, 0),
                int(nets.get(seat, 0)),
                edge,
                count,
                tuple(checker.found.get(seat, [])),
            )
        )
    return out, problems


@dataclass
class TableRounds:
    """A table's seat rounds in order, and what could not be used."""

    rounds: list[SeatRound] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
