"""Part of the round engine (controller/rules/engine.py `RoundEngine`): which player decision the rules allow now,
and the rule that forbids the others (double, split, surrender, insurance, even money). Pure logic, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.rules.cards import Card
from controller.rules.round_state import (  # the round's state, shared with settlement (the lower module)
    BLACKJACK,
    OPEN,
    HandState,
)
from controller.rules.types import (
    INSURANCE_ACTIONS,
    Action,
    RoundPhase,
    RuleViolation,
)

if TYPE_CHECKING:
    from controller.rules.engine import RoundEngine


class DecisionRules:
    """A part of the round (``RoundEngine`` holds it): whether a decision is allowed now, and why not (the rules
    for decisions). It reads the round's state through ``self.r``, the round it was made for."""

    def __init__(self, rnd: RoundEngine) -> None:
        self.r = rnd

    # ------------------------------------------------------------------ rules for decisions

    def why_not(self, h: HandState, action: Action) -> RuleViolation | None:
        """The rule that forbids `action` on hand `h` now, or None when it is allowed."""
        p, play = self.r.profile, self.r.profile.play
        v = h.value
        if action is Action.HIT and len(h.cards) >= 2:  # the specific rule first, then the generic state
            why = self._why_no_card(h)
            if why is not None:
                return why
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
            return self._why_no_card(h)
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
            if p.double_within_max and h.stake + h.base_bet > p.max_bet:
                # house choice bets.double_within_max: the doubled stake stays within the table maximum
                return RuleViolation(
                    f"doubling would stake {h.stake + h.base_bet}, above the maximum {p.max_bet}",
                    p.cite("above_max"),
                )
            return self.r.bet_rules.over_limits(h.seat, h.base_bet)
        if action is Action.SPLIT:
            if len(h.cards) != 2:
                return RuleViolation("split only a two-card pair", p.cite("split"))
            a, b = h.cards
            same = a.rank == b.rank if play.split_match == "rank" else a.value == b.value
            if not same:
                return RuleViolation(f"{a} and {b} are not a pair", p.cite("split"))
            if h.split_aces and not play.resplit_aces:
                return RuleViolation("split aces may not be split again", p.cite("split_aces"))
            n = len(self.r.seats[h.seat].hands)
            if play.max_hands and n >= play.max_hands:
                # MO-2004 art.16.1 "pode separá-las até quatro ou mais apostas distintas": the limit's own rule
                # (`max_hands`), not art.16.5's resplit after declining.
                return RuleViolation(
                    f"split limit reached: at most {play.max_hands} hands", p.cite("max_hands")
                )
            key = self._pair_key(a)
            if not play.resplit_after_declining and not a.is_ace and key in self.r.seats[h.seat].declined:
                # MO-2004 art.16.5: "pode ser permitido separar mais uma vez, a não ser que, anteriormente,
                # tenha já decidido não separar" (aces: art.16.3).
                return RuleViolation(
                    f"{a} and {b}: the player already declined to split this pair value in this round",
                    p.cite("resplit"),
                )
            return self.r.bet_rules.over_limits(h.seat, h.base_bet)
        if action is Action.SURRENDER:
            return self.why_not_surrender(h)
        if action is Action.FIVE_CARD:
            if not play.five_card_rule:
                return RuleViolation("no five-card rule in this profile", p.cite("five_card"))
            if not play.five_cards(len(h.cards)) or v.bust:
                many = "exactly" if play.five_card_count == "exactly" else "at least"
                return RuleViolation(f"needs {many} five cards not above 21", p.cite("five_card"))
            if self.r.up_card is not None and self.r.up_card.is_ace:
                return RuleViolation("not when the dealer's first open card is an ace", p.cite("five_card"))
            return None
        return RuleViolation(f"{action} is not a hand decision", p.cite("deal_order"))

    def _why_no_card(self, h: HandState) -> RuleViolation | None:
        """The rule that forbids hand ``h`` another card, or None: split aces get one each (PT-2001 r.26), a doubled
        hand one only, and no card is drawn on 21 or more."""
        p = self.r.profile
        if h.split_aces:
            return RuleViolation("split aces receive one card each", p.cite("split_aces"))
        if h.doubled:
            return RuleViolation("a doubled hand receives one card only", p.cite("after_double"))
        total = h.value.total
        if total >= 21:
            return RuleViolation(f"no card may be drawn on {total}", p.cite("draw_on_21"))
        return None

    def _pair_key(self, card: Card) -> int | str:
        return card.value if self.r.profile.play.split_match == "value" else card.rank

    def note_decline(self, h: HandState) -> None:
        """MO-2004 art.16.5: a pair the player could split and did not is remembered for the round."""
        if (
            len(h.cards) == 2
            and h.status == OPEN
            and not h.needs_card
            and self.why_not(h, Action.SPLIT) is None
        ):
            self.r.seats[h.seat].declined.add(self._pair_key(h.cards[0]))

    def explain(self, action: Action | str, seat: int, hand: int = 0) -> RuleViolation | None:
        """Why `action` is forbidden for seat/hand whatever the moment (the profile or the cards).

        None when only the timing is wrong. Used to name the book's rule for a decision that came too late
        to apply (e.g. a second card on split aces, PT-2001 r.26; even money against a ten, PT-2001 r.34).
        """
        p = self.r.profile
        try:
            action = Action(action)
        except ValueError:
            return RuleViolation(f"unknown decision {action!r}", p.cite("deal_order"))
        st = self.r.seats.get(seat)
        if st is None:
            return RuleViolation(f"no bet on seat {seat}", p.cite("deal_order"))
        never = self.never_offered(action)
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
            return self.why_not_surrender(probe)
        return self.why_not(probe, action)

    def why_not_surrender(self, h: HandState) -> RuleViolation | None:
        p = self.r.profile
        if not p.play.surrender:
            return RuleViolation("surrender is not offered", p.cite("surrender"))
        if h.status != OPEN or h.needs_card:
            return RuleViolation(f"hand is {h.status}, cannot surrender", p.cite("surrender"))
        if self.r.up_card is not None and self.r.up_card.is_ace and not p.play.surrender_vs_ace:
            return RuleViolation("no surrender when the dealer's open card is an ace", p.cite("surrender"))
        if h.from_split or len(h.cards) != 2:
            return RuleViolation("surrender only on the first two cards", p.cite("surrender"))
        if self.r._additional_dealt:
            if p.play.surrender_moment == "before_any_draw":  # PT-2001 r.36, MO-2004 art.18.2
                return RuleViolation(
                    "surrender only before the dealer deals any additional card", p.cite("surrender")
                )
            if h is not self.r._current():  # PT-ONLINE-2015 r.15e: at the hand's own turn
                return RuleViolation(
                    "surrender at the hand's own turn, once a card has been drawn", p.cite("surrender")
                )
        return None

    def _insurance_bounds(self, seat: int) -> tuple[int, int]:
        ins, bet = self.r.profile.insurance, self.r.seats[seat].bet.amount
        hi = (ins.max * bet).numerator // (ins.max * bet).denominator  # rounded down to the minor unit
        if ins.min == ins.max and ins.odd_bet == "round_up":
            hi = -(
                (-ins.max * bet).numerator // (ins.max * bet).denominator
            )  # house choice insurance.odd_bet
        lo = hi if ins.min == ins.max else -((-ins.min * bet).numerator // (ins.min * bet).denominator)
        return max(lo, 1), hi

    def default_insurance(self, seat: int) -> int:
        """Insurance without an amount: the most the profile allows (a multiple of the minimum if required)."""
        hi = self._insurance_bounds(seat)[1]
        if self.r.profile.insurance.multiple_of_min:
            hi -= hi % self.r.profile.min_bet
        return hi

    def why_not_insurance(self, seat: int, action: Action, amount: int | None) -> RuleViolation | None:
        p = self.r.profile
        st = self.r.seats.get(seat)
        if st is None:
            return RuleViolation(f"no bet on seat {seat}", p.cite("insurance"))
        if self.r.phase is not RoundPhase.INSURANCE or st.insurance_decided:
            return RuleViolation(
                f"seat {seat}: insurance and even money only right after the initial deal",
                p.cite("insurance"),
            )
        if action is Action.NO_INSURANCE:
            return None
        never = self.never_offered(action)
        if never is not None:
            return never
        if action is Action.INSURANCE:
            if not p.insurance.on_blackjack and st.hands[0].status == BLACKJACK:
                # insurance.on_blackjack = false: PT-ONLINE-2015 r.15 "os jogadores que não façam a combinação de
                # blackjack" may insure (r.20b: even money instead); elsewhere a house choice.
                return RuleViolation(
                    f"seat {seat}: a blackjack is not insured at this table (even money instead)",
                    p.cite("insurance_on_blackjack"),
                )
            exact = p.insurance.max * st.bet.amount
            if (
                p.insurance.min == p.insurance.max
                and exact.denominator != 1
                and p.insurance.odd_bet == "refuse"
            ):
                # house choice insurance.odd_bet = "refuse": IT "una puntata pari a metà della puntata iniziale"
                return RuleViolation(
                    f"seat {seat}: insurance is exactly {p.insurance.max} of the bet; {st.bet.amount} has no such "
                    "part in minor units at this table",
                    p.cite("insurance"),
                )
            lo, hi = self._insurance_bounds(seat)
            if amount is not None and not lo <= amount <= hi:
                return RuleViolation(
                    f"seat {seat}: insurance {amount} outside {lo}-{hi} (bet {st.bet.amount})",
                    p.cite("insurance"),
                )
            stake = amount if amount is not None else self.default_insurance(seat)
            if p.insurance.multiple_of_min and stake % p.min_bet:
                # PT-2001 r.14 ("igual ao mínimo ... ou múltiplo dele") applied to the insurance stake.
                return RuleViolation(
                    f"seat {seat}: insurance {stake} is not a multiple of the minimum {p.min_bet}",
                    p.cite("bet_limits"),
                )
            return self.r.bet_rules.over_round_limit(seat, stake)
        if action is Action.EVEN_MONEY:
            if st.hands[0].status != BLACKJACK:
                return RuleViolation(
                    "even money only for a blackjack against " + self._em_vs_text(), p.cite("even_money")
                )
            return None
        return RuleViolation(f"{action} is not an insurance decision", p.cite("insurance"))

    def _em_vs_text(self) -> str:
        return " or ".join(
            "an ace" if k == "A" else "a ten-value card"
            for k in sorted(self.r.profile.insurance.even_money_vs)
        )

    def never_offered(self, action: Action) -> RuleViolation | None:
        """Why insurance or even money is not offered in this round at all: the profile or the dealer's open
        card (PT-2001 r.33-34, MO-2004 art.10.3, art.12)."""
        p = self.r.profile
        if action is Action.EVEN_MONEY and not self.even_money_offered():
            if not p.insurance.even_money:
                return RuleViolation("even money is not offered", p.cite("even_money"))
            return RuleViolation(
                "even money only for a blackjack against " + self._em_vs_text(), p.cite("even_money")
            )
        up = self.r.up_card
        if action is Action.INSURANCE and not (p.insurance.offered and up is not None and up.is_ace):
            return RuleViolation("insurance only when the dealer's open card is an ace", p.cite("insurance"))
        return None

    def even_money_offered(self) -> bool:
        ins, up = self.r.profile.insurance, self.r.up_card
        if not ins.even_money or up is None:
            return False
        return ("A" in ins.even_money_vs and up.is_ace) or ("T" in ins.even_money_vs and up.is_ten_value)
