"""A round's jackpot hits (PT-2001 r.42, r.49, r.50): when the first cards of every seat with a jackpot chip are
decided, evaluate them, allocate the prizes and freeze the awards as pending, with the events and alerts that
tell the table. Used by ``TableJackpot.on_progress`` (table.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from controller.effects import Effect, JournalRecord
from controller.jackpot import meter as mt
from controller.jackpot.hits import Combination, allocate, decided, evaluate
from controller.jackpot.records import alert, event, meter_record
from controller.rules.round_state import OPEN
from controller.words import COMBINATION_WORDS, money, words


def decided_cards(tracker: Any, chip_seats: Iterable[int], phase: str) -> dict[int, list[str]] | None:
    """The cards of each chip seat once every one is decided (PT-2001 r.42) or gets no more cards; else None."""
    seats = tracker.engine.seats
    order = getattr(tracker.engine.profile, "jackpot_split_cards", "deal_order")  # the profile's r.42 order
    cards: dict[int, list[str]] = {s: [str(c) for c in seats[s].jackpot_cards(order)] for s in chip_seats}
    if not all(_decided(seats[s], cards[s], order) or _seat_finished(seats[s], phase) for s in cards):
        return None
    return cards


def _decided(seat_state: Any, cards: list[str], order: str) -> bool:
    """Whether more cards cannot change the seat's combination. In hand order a split of its first two aces
    moves the second ace behind the first hand's cards, so a seat dealt two aces waits until it is finished."""
    if order == "hand_order":
        return decided([str(c) for c in seat_state.dealt[:2]])  # a non-ace among the first two: nothing wins
    return decided(cards)


def award(
    meter: mt.MeterState, round_id: str, cards: dict[int, list[str]], different_suits: str = "not_all_one"
) -> tuple[mt.MeterState, list[Effect]]:
    """Evaluate the decided cards (r.43 as the profile reads "naipes diferentes"), allocate (r.50) and freeze the
    awards as pending (r.49): the meter after it and the effects."""
    winners = [(s, combo) for s, c in cards.items() if (combo := evaluate(c, different_suits)) is not None]
    fx: list[Effect] = []
    shown = {str(s): c[:4] for s, c in cards.items()}
    fx.append(JournalRecord("jackpot_evaluated", {"round_id": round_id, "cards": shown}))
    if not winners:
        return meter, fx
    awards = allocate(meter, winners)
    meter, rec = mt.freeze(meter, awards, round_id)
    meter_record(fx, rec, meter)
    capped = {a.seat for a in awards if a.capped}
    for h in meter.pending:
        combo = Combination[h.combination]
        event(
            fx,
            "hit_pending",
            round_id=h.round_id,
            hit_id=h.hit_id,
            seat=h.seat,
            combination=h.combination,
            amount=h.amount,
            top=h.top,
            capped=h.seat in capped,
            cards=cards[h.seat][:4],
            meter=meter.display_value,
        )
        alert(
            fx,
            "jackpot_pending",
            "critical",
            f"jackpot ({words(COMBINATION_WORDS, combo)}) on seat {h.seat}: "
            f"{money(h.amount, meter.currency)} pending; the hand "
            "stays on the table until a supervisor verifies and pays it (PT-2001 r.49)",
            hit_id=h.hit_id,
            seat=h.seat,
            amount=h.amount,
            round_id=h.round_id,
            rule="PT-2001 r.49",
        )
    return meter, fx


def _seat_finished(seat_state: Any, phase: str) -> bool:
    """No more cards can go to the seat: the players' turns are over, or each of its hands is settled."""
    if phase in ("dealer", "complete"):
        return True
    return phase == "players" and all(h.status != OPEN and not h.needs_card for h in seat_state.hands)
