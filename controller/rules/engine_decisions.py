"""Part of the round engine (controller/rules/engine.py `RoundEngine`): the player decisions applied: act, co-
bettors' decisions, insurance closed. Pure logic, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.rules.engine_parts import DecisionEntry
from controller.rules.round_state import (  # the round's state, shared with settlement (the lower module)
    EVEN_MONEY,
    FIVE_CARD,
    STOOD,
    SURRENDERED,
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


class Decisions:
    """A part of the round (``RoundEngine`` holds it): applies the dealer's decisions to the round's hands and
    records them. It reads and changes the round's state through ``self.r``, the round it was made for."""

    def __init__(self, rnd: RoundEngine) -> None:
        self.r = rnd

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
            raise RuleViolation(f"unknown decision {action!r}", self.r.profile.cite("deal_order")) from None
        p = self.r.profile
        if self.r.phase in (RoundPhase.COMPLETE, RoundPhase.DEALER, RoundPhase.INITIAL_DEAL):
            raise RuleViolation(
                f"no player decision possible during phase {self.r.phase}", p.cite("deal_order")
            )
        record: DecisionEntry = {"action": str(action)}
        if player is not None and seat is not None:
            self._co_act(action, seat, player, amount, hand)
            return
        if action in INSURANCE_ACTIONS:
            if self.r.phase is not RoundPhase.INSURANCE:
                never = self.r.decision_rules.never_offered(action)  # say why rather than "too late"
                if never is not None:
                    raise never
                rule = p.cite("even_money") if action is Action.EVEN_MONEY else p.cite("insurance")
                raise RuleViolation("insurance and even money only right after the initial deal", rule)
            q = self.r._insurance_queue()
            target = seat if seat is not None else q[0]
            why = self.r.decision_rules.why_not_insurance(target, action, amount)
            if why:
                raise why
            st = self.r.seats[target]
            if action is Action.INSURANCE:
                st.insurance = (
                    amount if amount is not None else self.r.decision_rules.default_insurance(target)
                )
                record["amount"] = st.insurance
            elif action is Action.EVEN_MONEY:
                st.hands[0].status = EVEN_MONEY  # PT-2001 r.34: paid 1:1 before the hole card is known
            st.insurance_decided = True
            record["seat"], record["hand"] = target, 0
            self.record(record)
            self.r._advance()
            return
        if (
            action is Action.SURRENDER
            and seat is not None
            and self.r.phase in (RoundPhase.INSURANCE, RoundPhase.PLAYERS)
        ):
            # Surrender is decided right after the first two cards, before any additional card (PT-2001 r.36).
            surrendering = self.r.seats.get(seat)
            if surrendering is None:
                raise RuleViolation(f"no bet on seat {seat}", p.cite("surrender"))
            idx = hand or 0
            if idx >= len(surrendering.hands):
                raise RuleViolation(f"seat {seat} has no hand {idx}", p.cite("surrender"))
            why = self.r.decision_rules.why_not_surrender(surrendering.hands[idx])
            if why:
                raise why
            surrendering.hands[idx].status = SURRENDERED
            self.record({"seat": seat, "hand": idx, "action": "surrender"})
            self.r._advance()
            return
        if self.r.phase is RoundPhase.INSURANCE:
            self.decline_undecided()  # a hand decision means the insurance window has closed
        if self.r.phase is not RoundPhase.PLAYERS:  # closing insurance may end the round (a peeked blackjack)
            raise RuleViolation(
                f"no player decision possible during phase {self.r.phase}", p.cite("deal_order")
            )
        h = self.r._current()
        if h is None:
            raise RuleViolation("no hand is waiting for a decision", p.cite("deal_order"))
        ref = self.r._hand_ref(h)
        if (seat is not None and seat != ref.seat) or (hand is not None and hand != ref.hand):
            named = self.r.seats.get(seat if seat is not None else ref.place[0])
            idx = hand if hand is not None else 0
            if named is not None and idx < len(named.hands):
                why = self.r.decision_rules.why_not(named.hands[idx], action)
                if why:
                    raise why
            raise RuleViolation(
                f"decision for seat {seat} hand {hand if hand is not None else 0} out of turn: "
                f"{ref} decides now",
                p.cite("deal_order"),
            )
        why = self.r.decision_rules.why_not(h, action)
        if why:
            raise why
        record["seat"], record["hand"] = ref.place
        if action is not Action.SPLIT:
            self.r.decision_rules.note_decline(h)
        self._apply(h, action)
        self.record(record)
        self.r._advance()

    def _apply(self, h: HandState, action: Action) -> None:
        st = self.r.seats[h.seat]
        if action is Action.HIT:
            h.needs_card = True
            if self.r._held:  # PT-2001 r.18: the unseen card goes to the next player who asks
                self.r.card_router.deliver_held(self.r._hand_ref(h))
        elif action is Action.STAND:
            h.status = STOOD
        elif action is Action.DOUBLE:
            h.doubled = True
            h.stake += h.base_bet
            if self.r.profile.play.soft_double_ace_fixed and h.value.soft:
                h.fixed_aces = 1  # PT-2001 r.32: the ace keeps the value 1 to the end
            h.needs_card = True
            if self.r._held:
                self.r.card_router.deliver_held(self.r._hand_ref(h))
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
        p = self.r.profile
        rule = p.cite("multiple_players")
        st = self.r.seats.get(seat)
        cb = next((c for c in st.co_bets if c.bet.player == player), None) if st else None
        if st is None or cb is None:
            raise RuleViolation(f"seat {seat}: no bet of player {player!r} besides the titular's", rule)
        record: DecisionEntry = {"action": str(action), "seat": seat, "player": player}
        if action in (Action.INSURANCE, Action.NO_INSURANCE):
            # r.15: "Se o titular do lugar fizer «seguro» da sua aposta, os donos das apostas complementares são
            # livres de o fazer, ou não" — bounded like the titular's (r.33).
            early = (
                self.r.phase in (RoundPhase.INSURANCE, RoundPhase.PLAYERS) and not self.r._additional_dealt
            )
            if not early or not (p.insurance.offered and self.r.up_card and self.r.up_card.is_ace):
                raise RuleViolation(
                    "insurance only right after the initial deal, against an ace", p.cite("insurance")
                )
            if action is Action.INSURANCE:
                if not p.insurance.co_bet_without_holder and not st.insurance:
                    # house choice insurance.co_bet_without_holder = false: r.15 read literally ("Se o titular
                    # do lugar fizer «seguro» ...")
                    raise RuleViolation(
                        f"player {player!r}: the seat holder has not insured; a complementary bet may insure only "
                        "after the holder",
                        rule,
                    )
                ins = p.insurance
                hi = (ins.max * cb.bet.amount).numerator // (ins.max * cb.bet.amount).denominator
                stake = amount if amount is not None else hi
                if not 1 <= stake <= hi:
                    raise RuleViolation(
                        f"player {player!r}: insurance {stake} above {hi}", p.cite("insurance")
                    )
                why = self.r.bet_rules.over_round_limit(seat, stake)
                if why:
                    raise why
                cb.insurance = stake
                record["amount"] = stake
        elif action is Action.SPLIT:
            # r.28: "poderão os outros jogadores ... fazer também, por seu lado, aposta igual à primeira e anexá-la
            # à segunda aposta do titular do lugar".
            if not p.play.co_bet_follows_split:
                # house choice play.co_bet_follows_split = false: the co-bet stays on the first hand (r.28)
                raise RuleViolation(
                    f"player {player!r}: a complementary bet does not follow a split at this table; it is "
                    "decided by the titular's first hand",
                    rule,
                )
            if len(st.hands) < 2 or cb.follows_split:
                raise RuleViolation(f"player {player!r}: nothing to follow: the titular has not split", rule)
            over = self.r.bet_rules.over_seat_total(seat, cb.bet.amount)
            if over:
                raise over
            cb.follows_split = True
        elif action is Action.DOUBLE:
            # r.30: "poderão usar também os apostadores complementares daquela aposta ... duplicar".
            idx = hand or 0
            if idx >= len(st.hands) or not st.hands[idx].doubled or idx in cb.doubled:
                raise RuleViolation(f"player {player!r}: the titular did not double hand {idx}", rule)
            if idx > 0 and not (idx == 1 and cb.follows_split):
                raise RuleViolation(f"player {player!r} has no bet on hand {idx}", rule)
            over = self.r.bet_rules.over_seat_total(seat, cb.bet.amount)
            if over:
                raise over
            cb.doubled.add(idx)
            record["hand"] = idx
        else:
            raise RuleViolation(
                f"player {player!r}: the titular decides the play ({action} is not a co-bettor's decision)",
                rule,
            )
        self.record(record)

    def close_insurance(self) -> None:
        """The dealer closes the insurance window: seats that have not decided decline."""
        if self.r.phase is RoundPhase.INSURANCE:
            self.decline_undecided()

    def record(self, decision: DecisionEntry) -> None:
        # after_cards: shoe cards out before this decision, so a replay interleaves cards and decisions.
        decision["after_cards"] = self.r._card_count - 1 if self.r._in_card else self.r._card_count
        self.r._decisions.append(decision)

    def decline_undecided(self) -> None:
        for st in self.r.seats.values():
            if not st.insurance_decided:
                st.insurance_decided = True
        self.r._advance()
