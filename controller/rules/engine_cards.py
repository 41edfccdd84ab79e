"""Part of the round engine (controller/rules/engine.py `RoundEngine`): each card out of the shoe attributed to a
hand, the dealer or a burn (held cards, PT-2001 r.18; misdeals; late cards). Pure logic, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

from controller.rules.cards import Card
from controller.rules.engine_parts import CardEntry
from controller.rules.hands import dealer_must_draw, hand_value
from controller.rules.round_state import (  # the round's state, shared with settlement (the lower module)
    BUST,
    OPEN,
    STOOD,
    HandState,
    SeatState,
)
from controller.rules.types import (
    Action,
    CardOutcome,
    DealerError,
    Recipient,
    RoundError,
    RoundPhase,
)

if TYPE_CHECKING:
    from controller.rules.engine import RoundEngine


class Situation(TypedDict):
    """What the table was waiting for when a card came (for the dispute report, PT-2001 r.62)."""

    phase: RoundPhase
    expected: Recipient | None
    dealer: int  # the dealer's cards so far
    cards: NotRequired[int]  # the expected hand's cards so far
    doubled: NotRequired[bool]
    from_split: NotRequired[bool]
    owed: NotRequired[bool]  # the hand was owed a card
    dealer_total: NotRequired[int]


class CardRouter:
    """A part of the round (``RoundEngine`` holds it): routes each card out of the shoe to where the rules send
    it (hand, dealer, burn, held, void). It reads and changes the round's state through ``self.r``, the round it
    was made for."""

    def __init__(self, rnd: RoundEngine) -> None:
        self.r = rnd

    # ------------------------------------------------------------------ cards

    def on_card(self, card: Card | str, *, face_up: bool = False, to: Recipient | None = None) -> CardOutcome:
        """Attribute the next card out of the shoe.

        `face_up`: the card came out of the shoe exposed (MO-2004 art.5.1.1; PT-2001 r.18 "already seen").
        `to`: where the dealer actually put it, if known (pit terminal, round file); None: as the rules say.
        """
        if isinstance(card, str):
            card = Card.parse(card)
        p = self.r.profile
        self.r._seen[card] += 1
        if self.r._seen[card] > p.decks:
            self.r._seen[card] -= 1
            raise RoundError(f"more than {p.decks} {card} in {p.decks} deck(s)", p.cite("decks"))
        self.r._card_count += 1
        entry: CardEntry = {"card": str(card)}
        if face_up:
            entry["face_up"] = True
        if to is not None:
            entry["to"] = to.to_json()
        self.r._in_card = True
        if self.r.phase is RoundPhase.INSURANCE:
            self.r.decisions.decline_undecided()  # the next card means play has moved on
        expected = self.r.expected_recipient()
        if expected is None and self.r.phase is RoundPhase.PLAYERS:
            h = self.r._current()
            if h is not None and self.r.decision_rules.why_not(h, Action.STAND) is None:
                self.r.decision_rules.note_decline(h)
                h.status = (
                    STOOD  # e.g. split aces with a resplit option: a card means the player did not resplit
                )
                seat, hand = self.r._hand_ref(h).place
                self.r.decisions.record({"action": "stand", "seat": seat, "hand": hand})
                self.r._advance()
                expected = self.r.expected_recipient()
        # MO-2004 art.5.1.1 "a primeira do início do jogo": the first card *dealt*, after the burns of art.4.1.
        first = self.r._dealt_count == 0 and expected is not None and expected.kind != "burn"
        before = self._situation(expected)
        try:
            self.r._in_card = True
            outcome = self._attribute(card, face_up, to, expected, first)
        except RoundError:
            self.r._seen[card] -= 1
            self.r._card_count -= 1
            raise
        finally:
            self.r._in_card = False
        entry["recipient"] = outcome.recipient.to_json() if outcome.recipient else "void"
        if outcome.recipient is not None and outcome.recipient.kind != "burn":
            self.r._dealt_count += 1
        self.r._cards_in.append(entry)
        self.r._why.append(self._card_reason(outcome, before))
        self.r._errors.extend(outcome.errors)
        self.r._advance()
        return outcome

    def _situation(self, expected: Recipient | None) -> Situation:
        """What the table was waiting for when a card came (for the dispute report, PT-2001 r.62)."""
        out: Situation = {"phase": self.r.phase, "expected": expected, "dealer": len(self.r.dealer)}
        if expected is not None and expected.kind == "seat":
            seat, hand = expected.place
            h = self.r.seats[seat].hands[hand]
            out.update(
                {
                    "cards": len(h.cards),
                    "doubled": h.doubled,
                    "from_split": h.from_split,
                    "owed": h.needs_card,
                }
            )
        if self.r.dealer:
            out["dealer_total"] = hand_value(self.r.dealer).total
        return out

    def _card_reason(self, outcome: CardOutcome, b: Situation) -> str:
        p = self.r.profile
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
        p, play = self.r.profile, self.r.profile.play
        if (
            face_up
            and play.face_up_card_invalid
            and expected != Recipient.burn()
            and not (play.first_card_face_up_valid and self.r.first_of_game and first)
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
            if to.kind == "dealer" and self.r.phase in (RoundPhase.COMPLETE, RoundPhase.DEALER):
                draws_anyway = p.dealer_draws_with_nobody_in_play and len(self.r.dealer) >= 2
                if self.r._ended_by == "nobody" and draws_anyway and dealer_must_draw(self.r.dealer):
                    # MO-2004 art.6.1: the bank must draw on 16 or less; with nobody in play it decides nothing.
                    self.r.dealer.append(card)
                    return CardOutcome(Recipient.dealer(), True, [])
                if self.r._ended_by == "nobody" and not draws_anyway:
                    msg = f"{card}: dealer drew although nobody was left in play; not counted, to the discard"
                    return CardOutcome(None, False, [DealerError(p.cite("nobody_in_play"), msg, card)])
                total = hand_value(self.r.dealer).total
                if play.unshown_dealer_card == "valid" and not face_up:
                    # MO-2004 art.6.1: "podendo, no entanto, considerar-se válida se não tiver sido mostrada".
                    self.r.dealer.append(card)
                    msg = f"{card}: dealer drew on {total}; not shown, kept as valid (house option)"
                    return CardOutcome(
                        Recipient.dealer(), True, [DealerError(p.cite("dealer_draw"), msg, card)]
                    )
                msg = f"{card}: dealer drew on {total}; the card does not count, to the discard"
                return CardOutcome(None, False, [DealerError(p.cite("dealer_draw"), msg, card)])
            if to.kind == "seat" and to.seat in self.r.seats and self.r.phase is RoundPhase.COMPLETE:
                rule, why = self._misdeal_reason(to)
                msg = f"{card} given to {to} ({why}) after play ended: void, to the discard"
                return CardOutcome(None, False, [DealerError(rule, msg, card)])
            nothing = self._nothing_expected(card)
            raise RoundError(nothing.message + f" (it was given to {to})", nothing.rule)
        if to.kind == "seat" and to.seat not in self.r.seats:
            raise RoundError(f"card {card} given to seat {to.seat}, which has no bet", p.cite("deal_order"))
        if to.kind == "burn":
            msg = f"{card} burnt although {expected} was due: not counted, to the discard"
            return CardOutcome(None, False, [DealerError(p.cite("deal_order"), msg, card)])
        if self.r.phase is RoundPhase.INITIAL_DEAL or expected.kind == "burn":
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
        self.r._held.append(
            card
        )  # PT-2001 r.18: unseen, it goes to the next player who asks, else the dealer
        err = DealerError(
            rule, f"{card} given to {to} ({why}), unseen: held for the next player who asks", card
        )
        return CardOutcome(Recipient("held"), True, [err])

    def late_card_awaited(self) -> Recipient | None:
        """After settlement with nobody left in play, without a hole card: the burn (MO-2004 art.4.2, where the
        profile burns before the dealer's second card) and then the dealer's second card (art.7.1) are still due;
        None once they came (or where nothing is due). A table marking cards after settlement as drawn by the
        dealer for himself asks this first: these two are not such cards."""
        p = self.r.profile
        if (
            self.r.phase is not RoundPhase.COMPLETE
            or self.r._ended_by != "nobody"
            or p.hole_card
            or len(self.r.dealer) != 1
            or self.r._late_second
        ):
            return None
        if p.burn.before_dealer_second and not self.r._burnt_late:
            return Recipient.burn()
        return Recipient.dealer()

    def _late_second_card(self, card: Card, to: Recipient | None) -> CardOutcome | None:
        """No hole card, nobody left in play, and the dealer still burns and deals himself his second card.

        MO-2004 art.7.1: "No seguimento da decisão final dos jogadores ... distribui uma segunda carta para si
        própria"; art.4.2: "outra antes de a banca receber a sua segunda carta". The round was already settled
        (PT-2001 r.22 reading: nobody in play); these cards change no result: the burn goes to the discard and the
        second card is shown in the dealer's hand, as the book describes. Anything after that is a dealer error.
        """
        awaited = self.late_card_awaited()
        if awaited is None:
            return None
        if awaited == Recipient.burn() and to in (None, Recipient.burn()):
            self.r._burnt_late = True
            return CardOutcome(Recipient.burn(), False, [])
        if to in (None, Recipient.dealer()):
            self.r._late_second = True
            self.r.dealer.append(card)
            return CardOutcome(Recipient.dealer(), True, [])
        return None

    def _misdeal_reason(self, to: Recipient) -> tuple[str, str]:
        p = self.r.profile
        if to.kind == "seat":
            seat, hand = to.place
            hands = self.r.seats[seat].hands
            if hand < len(hands):
                h = hands[hand]
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
        p = self.r.profile
        if self.r.phase is RoundPhase.COMPLETE:
            # The round ended because the dealer's hand was final (PT-2001 r.19) or nobody was left in play
            # (PT-2001 r.22); any further card is impossible unless it is marked as a dealer breach.
            rule = p.cite("nobody_in_play") if self.r._ended_by == "nobody" else p.cite("dealer_draw")
            return RoundError(
                f"card {card} after the round ended; a card the dealer drew in breach of the drawing rule "
                "must be marked as going to the dealer (to='dealer')",
                rule,
            )
        if self.r.phase is RoundPhase.INSURANCE:
            return RoundError(f"card {card} while insurance decisions are awaited", p.cite("insurance"))
        h = self.r._current() if self.r.phase is RoundPhase.PLAYERS else None
        if h is not None and not h.needs_card:
            ref = self.r._hand_ref(h)
            why = self.r.decision_rules.why_not(h, Action.HIT)
            reason = f": {why.message}" if why else ""
            return RoundError(
                f"card {card} while seat {ref.seat} hand {ref.hand} cannot take a card and must decide "
                f"first{reason}",
                why.rule if why else p.cite("deal_order"),
            )
        return RoundError(f"card {card} while a decision is awaited", p.cite("deal_order"))

    def _deliver(self, card: Card, to: Recipient) -> CardOutcome:
        if to.kind == "burn":
            self.r._burns -= 1
            return CardOutcome(to, False, [])
        if self.r.phase is RoundPhase.INITIAL_DEAL:
            self.r._plan_pos += 1
        if to.kind == "dealer":
            if self.r.phase is not RoundPhase.INITIAL_DEAL:
                self.r._additional_dealt = True
            self.r.dealer.append(card)
            return CardOutcome(to, True, [])
        seat, hand = to.place
        st = self.r.seats[seat]
        h = st.hands[hand]
        if self.r.phase is RoundPhase.PLAYERS and not h.needs_card:
            # A card while the hand may hit is an implicit hit; recorded so the description replays exactly.
            self.r.decision_rules.note_decline(h)
            self.r.decisions.record({"action": "hit", "seat": seat, "hand": hand, "implicit": True})
        self._give(st, h, card)
        return CardOutcome(to, True, [])

    def _give(self, st: SeatState, h: HandState, card: Card) -> None:
        h.cards.append(card)
        st.dealt.append(card)
        if len(h.cards) == 2 and h.cards[0].rank == card.rank:
            st.pairs_formed += 1  # MO-2004 art.13.1: the first pair, and each pair formed after a split
        if self.r.phase is RoundPhase.INITIAL_DEAL:
            return
        self.r._additional_dealt = True
        h.needs_card = False
        v = h.value
        if h.doubled:
            h.status = BUST if v.bust else STOOD  # PT-2001 r.29: one card only
        elif v.bust:
            h.status = BUST  # PT-2001 r.22
        elif h.split_aces and len(h.cards) == 2:
            # One card per split ace (PT-2001 r.26); MO-2004 art.16.3 lets a new ace be split again.
            can_resplit = (
                card.is_ace and self._why_not_split_count(h) is None and self.r.profile.play.resplit_aces
            )
            if not can_resplit:
                h.status = STOOD
        elif v.total == 21 and not self._five_card_open(h):
            h.status = STOOD  # PT-2001 r.18: no card on 21

    def _five_card_open(self, h: HandState) -> bool:
        """MO-2004 art.19: "cinco cartas sem exceder 21 pontos": a five-card 21 may still ask to be paid half,
        so the hand waits for that decision (or a stand) instead of standing by itself (art.6.4: no more cards)."""
        up = self.r.up_card
        play = self.r.profile.play
        return play.five_card_rule and play.five_cards(len(h.cards)) and not (up is not None and up.is_ace)

    def _why_not_split_count(self, h: HandState) -> str | None:
        mx = self.r.profile.play.max_hands
        return "limit" if mx and len(self.r.seats[h.seat].hands) >= mx else None

    def deliver_held(self, to: Recipient) -> None:
        card = self.r._held.pop(0)
        self.r._held_log.append({"card": str(card), "recipient": to.to_json()})
        if to.kind == "dealer":
            self.r._additional_dealt = True
            self.r.dealer.append(card)
        else:
            seat, hand = to.place
            st = self.r.seats[seat]
            self._give(st, st.hands[hand], card)
