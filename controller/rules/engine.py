"""Incremental round engine: one round, card by card and decision by decision.

The live table drives it as cards come out of the shoe; `tablectl replay` drives the same engine from a round
file (docs/rounds.md). Pure logic, no I/O. Rule citations come from the profile (`profile.cite(key)`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from controller.rules.cards import Card
from controller.rules.engine_bets import BetRules
from controller.rules.engine_cards import CardRouter
from controller.rules.engine_decisions import Decisions
from controller.rules.engine_parts import CardEntry, DecisionEntry, HeldEntry
from controller.rules.engine_rules import DecisionRules
from controller.rules.hands import dealer_must_draw, is_blackjack
from controller.rules.profiles import Profile
from controller.rules.round_state import (  # the round's state, shared with settlement (the lower module)
    BLACKJACK,
    OPEN,
    STOOD,
    CoBet,
    HandState,
    SeatState,
)
from controller.rules.settlement import Settlement, settle
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


class RoundEngine:
    """One round of blackjack, incremental: its state, queries, automatic progress and results here. It holds
    four parts, each with one job, and hands them the inputs: the bets' checks (``bet_rules``, engine_bets.py),
    the rules for decisions (``decision_rules``, engine_rules.py), the decisions (``decisions``,
    engine_decisions.py) and the cards (``card_router``, engine_cards.py). Each part is made for this round
    and reads its state through it."""

    def __init__(
        self,
        profile: Profile,
        bets: list[SeatBet],
        *,
        burn_before_deal: int = 0,
        first_of_game: bool = False,
    ) -> None:
        self.bet_rules = BetRules(self)
        self.decision_rules = DecisionRules(self)
        self.decisions = Decisions(self)
        self.card_router = CardRouter(self)
        self.profile = profile
        self.burn_before_deal = burn_before_deal
        self.first_of_game = first_of_game  # MO-2004 art.5.1.1: the game's first card may be valid face up
        if burn_before_deal < 0:
            raise RoundError(f"burn_before_deal must be >= 0, got {burn_before_deal}")
        self.bet_rules.validate_bets(bets)
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
        self._seen: Counter[Card] = Counter()
        self._cards_in: list[CardEntry] = []
        self._decisions: list[DecisionEntry] = []
        self._errors: list[DealerError] = []
        self._held_log: list[HeldEntry] = []  # where held cards (PT-2001 r.18) finally went
        self._why: list[str] = []  # per card: where it went and why (the dispute report)
        self._card_count = 0
        self._dealt_count = 0  # cards dealt to a hand or the dealer (burns excluded): MO-2004 art.5.1.1
        self._late_second = False  # the dealer's second card came after nobody was left in play (art.7.1)
        self._burnt_late = False  # ... and the burn before it (MO-2004 art.4.2)
        self._in_card = False

    # ------------------------------------------------------------------ inputs, handed to the parts

    def on_card(self, card: Card | str, *, face_up: bool = False, to: Recipient | None = None) -> CardOutcome:
        """The next card out of the shoe (``CardRouter.on_card``)."""
        return self.card_router.on_card(card, face_up=face_up, to=to)

    def late_card_awaited(self) -> Recipient | None:
        """``CardRouter.late_card_awaited``."""
        return self.card_router.late_card_awaited()

    def act(
        self,
        action: Action | str,
        *,
        amount: int | None = None,
        seat: int | None = None,
        hand: int | None = None,
        player: str | None = None,
    ) -> None:
        """A decision (``Decisions.act``)."""
        self.decisions.act(action, amount=amount, seat=seat, hand=hand, player=player)

    def close_insurance(self) -> None:
        """``Decisions.close_insurance``."""
        self.decisions.close_insurance()

    def explain(self, action: Action | str, seat: int, hand: int = 0) -> RuleViolation | None:
        """Why ``action`` is forbidden whatever the moment (``DecisionRules.explain``)."""
        return self.decision_rules.explain(action, seat, hand)

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
            if h.needs_card or self.decision_rules.why_not(h, Action.HIT) is None:
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
            return frozenset(
                a for a in INSURANCE_ACTIONS if self.decision_rules.why_not_insurance(q[0], a, None) is None
            )
        h = self._current() if self.phase is RoundPhase.PLAYERS else None
        if h is None or h.needs_card:
            return frozenset()
        return frozenset(
            a for a in Action if a not in INSURANCE_ACTIONS and self.decision_rules.why_not(h, a) is None
        )

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
                    self.card_router.deliver_held(
                        self._hand_ref(cur)
                    )  # PT-2001 r.18: to the next player who asks
                    continue
                if cur is not None:
                    return
                self._start_dealer()
            elif self.phase is RoundPhase.DEALER:
                if not self._dealer_needs_card():
                    if self._held and self._dealer_plays and self.profile.play.unclaimed_card == "dealer":
                        # PT-2001 r.18 read literally: "se nenhum vier a pedir cartas, a dita carta será para o
                        # jogo da banca", even on 17 or more (house choice against r.19).
                        self.card_router.deliver_held(Recipient.dealer())
                        continue
                    self._complete("dealer" if self._dealer_plays else "nobody")
                    continue
                if self._burns:
                    return
                if self._held:
                    self.card_router.deliver_held(
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
        offer_em = self.decision_rules.even_money_offered()
        for st in self.seats.values():
            bj = st.hands[0].status == BLACKJACK
            wanted = (offer_ins and (not bj or self.profile.insurance.on_blackjack)) or (offer_em and bj)
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
        p = self.profile
        # IT / RO: the dealer completes his hand whoever is left (p.dealer_completes_hand); the house may have him
        # draw against a lone blackjack too (p.dealer_draws_after_blackjack). Otherwise PT-2001 r.22.
        self._dealer_plays = (
            live or p.dealer_completes_hand or (pending_bj and p.dealer_draws_after_blackjack)
        )
        if not p.hole_card:
            can_bj = up is not None and (up.is_ace or up.is_ten_value)
            always = p.dealer_second_card_always  # MO-2004 art.7.1, even with nobody in play
            self._dealer_needs_second = self._dealer_plays or insured or (pending_bj and can_bj) or always
            if self._dealer_needs_second and p.burn.before_dealer_second:
                self._burns += 1  # MO-2004 art.4.2: one card burnt before the dealer's second card
        if not (self._dealer_plays or self._dealer_needs_second):
            self._complete("nobody")  # PT-2001 r.22: nobody left in play, no further dealer card

    def _complete(self, why: str) -> None:
        self.phase = RoundPhase.COMPLETE
        self._ended_by = self._ended_by or why
        for card in self._held:
            self._held_log.append({"card": str(card), "recipient": "void"})
        self._held.clear()

    # ------------------------------------------------------------------ results

    def settle(self) -> Settlement:

        if not self.is_complete():
            raise RoundError(f"round not complete (phase {self.phase}); cannot settle yet")
        return settle(self)

    def card_reasons(self) -> list[str]:
        """Per card of `description()["cards"]`, in words: where it went and why (PT-2001 r.62 disputes)."""
        return list(self._why)

    @property
    def held_log(self) -> list[HeldEntry]:
        return [h.copy() for h in self._held_log]

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
                if bet.pair_bet_on is not None:
                    b["pair_bet_on"] = bet.pair_bet_on
                bets.append(b)
        out: dict[str, Any] = {"format": 1, "profile": self.profile.name}
        if self.burn_before_deal:
            out["burn_before_deal"] = self.burn_before_deal
        if self.first_of_game or self.burn_before_deal:
            out["first_of_game"] = self.first_of_game  # explicit: replay would infer it from the burn count
        out["bets"] = bets
        out["cards"] = [c.copy() for c in self._cards_in]
        out["decisions"] = [d.copy() for d in self._decisions]
        if self._held_log:
            out["held_cards"] = self.held_log
        out["phase"] = str(self.phase)
        out["dealer_errors"] = [e.to_json() for e in self._errors]
        return out
