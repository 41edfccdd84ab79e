"""One round as the session figures need it, per seat (issue 32): the bet, the result, the true count at bet time
and each decision checked against basic strategy, by replaying the round through the rules engine.

The round's description (docs/rounds.md: the archive rebuilds it, floor/rounds.py; the benchmark's
simulated players write it from their own engine) is replayed by ``controller.rules.rounds.replay``, which makes
it exact (each decision with the number of cards out before it). That exact description then drives a second
engine step by step; just before each of a hand's decisions the hand's cards, the dealer's up card and the seat's
hands are read from the engine and the strategy (controller/rules/strategy.py ``move_values``) says what basic
strategy does there and what the decision taken costs in expectation. Insurance and a co-bettor's decisions are
not judged (the strategy never insures).

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
from controller.rules.profiles import load_profile
from controller.rules.rounds import InvalidRound, replay
from controller.rules.shoe_math import finite_house_edge
from controller.rules.strategy import Game, Move, move_values
from controller.rules.types import INSURANCE_ACTIONS, Action, Recipient, RoundError, RuleViolation, SeatBet
from floor.play_stats import hi_lo, true_count

_MOVES = {
    Action.HIT: Move.HIT,
    Action.STAND: Move.STAND,
    Action.DOUBLE: Move.DOUBLE,
    Action.SPLIT: Move.SPLIT,
    Action.SURRENDER: Move.SURRENDER,
    Action.FIVE_CARD: Move.FIVE_CARD,
}


@cache
def profile_edge(name: str) -> float:
    """The profile's house edge per unit of the original bet for the shoe it deals, with basic strategy
    (controller/rules/shoe_math.py: the profile's decks); cached per profile name."""
    return finite_house_edge(load_profile(name)).basic_strategy


@cache
def _game(name: str) -> Game:
    return Game.of(load_profile(name))


@dataclass(frozen=True)
class DecisionCheck:
    taken: Move
    best: Move
    cost: float  # the expected return given up against the best decision, per unit of the original bet

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


def open_moves(engine: RoundEngine, seat: int, hand: int) -> dict[Move, float]:
    """The decisions the engine allows the hand now, each with its expected return (strategy.py): the strategy's
    figures limited to what the rules still open (PT-2001 r.36: no surrender once another hand drew)."""
    st = engine.seats[seat]
    h = st.hands[hand]
    values = [c.value for c in h.cards]
    if len(values) < 2 or engine.up_card is None:
        return {}
    first = len(values) == 2 and not h.from_split and not h.doubled
    game = _game(engine.profile.name)
    options = move_values(
        game, values, engine.up_card.value, split=h.from_split, first=first, hands=len(st.hands)
    )
    allowed = {_MOVES[a] for a in engine.allowed_actions() if a in _MOVES}
    if engine.surrender_window_open and engine.explain(Action.SURRENDER, seat, hand) is None:
        allowed.add(Move.SURRENDER)
    return {m: v for m, v in options.items() if m in allowed}


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
        options = open_moves(engine, st.bet.seat, idx)
        if move not in options:
            return  # a decision the strategy has no figure for (the engine refuses it anyway)
        best = max(options, key=lambda m: options[m])
        self.found.setdefault(st.bet.seat, []).append(
            DecisionCheck(move, best, max(0.0, options[best] - options[move]))
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
        load_profile(desc["profile"]),
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
        result = replay(desc)
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
