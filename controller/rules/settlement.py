"""Settlement of a complete round: every hand, insurance, side bets and special prizes in minor units.

Rounding (profile `payouts.rounding`): amounts that are not whole minor units (3:2 on an odd bet, half a bet)
are rounded "down" in the house's favour by default: a blackjack on 25 wins 37, a surrender of 25 gets 12 back,
five cards on 25 wins 12; "up" rounds them in the player's favour (38, 13 back, 13).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from typing import Any, NotRequired, TypedDict

from controller.rules.hands import hand_value
from controller.rules.profiles import Profile
from controller.rules.round_state import BLACKJACK, EVEN_MONEY, CoBet, HandState, SeatState, SettlingRound
from controller.rules.sidebets import side_bet_net, side_bet_result, special_prize
from controller.rules.types import SeatBet


def _floor(x: Fraction) -> int:
    return x.numerator // x.denominator


def _pay(x: Fraction, rounding: str) -> int:
    """A payment to the player, rounded as the profile says ("down": the house's favour)."""
    return _floor(x) if rounding == "down" else -_floor(-x)


@dataclass(frozen=True)
class HandResult:
    seat: int
    hand: int
    cards: list[str]
    total: int
    stake: int
    doubled: bool
    outcome: str  # blackjack | win | push | lose | bust | surrender | even_money | five_card
    net: int


@dataclass(frozen=True)
class CoBetResult:
    """Another player's bet on a shared seat, decided by the titular's hand (PT-2001 r.15-16, r.28, r.30)."""

    seat: int
    player: str | None  # always named on a co-bet (RoundEngine refuses one without)
    hand: int
    stake: int
    outcome: str
    net: int


@dataclass(frozen=True)
class InsuranceResult:
    seat: int
    amount: int
    won: bool
    net: int


@dataclass(frozen=True)
class SideBetResult:
    seat: int
    name: str
    stake: int
    result: str | None  # the winning pay-table entry, None = lost
    net: int


@dataclass(frozen=True)
class PrizeResult:
    seat: int
    hand: int
    name: str  # six_seven_eight_suited | three_sevens
    net: int


class JackpotPlay(TypedDict):
    """A jackpot chip in the round: the seat, the co-bettor who played it (none: the titular) and the seat's first
    four cards (PT-2001 r.42)."""

    seat: int
    player: NotRequired[str | None]
    first_cards: list[str]


@dataclass(frozen=True)
class Settlement:
    profile: str
    dealer_cards: list[str]
    dealer_total: int
    dealer_blackjack: bool
    dealer_bust: bool
    hands: list[HandResult]
    insurance: list[InsuranceResult]
    side_bets: list[SideBetResult]
    prizes: list[PrizeResult]
    jackpot: list[JackpotPlay]  # seats with a jackpot chip and their first four cards (PT-2001 r.42)
    seat_nets: dict[int, int]
    total_net: int  # players' total; the house's result is its negative
    dealer_errors: list[dict[str, str | None]] = field(default_factory=list)
    co_bets: list[CoBetResult] = field(default_factory=list)  # other players on a shared seat (in seat_nets)
    co_side_bets: list[dict[str, int | str | None]] = field(
        default_factory=list
    )  # their side bets, insurance and prizes

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seat_nets"] = {str(k): v for k, v in self.seat_nets.items()}
        for key in ("co_bets", "co_side_bets"):  # only on a shared seat (the live table has none today)
            if not out[key]:
                del out[key]
        return out


def _hand_outcome(engine: SettlingRound, h: HandState) -> tuple[str, int]:
    p = engine.profile
    dealer_bj = engine.dealer_blackjack()
    if h.status == "surrendered":
        return "surrender", -(h.stake - _pay(Fraction(h.stake, 2), p.rounding))  # PT-2001 r.36: loses half
    if h.status == "even_money":
        return "even_money", h.base_bet  # PT-2001 r.34
    if h.status == "five_card":
        return "five_card", _pay(Fraction(h.base_bet, 2), p.rounding)  # MO-2004 art.19: paid half the bet
    if h.status == "bust":
        return "bust", -h.stake  # MO-2004 art.7.2: loses even if the dealer busts
    if h.status == "blackjack":
        if dealer_bj:
            return "push", 0  # PT-2001 r.21
        return "blackjack", _pay(h.base_bet * p.blackjack_pays, p.rounding)
    if dealer_bj:
        if p.original_bet_only == "doubles" and h.doubled:
            return "lose", -h.base_bet  # MO-2004 art.10.7: loss limited to the original bet
        return "lose", -h.stake  # PT-2001 r.20: blackjack beats any 21
    total, dealer = h.value.total, hand_value(engine.dealer).total
    if dealer > 21 or total > dealer:
        return "win", _pay(h.stake * p.win_pays, p.rounding)
    if total == dealer:
        return "push", 0  # PT-2001 r.24
    return "lose", -h.stake


def _settle_co_bet(
    engine: SettlingRound,
    seat: int,
    st: SeatState,
    cb: CoBet,
    out: list[CoBetResult],
    extra: list[dict[str, int | str | None]],
) -> int:
    """PT-2001 r.28: a co-bettor who did not follow a split is decided "pelo resultado alcançado para a primeira
    das duas apostas do titular"; one who followed has an equal bet on the second hand too. r.30: a double."""
    p, amount, player = engine.profile, cb.bet.amount, cb.bet.player
    total = 0
    hands = [0, 1] if cb.follows_split and len(st.hands) > 1 else [0]
    for i in hands:
        h = st.hands[i]
        doubled = i in cb.doubled
        probe = replace(h, base_bet=amount, stake=amount * (2 if doubled else 1), doubled=doubled)
        if probe.status == EVEN_MONEY and p.insurance.co_bet_even_money == "blackjack":
            # house choice: the titular's even money (r.34) is his own option; the co-bet stays a blackjack
            probe = replace(probe, status=BLACKJACK)
        outcome, n = _hand_outcome(engine, probe)
        out.append(CoBetResult(seat, player, i, probe.stake, outcome, n))
        total += n
        prize = _prize_of(engine, probe) if p.prizes.co_bets else None
        mult = p.special_prizes.get(prize, 0) if prize else 0
        if mult:
            base = probe.stake if doubled and p.prizes.after_double == "doubled_bet" else amount
            extra.append({"seat": seat, "player": player, "kind": "prize", "name": prize, "net": mult * base})
            total += mult * base
    if cb.insurance:
        n = _insurance_net(p, cb.insurance, engine.dealer_blackjack())
        extra.append({"seat": seat, "player": player, "kind": "insurance", "amount": cb.insurance, "net": n})
        total += n
    for name, stake in cb.bet.side_bets.items():
        result, n = _side_bet_outcome(engine, st, cb.bet, name, stake)
        extra.append({"seat": seat, "player": player, "kind": "side_bet", "name": name, "stake": stake,
                      "result": result, "net": n})  # fmt: skip
        total += n
    return total


def _insurance_net(p: Profile, insurance: int, won: bool) -> int:
    """An insurance stake's net (a titular's or a co-bettor's): PT-2001 r.33, it wins double when the dealer has
    a blackjack, else it is lost."""
    return _pay(insurance * p.insurance_pays, p.rounding) if won else -insurance


def _side_bet_outcome(
    engine: SettlingRound, st: SeatState, bet: SeatBet, name: str, stake: int
) -> tuple[str | None, int]:
    """One side bet's winning pay-table entry (None: lost) and net, for the titular's bet or a co-bettor's: an
    any-pair bet paid once per pair formed when the profile says so (``each_pair``)."""
    rule = engine.profile.side_bets[name]
    on = _side_bet_seat(engine, st, bet, name)
    result = side_bet_result(rule, on.dealt, on.pairs_formed, on.first_pair_split)
    times = on.pairs_formed if name == "any_pair" and result and rule.each_pair else 1
    return result, side_bet_net(rule, result, stake, times=times)


def _side_bet_seat(engine: SettlingRound, st: SeatState, bet: SeatBet, name: str) -> SeatState:
    """The seat whose cards settle a side bet: its own, or for an any-pair bet the seat it names (MO-2004 art.13.1
    "de uma ou mais mãos de qualquer jogador", checked when the bets were taken)."""
    if name == "any_pair" and bet.pair_bet_on is not None:
        return engine.seats[bet.pair_bet_on]
    return st


def _prize_of(engine: SettlingRound, h: HandState) -> str | None:
    """The special prize of one hand's three cards, as the profile's `special_prizes` choices allow."""
    rules = engine.profile.prizes
    if h.from_split and not rules.split_hands:
        return None
    if h.doubled and rules.after_double == "no":
        return None
    return special_prize(h.cards)


def settle(engine: SettlingRound) -> Settlement:
    p = engine.profile
    hands: list[HandResult] = []
    insurance: list[InsuranceResult] = []
    side: list[SideBetResult] = []
    prizes: list[PrizeResult] = []
    jackpot: list[JackpotPlay] = []
    co_bets: list[CoBetResult] = []
    co_extra: list[dict[str, int | str | None]] = []
    seat_nets: dict[int, int] = {}
    dealer_bj = engine.dealer_blackjack()
    for seat, st in engine.seats.items():
        net = 0
        for i, h in enumerate(st.hands):
            outcome, n = _hand_outcome(engine, h)
            hands.append(
                HandResult(seat, i, [str(c) for c in h.cards], h.value.total, h.stake, h.doubled, outcome, n)
            )
            net += n
            prize = _prize_of(engine, h)
            mult = p.special_prizes.get(prize, 0) if prize else 0
            if prize and mult:  # PT-2001 r.35: 3 x the bet, whatever the hand's result
                base = h.stake if h.doubled and p.prizes.after_double == "doubled_bet" else h.base_bet
                prizes.append(PrizeResult(seat, i, prize, mult * base))
                net += mult * base
        if p.prizes.across_split and len(st.hands) > 1 and not any(x.seat == seat for x in prizes):
            # The player "a quem forem distribuídas" 6-7-8 / three 7s over the first three cards dealt to the
            # seat, split pairs included (house choice; compare r.42 for the jackpot).
            prize = special_prize(st.dealt[:3])
            mult = p.special_prizes.get(prize, 0) if prize else 0
            if prize and mult:
                prizes.append(PrizeResult(seat, 0, prize, mult * st.bet.amount))
                net += mult * st.bet.amount
        if st.insurance:
            won = dealer_bj
            n = _insurance_net(p, st.insurance, won)
            insurance.append(InsuranceResult(seat, st.insurance, won, n))
            net += n
        for name, stake in st.bet.side_bets.items():
            result, n = _side_bet_outcome(engine, st, st.bet, name, stake)
            side.append(SideBetResult(seat, name, stake, result, n))
            net += n
        for cb in st.co_bets:
            net += _settle_co_bet(engine, seat, st, cb, co_bets, co_extra)
        first_cards = [str(c) for c in st.jackpot_cards(p.jackpot_split_cards)[:4]]
        if st.bet.jackpot_chip:
            jackpot.append({"seat": seat, "first_cards": first_cards})
        for cb in st.co_bets:
            # PT-2001 r.45 "Apenas poderão jogar para o jackpot os jogadores que tenham feito a sua aposta no jogo
            # principal" (a complementary bet is one, r.15), r.47 "uma ficha por cada jogador", r.46 "cuja decisão
            # depende unicamente das primeiras duas, três ou quatro cartas do jogador": judged on the seat's first
            # cards (r.42), the cards the co-bettor plays on.
            if cb.bet.jackpot_chip:
                jackpot.append({"seat": seat, "player": cb.bet.player, "first_cards": first_cards})
        seat_nets[seat] = net
    total = hand_value(engine.dealer).total if engine.dealer else 0
    return Settlement(
        profile=p.name,
        dealer_cards=[str(c) for c in engine.dealer],
        dealer_total=total,
        dealer_blackjack=dealer_bj,
        dealer_bust=total > 21,
        hands=hands,
        insurance=insurance,
        side_bets=side,
        prizes=prizes,
        jackpot=jackpot,
        seat_nets=seat_nets,
        total_net=sum(seat_nets.values()),
        dealer_errors=[e.to_json() for e in engine.dealer_errors],
        co_bets=co_bets,
        co_side_bets=co_extra,
    )
