"""Incremental round engine: one round, card by card and decision by decision.

The live table drives it as cards come out of the shoe; `tablectl replay` drives the same engine from a round
file (docs/rounds.md). Pure logic, no I/O. Rule citations come from the profile (`profile.cite(key)`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.rules.cards import Card
from controller.rules.hands import HandValue, dealer_must_draw, hand_value, is_blackjack
from controller.rules.profiles import Profile
from controller.rules.types import (
    INSURANCE_ACTIONS,
    Action,
    CardOutcome,
    DealerError,
    Recipient,
    RoundError,
    RoundPhase,
    RuleViolation,
    SeatBet,
    Turn,
)

if TYPE_CHECKING:
    from controller.rules.settlement import Settlement

OPEN, STOOD, BUST, SURRENDERED, BLACKJACK, EVEN_MONEY, FIVE_CARD = (
    "open", "stood", "bust", "surrendered", "blackjack", "even_money", "five_card",
)  # fmt: skip


@dataclass
class HandState:
    seat: int
    base_bet: int  # the seat's original bet (each split hand carries the same, PT-2001 r.26)
    stake: int  # base_bet, doubled after a double
    cards: list[Card] = field(default_factory=list)
    from_split: bool = False
    split_aces: bool = False
    doubled: bool = False
    fixed_aces: int = 0  # PT-2001 r.32: a soft double keeps that ace at 1
    status: str = OPEN
    needs_card: bool = False  # a card is owed: second card of a split hand, the double card

    @property
    def value(self) -> HandValue:
        return hand_value(self.cards, fixed_aces=self.fixed_aces)

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.cards, from_split=self.from_split)


@dataclass
class CoBet:
    """Another player's bet on a seat whose titular decides the play (PT-2001 r.15-16, MO-2004 art.20)."""

    bet: SeatBet
    follows_split: bool = False  # PT-2001 r.28: an equal bet joined to the titular's second hand
    doubled: set[int] = field(default_factory=set)  # PT-2001 r.30: hands on which this bettor doubled too
    insurance: int = 0  # PT-2001 r.15: "são livres de o fazer, ou não"


@dataclass
class SeatState:
    bet: SeatBet
    hands: list[HandState]
    co_bets: list[CoBet] = field(default_factory=list)
    dealt: list[Card] = field(default_factory=list)  # every card this seat received, in order (PT-2001 r.42)
    insurance: int = 0
    insurance_decided: bool = False
    pairs_formed: int = 0  # MO-2004 art.13.1: initial pair, then each new pair after a split
    declined: set[int | str] = field(default_factory=set)  # MO-2004 art.16.5: pair values not split
    first_pair_split: bool = False  # MO-2004 art.13.2.2


class RoundEngine:
    def __init__(
        self,
        profile: Profile,
        bets: list[SeatBet],
        *,
        burn_before_deal: int = 0,
        first_of_game: bool = False,
    ) -> None:
        self.profile = profile
        self.burn_before_deal = burn_before_deal
        self.first_of_game = first_of_game  # MO-2004 art.5.1.1: the game's first card may be valid face up
        if burn_before_deal < 0:
            raise RoundError(f"burn_before_deal must be >= 0, got {burn_before_deal}")
        self._validate_bets(bets)
        order = profile.seat_order({b.seat for b in bets})
        by_seat: dict[int, SeatBet] = {}
        co: dict[int, list[CoBet]] = {}
        for b in bets:  # the first bet on a seat is its titular's (PT-2001 r.15 "jogador titular do lugar")
            if b.seat in by_seat:
                co.setdefault(b.seat, []).append(CoBet(b))
            else:
                by_seat[b.seat] = b
        self.seats: dict[int, SeatState] = {
            s: SeatState(by_seat[s], [HandState(s, by_seat[s].amount, by_seat[s].amount)], co.get(s, []))
            for s in order
        }
        self.dealer: list[Card] = []
        self.phase = RoundPhase.INITIAL_DEAL
        self._plan: list[Recipient] = [Recipient.player(s) for s in order] + [Recipient.dealer()]
        self._plan += [Recipient.player(s) for s in order]
        if profile.hole_card:
            self._plan.append(Recipient.dealer())  # PT-2001 r.17: the dealer's second card, face down
        self._plan_pos = 0
        self._burns = burn_before_deal
        self._held: list[Card] = []  # PT-2001 r.18: unseen card for the next player asking, else the dealer
        self._additional_dealt = False  # PT-2001 r.36: surrender only before any additional card
        self._dealer_needs_second = False
        self._dealer_plays = False
        self._ended_by = ""  # "dealer" (stood / bust / blackjack) or "nobody" (PT-2001 r.22)
        self._seen = Counter()
        self._cards_in: list[dict[str, Any]] = []
        self._decisions: list[dict[str, Any]] = []
        self._errors: list[DealerError] = []
        self._held_log: list[dict[str, Any]] = []  # where held cards (PT-2001 r.18) finally went
        self._why: list[str] = []  # per card: where it went and why (the dispute report)
        self._card_count = 0
        self._dealt_count = 0  # cards dealt to a hand or the dealer (burns excluded): MO-2004 art.5.1.1
        self._late_second = False  # the dealer's second card came after nobody was left in play (art.7.1)
        self._burnt_late = False  # ... and the burn before it (MO-2004 art.4.2)
        self._in_card = False

    # ------------------------------------------------------------------ set-up

    def _validate_bets(self, bets: list[SeatBet]) -> None:
        p = self.profile
        if not bets:
            raise RoundError("no bets: a round needs at least one seat with a bet", p.cite("bet_limits"))
        seen: set[int] = set()
        for b in bets:
            where = f"seat {b.seat}"
            if not isinstance(b.seat, int) or isinstance(b.seat, bool) or not 1 <= b.seat <= p.seats:
                # The seats rule (PT-2001 r.2, MO-2004 art.3.1, ...), not the decks rule.
                rule = p.citations.get("seats") or p.cite("deal_order")
                raise RoundError(f"unknown seat {b.seat!r}: {p.name} has seats 1-{p.seats}", rule)
            if b.seat in seen:
                self._validate_co_bet(b, [x for x in bets if x.seat == b.seat])
            seen.add(b.seat)
            if not isinstance(b.amount, int) or isinstance(b.amount, bool):
                raise RoundError(f"{where}: bet must be an integer in minor units, got {b.amount!r}")
            if not p.min_bet <= b.amount <= p.max_bet:
                # Below the minimum breaks the minimum rule (PT-2001 r.14, PT-ONLINE-2015 r.9); above the
                # maximum the maximum rule (PT-2001 r.37, PT-ONLINE-2015 r.11).
                rule = p.cite("bet_limits") if b.amount < p.min_bet else p.cite("max_bet")
                raise RoundError(
                    f"{where}: bet {b.amount} outside the table limits {p.min_bet}-{p.max_bet}", rule
                )
            if p.multiple_of_min and b.amount % p.min_bet:
                raise RoundError(
                    f"{where}: bet {b.amount} is not a multiple of the minimum {p.min_bet}",
                    p.cite("bet_limits"),
                )
            for name, stake in b.side_bets.items():
                rule = p.side_bets.get(name)
                if rule is None:
                    known = ", ".join(p.side_bets) or "none"
                    raise RoundError(
                        f"{where}: side bet {name!r} not offered by {p.name} (offered: {known})",
                        p.cite("side_bets"),
                    )
                if not isinstance(stake, int) or isinstance(stake, bool) or stake <= 0:
                    raise RoundError(
                        f"{where}: side bet {name} stake must be a positive integer, got {stake!r}"
                    )
                if rule.stake == "half_main" and stake * 2 != b.amount:
                    raise RoundError(
                        f"{where}: side bet {name} stake {stake} must be half the main bet {b.amount}",
                        p.cite("side_bets"),
                    )
            if p.max_side_bets and len(b.side_bets) > p.max_side_bets:
                # MO-2004 art.13: "Para além da aposta inicial e aposta de seguro, o jogador pode ainda fazer
                # uma das seguintes apostas" — one side bet besides the main bet and insurance.
                raise RoundError(
                    f"{where}: {len(b.side_bets)} side bets ({', '.join(sorted(b.side_bets))}); "
                    f"{p.name} allows {p.max_side_bets} besides the main bet and insurance",
                    p.cite("side_bets"),
                )
            if b.jackpot_chip and not p.jackpot_allowed:
                raise RoundError(f"{where}: {p.name} has no progressive jackpot", p.cite("jackpot"))
        if p.round_limit:
            # IT: "La somma delle puntate nel corso di una singola mano non potrà in ogni caso superare il limite
            # stabilito dalla normativa in vigore" — all of one player's bets in the round, every position and
            # side bet included.
            totals: dict[str, int] = {}
            for b in bets:
                who = self._player_key(b)
                totals[who] = totals.get(who, 0) + b.amount + sum(b.side_bets.values())
            for who, total in totals.items():
                if total > p.round_limit:
                    raise RoundError(
                        f"{who}: bets in this round total {total}, above the limit {p.round_limit} "
                        "for one player's bets in a round (every position and side bet counted)",
                        p.cite("round_limit"),
                    )

    def _validate_co_bet(self, b: SeatBet, on_seat: list[SeatBet]) -> None:
        """Several players on one seat: PT-2001 r.15-16, MO-2004 art.20 (at most `table.max_players_per_seat`)."""
        p, where = self.profile, f"seat {b.seat}"
        rule = p.cite("multiple_players")
        if p.max_players_per_seat == 1:
            raise RoundError(
                f"{where}: more than one bet for the same seat ({p.name}: one player per seat)", rule
            )
        names = [x.player for x in on_seat]
        if any(n is None for n in names[1:]) or len(set(names)) != len(names):
            raise RoundError(
                f"{where}: several bets on one seat need a different `player` each (the first is the titular's)",
                rule,
            )
        if p.max_players_per_seat and len(on_seat) > p.max_players_per_seat:
            raise RoundError(
                f"{where}: {len(on_seat)} players, at most {p.max_players_per_seat} may bet on one seat", rule
            )
        total = sum(x.amount for x in on_seat)
        if total > p.max_bet:
            # PT-2001 r.15: "desde que o valor da aposta ... ou o somatório ... não atinja ainda o máximo"
            raise RoundError(f"{where}: the seat's bets total {total}, above the maximum {p.max_bet}", rule)

    def _player_key(self, b: SeatBet) -> str:
        if b.player is not None:
            return f"player {b.player!r}"
        return "the player" if self.profile.single_player else f"seat {b.seat}"

    def _committed(self, who: str) -> int:
        """Everything one player has staked in this round so far (IT round limit)."""
        total = 0
        for st in self.seats.values():
            if self._player_key(st.bet) == who:
                total += sum(h.stake for h in st.hands) + st.insurance + sum(st.bet.side_bets.values())
            for cb in st.co_bets:
                if self._player_key(cb.bet) == who:
                    total += cb.bet.amount * (1 + cb.follows_split + len(cb.doubled)) + cb.insurance
                    total += sum(cb.bet.side_bets.values())
        return total

    def _over_round_limit(self, seat: int, extra: int) -> RuleViolation | None:
        p = self.profile
        if not p.round_limit:
            return None
        who = self._player_key(self.seats[seat].bet)
        total = self._committed(who) + extra
        if total > p.round_limit:
            return RuleViolation(
                f"{who}: {extra} more would make this round's bets {total}, above the limit {p.round_limit}",
                p.cite("round_limit"),
            )
        return None

    # ------------------------------------------------------------------ queries

    @property
    def up_card(self) -> Card | None:
        return self.dealer[0] if self.dealer else None

    def is_complete(self) -> bool:
        return self.phase is RoundPhase.COMPLETE

    @property
    def dealer_errors(self) -> list[DealerError]:
        return list(self._errors)

    def dealer_blackjack(self) -> bool:
        return is_blackjack(self.dealer[:2]) if len(self.dealer) >= 2 else False

    def _hand_ref(self, h: HandState) -> Recipient:
        return Recipient.player(h.seat, self.seats[h.seat].hands.index(h))

    def _current(self) -> HandState | None:
        for seat in self.seats.values():
            for h in seat.hands:
                if h.status == OPEN:
                    return h
        return None

    def next_hand(self) -> Recipient | None:
        """The hand that plays next (even while it is owed a card), None outside the players' phases."""
        if self.phase not in (RoundPhase.INSURANCE, RoundPhase.PLAYERS):
            return None
        h = self._current()
        return self._hand_ref(h) if h is not None else None

    @property
    def surrender_window_open(self) -> bool:
        """No additional card dealt yet: surrender is still possible (PT-2001 r.36, MO-2004 art.18.2)."""
        return self.phase in (RoundPhase.INSURANCE, RoundPhase.PLAYERS) and not self._additional_dealt

    def _insurance_queue(self) -> list[int]:
        return [s for s, st in self.seats.items() if not st.insurance_decided]

    def turn(self) -> Turn | None:
        if self.phase is RoundPhase.INSURANCE:
            q = self._insurance_queue()
            return Turn("insurance", q[0], 0) if q else None
        if self.phase is RoundPhase.PLAYERS:
            h = self._current()
            if h is not None and not h.needs_card:
                return Turn("player", h.seat, self.seats[h.seat].hands.index(h))
            return None
        if self.phase is RoundPhase.DEALER:
            return Turn("dealer")
        return None

    def expected_recipient(self) -> Recipient | None:
        if self.phase is RoundPhase.COMPLETE:
            return None
        if self._burns:
            return Recipient.burn()
        if self.phase is RoundPhase.INITIAL_DEAL:
            return self._plan[self._plan_pos]
        if self.phase is RoundPhase.PLAYERS:
            h = self._current()
            if h is None:
                return None
            if h.needs_card or self._why_not(h, Action.HIT) is None:
                return self._hand_ref(h)
            return None
        if self.phase is RoundPhase.DEALER and self._dealer_needs_card():
            return Recipient.dealer()
        return None

    def allowed_actions(self) -> frozenset[Action]:
        if self.phase is RoundPhase.INSURANCE:
            q = self._insurance_queue()
            if not q:
                return frozenset()
            return frozenset(a for a in INSURANCE_ACTIONS if self._why_not_insurance(q[0], a, None) is None)
        h = self._current() if self.phase is RoundPhase.PLAYERS else None
        if h is None or h.needs_card:
            return frozenset()
        return frozenset(a for a in Action if a not in INSURANCE_ACTIONS and self._why_not(h, a) is None)

    # ------------------------------------------------------------------ rules for decisions

    def _why_not(self, h: HandState, action: Action) -> RuleViolation | None:
        """The rule that forbids `action` on hand `h` now, or None when it is allowed."""
        p, play = self.profile, self.profile.play
        v = h.value
        if action is Action.HIT and len(h.cards) >= 2:  # the specific rule first, then the generic state
            if h.split_aces:
                return RuleViolation("split aces receive one card each", p.cite("split_aces"))
            if h.doubled:
                return RuleViolation("a doubled hand receives one card only", p.cite("after_double"))
            if v.total >= 21:
                return RuleViolation(f"no card may be drawn on {v.total}", p.cite("draw_on_21"))
        if h.split_aces and action in (Action.DOUBLE, Action.HIT) and len(h.cards) >= 2:
            # Name the book's rule rather than the generic state (PT-2001 r.26, RO "except split aces").
            return RuleViolation("split aces receive one card each", p.cite("split_aces"))
        if action is Action.SPLIT and h.split_aces and not play.resplit_aces:
            return RuleViolation("split aces may not be split again", p.cite("split_aces"))  # PT-2001 r.26
        if action is Action.FIVE_CARD and not play.five_card_rule:
            return RuleViolation("no five-card rule in this profile", p.cite("five_card"))
        if action is Action.SURRENDER and not play.surrender:
            return RuleViolation("surrender is not offered", p.cite("surrender"))
        if h.status != OPEN:
            return RuleViolation(f"hand is {h.status}, no more decisions", p.cite("stand"))
        if h.needs_card:
            return RuleViolation("the hand is owed a card first", p.cite("deal_order"))
        if action is Action.HIT:
            if h.split_aces:
                return RuleViolation("split aces receive one card each", p.cite("split_aces"))
            if h.doubled:
                return RuleViolation("a doubled hand receives one card only", p.cite("after_double"))
            if v.total >= 21:
                return RuleViolation(f"no card may be drawn on {v.total}", p.cite("draw_on_21"))
            return None
        if action is Action.STAND:
            if v.total < play.min_stand_total and not h.split_aces:
                return RuleViolation(
                    f"may not stand on {v.total}: only above {play.min_stand_total - 1}", p.cite("stand")
                )
            return None
        if action is Action.DOUBLE:
            if play.double == "none":
                return RuleViolation("doubling is not offered", p.cite("double"))
            if len(h.cards) != 2:
                return RuleViolation("double only on the first two cards", p.cite("double"))
            if h.split_aces:
                return RuleViolation("split aces receive one card each", p.cite("split_aces"))
            if h.from_split and not play.double_after_split:
                return RuleViolation("no double after a split", p.cite("double_after_split"))
            totals = {v.total, sum(c.value for c in h.cards)}
            allowed = {"9-11": {9, 10, 11}, "11": {11}}.get(play.double)
            if allowed is not None and not totals & allowed:
                want = "9, 10 or 11" if play.double == "9-11" else "11"
                rule = p.cite("double_after_split") if h.from_split else p.cite("double")
                return RuleViolation(f"double only on {want}, not on {v.total}", rule)
            return self._over_round_limit(h.seat, h.base_bet)
        if action is Action.SPLIT:
            if len(h.cards) != 2:
                return RuleViolation("split only a two-card pair", p.cite("split"))
            a, b = h.cards
            same = a.rank == b.rank if play.split_match == "rank" else a.value == b.value
            if not same:
                return RuleViolation(f"{a} and {b} are not a pair", p.cite("split"))
            if h.split_aces and not play.resplit_aces:
                return RuleViolation("split aces may not be split again", p.cite("split_aces"))
            n = len(self.seats[h.seat].hands)
            if play.max_hands and n >= play.max_hands:
                rule = p.cite("resplit") if h.from_split else p.cite("split")
                return RuleViolation(f"split limit reached: at most {play.max_hands} hands", rule)
            key = self._pair_key(a)
            if not play.resplit_after_declining and not a.is_ace and key in self.seats[h.seat].declined:
                # MO-2004 art.16.5: "pode ser permitido separar mais uma vez, a não ser que, anteriormente,
                # tenha já decidido não separar" (aces: art.16.3).
                return RuleViolation(
                    f"{a} and {b}: the player already declined to split this pair value in this round",
                    p.cite("resplit"),
                )
            return self._over_round_limit(h.seat, h.base_bet)
        if action is Action.SURRENDER:
            return self._why_not_surrender(h)
        if action is Action.FIVE_CARD:
            if not play.five_card_rule:
                return RuleViolation("no five-card rule in this profile", p.cite("five_card"))
            if len(h.cards) != 5 or v.bust:
                return RuleViolation("needs exactly five cards not above 21", p.cite("five_card"))
            if self.up_card is not None and self.up_card.is_ace:
                return RuleViolation("not when the dealer's first open card is an ace", p.cite("five_card"))
            return None
        return RuleViolation(f"{action} is not a hand decision", p.cite("deal_order"))

    def _pair_key(self, card: Card) -> int | str:
        return card.value if self.profile.play.split_match == "value" else card.rank

    def _note_decline(self, h: HandState) -> None:
        """MO-2004 art.16.5: a pair the player could split and did not is remembered for the round."""
        if (
            len(h.cards) == 2
            and h.status == OPEN
            and not h.needs_card
            and self._why_not(h, Action.SPLIT) is None
        ):
            self.seats[h.seat].declined.add(self._pair_key(h.cards[0]))

    def explain(self, action: Action | str, seat: int, hand: int = 0) -> RuleViolation | None:
        """Why `action` is forbidden for seat/hand whatever the moment (the profile or the cards).

        None when only the timing is wrong. Used to name the book's rule for a decision that came too late
        to apply (e.g. a second card on split aces, PT-2001 r.26; even money against a ten, PT-2001 r.34).
        """
        p = self.profile
        try:
            action = Action(action)
        except ValueError:
            return RuleViolation(f"unknown decision {action!r}", p.cite("deal_order"))
        st = self.seats.get(seat)
        if st is None:
            return RuleViolation(f"no bet on seat {seat}", p.cite("deal_order"))
        never = self._never_offered(action)
        if never is not None:
            return never
        if action is Action.EVEN_MONEY and (not st.hands[0].blackjack or len(st.hands) > 1):
            return RuleViolation(
                "even money only for a blackjack against " + self._em_vs_text(), p.cite("even_money")
            )
        if action in INSURANCE_ACTIONS or hand >= len(st.hands):
            return None
        h = st.hands[hand]
        # Judge the cards and the profile only: as if the hand were still open and not owed a card.
        probe = HandState(
            h.seat, h.base_bet, h.stake, list(h.cards), h.from_split, h.split_aces, h.doubled, h.fixed_aces
        )
        if action is Action.SURRENDER:
            return self._why_not_surrender(probe)
        return self._why_not(probe, action)

    def _why_not_surrender(self, h: HandState) -> RuleViolation | None:
        p = self.profile
        if not p.play.surrender:
            return RuleViolation("surrender is not offered", p.cite("surrender"))
        if h.status != OPEN or h.needs_card:
            return RuleViolation(f"hand is {h.status}, cannot surrender", p.cite("surrender"))
        if self.up_card is not None and self.up_card.is_ace and not p.play.surrender_vs_ace:
            return RuleViolation("no surrender when the dealer's open card is an ace", p.cite("surrender"))
        if h.from_split or len(h.cards) != 2:
            return RuleViolation("surrender only on the first two cards", p.cite("surrender"))
        if self._additional_dealt:
            return RuleViolation(
                "surrender only before the dealer deals any additional card", p.cite("surrender")
            )
        return None

    def _insurance_bounds(self, seat: int) -> tuple[int, int]:
        ins, bet = self.profile.insurance, self.seats[seat].bet.amount
        hi = (ins.max * bet).numerator // (ins.max * bet).denominator  # rounded down to the minor unit
        lo = hi if ins.min == ins.max else -((-ins.min * bet).numerator // (ins.min * bet).denominator)
        return max(lo, 1), hi

    def _default_insurance(self, seat: int) -> int:
        """Insurance without an amount: the most the profile allows (a multiple of the minimum if required)."""
        hi = self._insurance_bounds(seat)[1]
        if self.profile.insurance.multiple_of_min:
            hi -= hi % self.profile.min_bet
        return hi

    def _why_not_insurance(self, seat: int, action: Action, amount: int | None) -> RuleViolation | None:
        p = self.profile
        st = self.seats.get(seat)
        if st is None:
            return RuleViolation(f"no bet on seat {seat}", p.cite("insurance"))
        if self.phase is not RoundPhase.INSURANCE or st.insurance_decided:
            return RuleViolation(
                f"seat {seat}: insurance and even money only right after the initial deal",
                p.cite("insurance"),
            )
        if action is Action.NO_INSURANCE:
            return None
        never = self._never_offered(action)
        if never is not None:
            return never
        if action is Action.INSURANCE:
            lo, hi = self._insurance_bounds(seat)
            if amount is not None and not lo <= amount <= hi:
                return RuleViolation(
                    f"seat {seat}: insurance {amount} outside {lo}-{hi} (bet {st.bet.amount})",
                    p.cite("insurance"),
                )
            stake = amount if amount is not None else self._default_insurance(seat)
            if p.insurance.multiple_of_min and stake % p.min_bet:
                # PT-2001 r.14 ("igual ao mínimo ... ou múltiplo dele") applied to the insurance stake.
                return RuleViolation(
                    f"seat {seat}: insurance {stake} is not a multiple of the minimum {p.min_bet}",
                    p.cite("bet_limits"),
                )
            return self._over_round_limit(seat, stake)
        if action is Action.EVEN_MONEY:
            if st.hands[0].status != BLACKJACK:
                return RuleViolation(
                    "even money only for a blackjack against " + self._em_vs_text(), p.cite("even_money")
                )
            return None
        return RuleViolation(f"{action} is not an insurance decision", p.cite("insurance"))

    def _em_vs_text(self) -> str:
        return " or ".join(
            "an ace" if k == "A" else "a ten-value card" for k in sorted(self.profile.insurance.even_money_vs)
        )

    def _never_offered(self, action: Action) -> RuleViolation | None:
        """Why insurance or even money is not offered in this round at all: the profile or the dealer's open
        card (PT-2001 r.33-34, MO-2004 art.10.3, art.12)."""
        p = self.profile
        if action is Action.EVEN_MONEY and not self._even_money_offered():
            if not p.insurance.even_money:
                return RuleViolation("even money is not offered", p.cite("even_money"))
            return RuleViolation(
                "even money only for a blackjack against " + self._em_vs_text(), p.cite("even_money")
            )
        up = self.up_card
        if action is Action.INSURANCE and not (p.insurance.offered and up is not None and up.is_ace):
            return RuleViolation("insurance only when the dealer's open card is an ace", p.cite("insurance"))
        return None

    def _even_money_offered(self) -> bool:
        ins, up = self.profile.insurance, self.up_card
        if not ins.even_money or up is None:
            return False
        return ("A" in ins.even_money_vs and up.is_ace) or ("T" in ins.even_money_vs and up.is_ten_value)

    # ------------------------------------------------------------------ decisions

    def act(
        self,
        action: Action | str,
        *,
        amount: int | None = None,
        seat: int | None = None,
        hand: int | None = None,
        player: str | None = None,
    ) -> None:
        """Apply a decision for the hand whose turn it is (or `seat` for insurance / an early surrender).

        `player`: a co-bettor's own decision on a shared seat (insurance, following a split or a double)."""
        try:
            action = Action(action)
        except ValueError:
            raise RuleViolation(f"unknown decision {action!r}", self.profile.cite("deal_order")) from None
        p = self.profile
        if self.phase in (RoundPhase.COMPLETE, RoundPhase.DEALER, RoundPhase.INITIAL_DEAL):
            raise RuleViolation(
                f"no player decision possible during phase {self.phase}", p.cite("deal_order")
            )
        record: dict[str, Any] = {"action": str(action)}
        if player is not None and seat is not None:
            self._co_act(action, seat, player, amount, hand)
            return
        if action in INSURANCE_ACTIONS:
            if self.phase is not RoundPhase.INSURANCE:
                never = self._never_offered(action)  # say why rather than "too late"
                if never is not None:
                    raise never
                rule = p.cite("even_money") if action is Action.EVEN_MONEY else p.cite("insurance")
                raise RuleViolation("insurance and even money only right after the initial deal", rule)
            q = self._insurance_queue()
            target = seat if seat is not None else q[0]
            why = self._why_not_insurance(target, action, amount)
            if why:
                raise why
            st = self.seats[target]
            if action is Action.INSURANCE:
                st.insurance = amount if amount is not None else self._default_insurance(target)
                record["amount"] = st.insurance
            elif action is Action.EVEN_MONEY:
                st.hands[0].status = EVEN_MONEY  # PT-2001 r.34: paid 1:1 before the hole card is known
            st.insurance_decided = True
            record.update(seat=target, hand=0)
            self._record(record)
            self._advance()
            return
        if (
            action is Action.SURRENDER
            and seat is not None
            and self.phase in (RoundPhase.INSURANCE, RoundPhase.PLAYERS)
        ):
            # Surrender is decided right after the first two cards, before any additional card (PT-2001 r.36).
            st = self.seats.get(seat)
            if st is None:
                raise RuleViolation(f"no bet on seat {seat}", p.cite("surrender"))
            idx = hand or 0
            if idx >= len(st.hands):
                raise RuleViolation(f"seat {seat} has no hand {idx}", p.cite("surrender"))
            why = self._why_not_surrender(st.hands[idx])
            if why:
                raise why
            st.hands[idx].status = SURRENDERED
            self._record({"seat": seat, "hand": idx, "action": "surrender"})
            self._advance()
            return
        if self.phase is RoundPhase.INSURANCE:
            self._close_insurance()  # a hand decision means the insurance window has closed
            if self.phase is not RoundPhase.PLAYERS:
                raise RuleViolation(
                    f"no player decision possible during phase {self.phase}", p.cite("deal_order")
                )
        h = self._current()
        if h is None:
            raise RuleViolation("no hand is waiting for a decision", p.cite("deal_order"))
        ref = self._hand_ref(h)
        if (seat is not None and seat != ref.seat) or (hand is not None and hand != ref.hand):
            st = self.seats.get(seat if seat is not None else ref.seat)
            idx = hand if hand is not None else 0
            if st is not None and idx < len(st.hands):
                why = self._why_not(st.hands[idx], action)
                if why:
                    raise why
            raise RuleViolation(
                f"decision for seat {seat} hand {hand if hand is not None else 0} out of turn: "
                f"{ref} decides now",
                p.cite("deal_order"),
            )
        why = self._why_not(h, action)
        if why:
            raise why
        record.update(seat=ref.seat, hand=ref.hand)
        if action is not Action.SPLIT:
            self._note_decline(h)
        self._apply(h, action)
        self._record(record)
        self._advance()

    def _apply(self, h: HandState, action: Action) -> None:
        st = self.seats[h.seat]
        if action is Action.HIT:
            h.needs_card = True
            if self._held:  # PT-2001 r.18: the unseen card goes to the next player who asks
                self._deliver_held(self._hand_ref(h))
        elif action is Action.STAND:
            h.status = STOOD
        elif action is Action.DOUBLE:
            h.doubled = True
            h.stake += h.base_bet
            if self.profile.play.soft_double_ace_fixed and h.value.soft:
                h.fixed_aces = 1  # PT-2001 r.32: the ace keeps the value 1 to the end
            h.needs_card = True
            if self._held:
                self._deliver_held(self._hand_ref(h))
        elif action is Action.SPLIT:
            second = h.cards.pop()
            aces = second.is_ace
            new = HandState(
                h.seat, h.base_bet, h.base_bet, [second], from_split=True, split_aces=aces, needs_card=True
            )
            st.hands.insert(st.hands.index(h) + 1, new)
            h.from_split, h.split_aces, h.needs_card = True, aces, True
            if len(st.hands) == 2:
                st.first_pair_split = True
        elif action is Action.SURRENDER:
            h.status = SURRENDERED
        elif action is Action.FIVE_CARD:
            h.status = FIVE_CARD

    def _co_act(self, action: Action, seat: int, player: str, amount: int | None, hand: int | None) -> None:
        """A co-bettor's decision (PT-2001 r.15, r.28, r.30); every other decision is the titular's."""
        p = self.profile
        rule = p.cite("multiple_players")
        st = self.seats.get(seat)
        cb = next((c for c in st.co_bets if c.bet.player == player), None) if st else None
        if st is None or cb is None:
            raise RuleViolation(f"seat {seat}: no bet of player {player!r} besides the titular's", rule)
        record: dict[str, Any] = {"action": str(action), "seat": seat, "player": player}
        if action in (Action.INSURANCE, Action.NO_INSURANCE):
            # r.15: "Se o titular do lugar fizer «seguro» da sua aposta, os donos das apostas complementares são
            # livres de o fazer, ou não" — bounded like the titular's (r.33).
            early = self.phase in (RoundPhase.INSURANCE, RoundPhase.PLAYERS) and not self._additional_dealt
            if not early or not (p.insurance.offered and self.up_card and self.up_card.is_ace):
                raise RuleViolation(
                    "insurance only right after the initial deal, against an ace", p.cite("insurance")
                )
            if action is Action.INSURANCE:
                ins = p.insurance
                hi = (ins.max * cb.bet.amount).numerator // (ins.max * cb.bet.amount).denominator
                stake = amount if amount is not None else hi
                if not 1 <= stake <= hi:
                    raise RuleViolation(
                        f"player {player!r}: insurance {stake} above {hi}", p.cite("insurance")
                    )
                why = self._over_round_limit(seat, stake)
                if why:
                    raise why
                cb.insurance = stake
                record["amount"] = stake
        elif action is Action.SPLIT:
            # r.28: "poderão os outros jogadores ... fazer também, por seu lado, aposta igual à primeira e anexá-la
            # à segunda aposta do titular do lugar".
            if len(st.hands) < 2 or cb.follows_split:
                raise RuleViolation(f"player {player!r}: nothing to follow: the titular has not split", rule)
            cb.follows_split = True
        elif action is Action.DOUBLE:
            # r.30: "poderão usar também os apostadores complementares daquela aposta ... duplicar".
            idx = hand or 0
            if idx >= len(st.hands) or not st.hands[idx].doubled or idx in cb.doubled:
                raise RuleViolation(f"player {player!r}: the titular did not double hand {idx}", rule)
            if idx > 0 and not (idx == 1 and cb.follows_split):
                raise RuleViolation(f"player {player!r} has no bet on hand {idx}", rule)
            cb.doubled.add(idx)
            record["hand"] = idx
        else:
            raise RuleViolation(
                f"player {player!r}: the titular decides the play ({action} is not a co-bettor's decision)",
                rule,
            )
        self._record(record)

    def close_insurance(self) -> None:
        """The dealer closes the insurance window: seats that have not decided decline."""
        if self.phase is RoundPhase.INSURANCE:
            self._close_insurance()

    def _record(self, decision: dict[str, Any]) -> None:
        # after_cards: shoe cards out before this decision, so a replay interleaves cards and decisions.
        decision["after_cards"] = self._card_count - 1 if self._in_card else self._card_count
        self._decisions.append(decision)

    def _close_insurance(self) -> None:
        for st in self.seats.values():
            if not st.insurance_decided:
                st.insurance_decided = True
        self._advance()

    # ------------------------------------------------------------------ cards

    def on_card(self, card: Card | str, *, face_up: bool = False, to: Recipient | None = None) -> CardOutcome:
        """Attribute the next card out of the shoe.

        `face_up`: the card came out of the shoe exposed (MO-2004 art.5.1.1; PT-2001 r.18 "already seen").
        `to`: where the dealer actually put it, if known (pit terminal, round file); None: as the rules say.
        """
        if isinstance(card, str):
            card = Card.parse(card)
        p = self.profile
        self._seen[card] += 1
        if self._seen[card] > p.decks:
            self._seen[card] -= 1
            raise RoundError(f"more than {p.decks} {card} in {p.decks} deck(s)", p.cite("decks"))
        self._card_count += 1
        entry: dict[str, Any] = {"card": str(card)}
        if face_up:
            entry["face_up"] = True
        if to is not None:
            entry["to"] = to.to_json()
        self._in_card = True
        if self.phase is RoundPhase.INSURANCE:
            self._close_insurance()  # the next card means play has moved on
        expected = self.expected_recipient()
        if expected is None and self.phase is RoundPhase.PLAYERS:
            h = self._current()
            if h is not None and self._why_not(h, Action.STAND) is None:
                self._note_decline(h)
                h.status = (
                    STOOD  # e.g. split aces with a resplit option: a card means the player did not resplit
                )
                ref = self._hand_ref(h)
                self._record({"action": "stand", "seat": ref.seat, "hand": ref.hand})
                self._advance()
                expected = self.expected_recipient()
        # MO-2004 art.5.1.1 "a primeira do início do jogo": the first card *dealt*, after the burns of art.4.1.
        first = self._dealt_count == 0 and expected is not None and expected.kind != "burn"
        before = self._situation(expected)
        try:
            self._in_card = True
            outcome = self._attribute(card, face_up, to, expected, first)
        except RoundError:
            self._seen[card] -= 1
            self._card_count -= 1
            raise
        finally:
            self._in_card = False
        entry["recipient"] = outcome.recipient.to_json() if outcome.recipient else "void"
        if outcome.recipient is not None and outcome.recipient.kind != "burn":
            self._dealt_count += 1
        self._cards_in.append(entry)
        self._why.append(self._card_reason(outcome, before))
        self._errors.extend(outcome.errors)
        self._advance()
        return outcome

    def _situation(self, expected: Recipient | None) -> dict[str, Any]:
        """What the table was waiting for when a card came (for the dispute report, PT-2001 r.62)."""
        out: dict[str, Any] = {"phase": self.phase, "expected": expected, "dealer": len(self.dealer)}
        if expected is not None and expected.kind == "seat":
            h = self.seats[expected.seat].hands[expected.hand]
            out.update(cards=len(h.cards), doubled=h.doubled, from_split=h.from_split, owed=h.needs_card)
        if self.dealer:
            out["dealer_total"] = hand_value(self.dealer).total
        return out

    def _card_reason(self, outcome: CardOutcome, b: dict[str, Any]) -> str:
        p = self.profile
        to = outcome.recipient
        if to is None:
            why = outcome.errors[0].message if outcome.errors else "void"
            return f"void, to the discard: {why}"
        if to.kind == "held":
            return f"held ({p.cite('misdeal')}): {outcome.errors[0].message}"
        if to.kind == "burn":
            return f"burn card, to the discard ({p.cite('burn')})"
        note = f" — corrected: {outcome.errors[0].message}" if outcome.errors else ""
        if to.kind == "dealer":
            if b["phase"] is RoundPhase.INITIAL_DEAL:
                what = "dealer's up card" if b["dealer"] == 0 else "dealer's hole card, face down"
                return f"{what} ({p.cite('deal_order')}){note}"
            if b["dealer"] == 1:
                return f"dealer's second card, after the players ({p.cite('deal_order')}){note}"
            return f"dealer draws on {b.get('dealer_total')}: 16 or less must draw ({p.cite('dealer_draw')}){note}"
        if b["phase"] is RoundPhase.INITIAL_DEAL:
            return f"initial deal ({p.cite('deal_order')}){note}"
        if b.get("from_split") and b.get("cards") == 1:
            return f"second card of a split hand ({p.cite('split')}){note}"
        if b.get("doubled"):
            return f"the one card after the double ({p.cite('double')}){note}"
        return ("hit, as asked" if b.get("owed") else "hit: the hand took the card without standing") + note

    def _attribute(
        self, card: Card, face_up: bool, to: Recipient | None, expected: Recipient | None, first: bool
    ) -> CardOutcome:
        p, play = self.profile, self.profile.play
        if (
            face_up
            and play.face_up_card_invalid
            and expected != Recipient.burn()
            and not (play.first_card_face_up_valid and self.first_of_game and first)
        ):
            err = DealerError(
                p.cite("face_up_card"), f"{card} came out of the shoe face up: invalid, to the discard", card
            )
            return CardOutcome(None, False, [err])
        late = self._late_second_card(card, to) if expected is None else None
        if late is not None:
            return late
        if to is None or to == expected:
            if expected is None:
                raise self._nothing_expected(card)
            return self._deliver(card, expected)
        # The dealer put the card somewhere the rules do not expect.
        if expected is None:
            if to.kind == "dealer" and self.phase in (RoundPhase.COMPLETE, RoundPhase.DEALER):
                if self._ended_by == "nobody":
                    msg = f"{card}: dealer drew although nobody was left in play; not counted, to the discard"
                    return CardOutcome(None, False, [DealerError(p.cite("nobody_in_play"), msg, card)])
                total = hand_value(self.dealer).total
                if play.unshown_dealer_card == "valid" and not face_up:
                    # MO-2004 art.6.1: "podendo, no entanto, considerar-se válida se não tiver sido mostrada".
                    self.dealer.append(card)
                    msg = f"{card}: dealer drew on {total}; not shown, kept as valid (house option)"
                    return CardOutcome(
                        Recipient.dealer(), True, [DealerError(p.cite("dealer_draw"), msg, card)]
                    )
                msg = f"{card}: dealer drew on {total}; the card does not count, to the discard"
                return CardOutcome(None, False, [DealerError(p.cite("dealer_draw"), msg, card)])
            if to.kind == "seat" and to.seat in self.seats and self.phase is RoundPhase.COMPLETE:
                rule, why = self._misdeal_reason(to)
                msg = f"{card} given to {to} ({why}) after play ended: void, to the discard"
                return CardOutcome(None, False, [DealerError(rule, msg, card)])
            err = self._nothing_expected(card)
            raise RoundError(err.message + f" (it was given to {to})", err.rule)
        if to.kind == "seat" and to.seat not in self.seats:
            raise RoundError(f"card {card} given to seat {to.seat}, which has no bet", p.cite("deal_order"))
        if to.kind == "burn":
            msg = f"{card} burnt although {expected} was due: not counted, to the discard"
            return CardOutcome(None, False, [DealerError(p.cite("deal_order"), msg, card)])
        if self.phase is RoundPhase.INITIAL_DEAL or expected.kind == "burn":
            err = DealerError(
                p.cite("deal_order"), f"{card} dealt to {to} but belongs to {expected}: corrected", card
            )
            out = self._deliver(card, expected)
            return CardOutcome(out.recipient, out.counts, [err, *out.errors])
        rule, why = self._misdeal_reason(to)
        if play.misdeal_card == "reassign":  # MO-2004 art.5.1.2: the card goes to whom it belongs
            err = DealerError(rule, f"{card} given to {to} ({why}); corrected to {expected}", card)
            out = self._deliver(card, expected)
            return CardOutcome(out.recipient, out.counts, [err, *out.errors])
        if face_up:  # PT-2001 r.18: a card already seen is void
            err = DealerError(
                rule, f"{card} given to {to} ({why}) and already seen: void, to the discard", card
            )
            return CardOutcome(None, False, [err])
        self._held.append(card)  # PT-2001 r.18: unseen, it goes to the next player who asks, else the dealer
        err = DealerError(
            rule, f"{card} given to {to} ({why}), unseen: held for the next player who asks", card
        )
        return CardOutcome(Recipient("held"), True, [err])

    def _late_second_card(self, card: Card, to: Recipient | None) -> CardOutcome | None:
        """No hole card, nobody left in play, and the dealer still burns and deals himself his second card.

        MO-2004 art.7.1: "No seguimento da decisão final dos jogadores ... distribui uma segunda carta para si
        própria"; art.4.2: "outra antes de a banca receber a sua segunda carta". The round was already settled
        (PT-2001 r.22 reading: nobody in play); these cards change no result: the burn goes to the discard and the
        second card is shown in the dealer's hand, as the book describes. Anything after that is a dealer error.
        """
        p = self.profile
        if (
            self.phase is not RoundPhase.COMPLETE
            or self._ended_by != "nobody"
            or p.hole_card
            or len(self.dealer) != 1
            or self._late_second
        ):
            return None
        if p.burn.before_dealer_second and not self._burnt_late and to in (None, Recipient.burn()):
            self._burnt_late = True
            return CardOutcome(Recipient.burn(), False, [])
        if to in (None, Recipient.dealer()):
            self._late_second = True
            self.dealer.append(card)
            return CardOutcome(Recipient.dealer(), True, [])
        return None

    def _misdeal_reason(self, to: Recipient) -> tuple[str, str]:
        p = self.profile
        if to.kind == "seat":
            hands = self.seats[to.seat].hands
            if to.hand is not None and to.hand < len(hands):
                h = hands[to.hand]
                if h.doubled and len(h.cards) >= 3:
                    return p.cite("after_double"), "the hand doubled and had its one card"
                if h.split_aces and len(h.cards) >= 2:
                    return p.cite("split_aces"), "split ace already has its one card"
                if h.value.total == 21:
                    return p.cite("draw_on_21"), "the hand is on 21"
                if h.status != OPEN:
                    return p.cite("misdeal"), f"the hand is {h.status}"
        return p.cite("misdeal"), "not the hand that asked for a card"

    def _nothing_expected(self, card: Card) -> RoundError:
        """The impossible-round error for a card nobody may receive, citing the rule that ended play."""
        p = self.profile
        if self.phase is RoundPhase.COMPLETE:
            # The round ended because the dealer's hand was final (PT-2001 r.19) or nobody was left in play
            # (PT-2001 r.22); any further card is impossible unless it is marked as a dealer breach.
            rule = p.cite("nobody_in_play") if self._ended_by == "nobody" else p.cite("dealer_draw")
            return RoundError(
                f"card {card} after the round ended; a card the dealer drew in breach of the drawing rule "
                "must be marked as going to the dealer (to='dealer')",
                rule,
            )
        if self.phase is RoundPhase.INSURANCE:
            return RoundError(f"card {card} while insurance decisions are awaited", p.cite("insurance"))
        h = self._current() if self.phase is RoundPhase.PLAYERS else None
        if h is not None and not h.needs_card:
            ref = self._hand_ref(h)
            why = self._why_not(h, Action.HIT)
            reason = f": {why.message}" if why else ""
            return RoundError(
                f"card {card} while seat {ref.seat} hand {ref.hand} cannot take a card and must decide "
                f"first{reason}",
                why.rule if why else p.cite("deal_order"),
            )
        return RoundError(f"card {card} while a decision is awaited", p.cite("deal_order"))

    def _deliver(self, card: Card, to: Recipient) -> CardOutcome:
        if to.kind == "burn":
            self._burns -= 1
            return CardOutcome(to, False, [])
        if self.phase is RoundPhase.INITIAL_DEAL:
            self._plan_pos += 1
        if to.kind == "dealer":
            if self.phase is not RoundPhase.INITIAL_DEAL:
                self._additional_dealt = True
            self.dealer.append(card)
            return CardOutcome(to, True, [])
        st = self.seats[to.seat]
        h = st.hands[to.hand]
        if self.phase is RoundPhase.PLAYERS and not h.needs_card:
            # A card while the hand may hit is an implicit hit; recorded so the description replays exactly.
            self._note_decline(h)
            self._record({"action": "hit", "seat": to.seat, "hand": to.hand, "implicit": True})
        self._give(st, h, card)
        return CardOutcome(to, True, [])

    def _give(self, st: SeatState, h: HandState, card: Card) -> None:
        h.cards.append(card)
        st.dealt.append(card)
        if len(h.cards) == 2 and h.cards[0].rank == card.rank:
            st.pairs_formed += 1  # MO-2004 art.13.1: the first pair, and each pair formed after a split
        if self.phase is RoundPhase.INITIAL_DEAL:
            return
        self._additional_dealt = True
        h.needs_card = False
        v = h.value
        if h.doubled:
            h.status = BUST if v.bust else STOOD  # PT-2001 r.29: one card only
        elif v.bust:
            h.status = BUST  # PT-2001 r.22
        elif h.split_aces and len(h.cards) == 2:
            # One card per split ace (PT-2001 r.26); MO-2004 art.16.3 lets a new ace be split again.
            can_resplit = (
                card.is_ace and self._why_not_split_count(h) is None and self.profile.play.resplit_aces
            )
            if not can_resplit:
                h.status = STOOD
        elif v.total == 21 and not self._five_card_open(h):
            h.status = STOOD  # PT-2001 r.18: no card on 21

    def _five_card_open(self, h: HandState) -> bool:
        """MO-2004 art.19: "cinco cartas sem exceder 21 pontos": a five-card 21 may still ask to be paid half,
        so the hand waits for that decision (or a stand) instead of standing by itself (art.6.4: no more cards)."""
        up = self.up_card
        return self.profile.play.five_card_rule and len(h.cards) == 5 and not (up is not None and up.is_ace)

    def _why_not_split_count(self, h: HandState) -> str | None:
        mx = self.profile.play.max_hands
        return "limit" if mx and len(self.seats[h.seat].hands) >= mx else None

    def _deliver_held(self, to: Recipient) -> None:
        card = self._held.pop(0)
        self._held_log.append({"card": str(card), "recipient": to.to_json()})
        if to.kind == "dealer":
            self._additional_dealt = True
            self.dealer.append(card)
        else:
            st = self.seats[to.seat]
            self._give(st, st.hands[to.hand], card)

    # ------------------------------------------------------------------ automatic progress

    def _dealer_needs_card(self) -> bool:
        if len(self.dealer) < 2:
            return self._dealer_needs_second
        return self._dealer_plays and dealer_must_draw(self.dealer) and not self.dealer_blackjack()

    def _advance(self) -> None:
        while True:
            if self.phase is RoundPhase.INITIAL_DEAL:
                if self._plan_pos < len(self._plan):
                    return
                self._after_initial_deal()
            elif self.phase is RoundPhase.INSURANCE:
                if self._insurance_queue():
                    return
                self._start_players()
            elif self.phase is RoundPhase.PLAYERS:
                cur = self._current()
                if cur is not None and cur.needs_card and self._held:
                    self._deliver_held(self._hand_ref(cur))  # PT-2001 r.18: to the next player who asks
                    continue
                if cur is not None:
                    return
                self._start_dealer()
            elif self.phase is RoundPhase.DEALER:
                if not self._dealer_needs_card():
                    if self._held and self._dealer_plays and self.profile.play.unclaimed_card == "dealer":
                        # PT-2001 r.18 read literally: "se nenhum vier a pedir cartas, a dita carta será para o
                        # jogo da banca", even on 17 or more (house choice against r.19).
                        self._deliver_held(Recipient.dealer())
                        continue
                    self._complete("dealer" if self._dealer_plays else "nobody")
                    continue
                if self._burns:
                    return
                if self._held:
                    self._deliver_held(
                        Recipient.dealer()
                    )  # PT-2001 r.18: nobody asked, it goes to the dealer
                    continue
                return
            else:
                return

    def _after_initial_deal(self) -> None:
        for st in self.seats.values():
            h = st.hands[0]
            if h.blackjack:
                h.status = BLACKJACK
        up = self.up_card
        offer_ins = self.profile.insurance.offered and up is not None and up.is_ace
        offer_em = self._even_money_offered()
        for st in self.seats.values():
            wanted = offer_ins or (offer_em and st.hands[0].status == BLACKJACK)
            st.insurance_decided = not wanted
        self.phase = RoundPhase.INSURANCE

    def _start_players(self) -> None:
        up = self.up_card
        peeks = up is not None and (up.is_ace or self.profile.peek_with_ten)
        if self.profile.dealer_peek and peeks and self.dealer_blackjack():
            # RO: the dealer checks for blackjack; with one the round ends before the players act.
            self._complete("dealer")
            return
        self.phase = RoundPhase.PLAYERS

    def _start_dealer(self) -> None:
        self.phase = RoundPhase.DEALER
        hands = [h for st in self.seats.values() for h in st.hands]
        live = any(h.status == STOOD for h in hands)
        pending_bj = any(h.status == BLACKJACK for h in hands)
        insured = any(st.insurance for st in self.seats.values())
        up = self.up_card
        self._dealer_plays = live
        if not self.profile.hole_card:
            can_bj = up is not None and (up.is_ace or up.is_ten_value)
            always = self.profile.dealer_second_card_always  # MO-2004 art.7.1, even with nobody in play
            self._dealer_needs_second = live or insured or (pending_bj and can_bj) or always
            if self._dealer_needs_second and self.profile.burn.before_dealer_second:
                self._burns += 1  # MO-2004 art.4.2: one card burnt before the dealer's second card
        if not (live or self._dealer_needs_second):
            self._complete("nobody")  # PT-2001 r.22: nobody left in play, no further dealer card

    def _complete(self, why: str) -> None:
        self.phase = RoundPhase.COMPLETE
        self._ended_by = self._ended_by or why
        for card in self._held:
            self._held_log.append({"card": str(card), "recipient": "void"})
        self._held.clear()

    # ------------------------------------------------------------------ results

    def settle(self) -> Settlement:
        from controller.rules.settlement import settle

        if not self.is_complete():
            raise RoundError(f"round not complete (phase {self.phase}); cannot settle yet")
        return settle(self)

    def card_reasons(self) -> list[str]:
        """Per card of `description()["cards"]`, in words: where it went and why (PT-2001 r.62 disputes)."""
        return list(self._why)

    @property
    def held_log(self) -> list[dict[str, Any]]:
        return [dict(h) for h in self._held_log]

    def description(self) -> dict[str, Any]:
        """The round so far in the round-file format (docs/rounds.md); replaying it reproduces this round."""
        bets = []
        for st in self.seats.values():
            for bet in [st.bet, *(cb.bet for cb in st.co_bets)]:
                b: dict[str, Any] = {"seat": bet.seat, "amount": bet.amount}
                if bet.side_bets:
                    b["side_bets"] = dict(bet.side_bets)
                if bet.jackpot_chip:
                    b["jackpot_chip"] = True
                if bet.player is not None:
                    b["player"] = bet.player
                bets.append(b)
        out: dict[str, Any] = {"format": 1, "profile": self.profile.name}
        if self.burn_before_deal:
            out["burn_before_deal"] = self.burn_before_deal
        if self.first_of_game or self.burn_before_deal:
            out["first_of_game"] = self.first_of_game  # explicit: replay would infer it from the burn count
        out["bets"] = bets
        out["cards"] = [dict(c) for c in self._cards_in]
        out["decisions"] = [dict(d) for d in self._decisions]
        if self._held_log:
            out["held_cards"] = [dict(h) for h in self._held_log]
        out["phase"] = str(self.phase)
        out["dealer_errors"] = [e.to_json() for e in self._errors]
        return out
