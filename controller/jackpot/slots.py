"""The table's jackpot chips (PT-2001 r.41, r.45, r.47, r.48): the chip-slot sensors' levels in automatic mode
(r.41a), the dealer's entries in manual mode (r.41b), and the collection at "no more bets".

``ChipSlots`` owns its slice of the jackpot's state (the level of each seat's chip slot, the seats refused as
unplayable in this betting window); whether the jackpot may be played is ``TableJackpot``'s (table.py) and is
passed in as a ``Playability``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.effects import Effect, JournalRecord, Rejected
from controller.jackpot.chips import ChipEvent, Refusal, RoundChips
from controller.jackpot.config import Mode
from controller.jackpot.records import UNPLAYABLE, alert, refuse


@dataclass(frozen=True, slots=True)
class Playability:
    """What the chips need to know of the jackpot: its mode (None: no jackpot enabled at this table), whether
    it may be played now (PT-2001 r.41, r.49) and the reason given when it may not."""

    mode: Mode | None
    playable: bool
    reason: str


class ChipSlots:
    """The round's jackpot chips before "no more bets" (part of the core's snapshot via ``TableJackpot``)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        d = data or {}
        self.levels: dict[str, bool] = dict(d.get("levels", {}))  # chip-slot sensor level per seat (r.41a)
        self.flagged: list[int] = list(d.get("flagged", []))  # refused as unplayable in this betting window

    def snapshot(self) -> dict[str, Any]:
        return {"levels": dict(self.levels), "flagged": list(self.flagged)}

    def sensed(self) -> list[int]:
        """The seats whose chip slot senses a chip now (r.41a)."""
        return sorted(int(s) for s, here in self.levels.items() if here)

    def manual_chip(self, jp: Playability) -> None:
        """Dealer entry (manual mode, PT-2001 r.41b); the core checks r.45 and r.47. Raises ``Rejected``."""
        if jp.mode is None:
            raise Rejected(f"no jackpot chip: {jp.reason}")
        if jp.mode is Mode.AUTOMATIC:
            raise Rejected(
                "automatic jackpot: the chip slot senses the chip, no manual entry (PT-2001 r.41a)"
            )
        if not jp.playable:
            raise Rejected(f"jackpot chip refused, return it: {jp.reason}")

    def on_sensor(
        self, jp: Playability, seat: int, present: bool, *, betting: bool, round_id: str | None, seats: int
    ) -> list[Effect]:
        """A debounced chip-slot change (PT-2001 r.41a). During betting the level is what counts; a chip
        appearing while a round is dealt is refused and flagged (r.48)."""
        fx: list[Effect] = []
        fx.append(JournalRecord("chip_slot", {"seat": seat, "present": present, "betting": betting}))
        if jp.mode is None:
            if present:
                refuse(fx, seat, UNPLAYABLE, f"no jackpot at this table: {jp.reason}", round_id)
            return fx
        if jp.mode is not Mode.AUTOMATIC:
            return fx  # a manual table (r.41b): the dealer enters the chips; the slots are not used
        if not 1 <= seat <= seats:
            if present:
                refuse(fx, seat, str(Refusal.UNKNOWN_SEAT), f"no seat {seat} at this table", round_id)
            return fx
        self.levels[str(seat)] = present
        if not present:
            if seat in self.flagged:
                self.flagged.remove(seat)  # the refused chip was taken back
            return fx
        if round_id is not None and not betting:
            # PT-2001 r.48: bets before dealing; the chip is refused, returned and flagged.
            msg = "jackpot chip placed after no more bets: refused and returned (PT-2001 r.48)"
            refuse(fx, seat, str(Refusal.LATE), msg, round_id)
            alert(fx, "dealer_error", "warning", msg, seat=seat, round_id=round_id, rule="PT-2001 r.48")
            return fx
        if betting and not jp.playable and seat not in self.flagged:
            self.flagged.append(seat)
            refuse(fx, seat, UNPLAYABLE, f"jackpot chip refused, return it: {jp.reason}", None)
        return fx

    def collect(
        self,
        jp: Playability,
        round_id: str,
        main_bets: list[int],
        manual: list[int],
        *,
        seats: int,
        now: float,
    ) -> tuple[list[int], list[Effect]]:
        """At "no more bets": the seats whose jackpot chip is accepted (PT-2001 r.41, r.45, r.47, r.48)."""
        fx: list[Effect] = []
        already, self.flagged = set(self.flagged), []  # refused as unplayable while betting: told already
        if jp.mode is None:
            return [], fx
        table_seats = frozenset(range(1, seats + 1))
        chips = RoundChips(jp.mode, table_seats, frozenset(main_bets) & table_seats)
        time_ms = int(now * 1000)
        if jp.mode is Mode.AUTOMATIC:
            for slot, here in sorted(self.levels.items(), key=lambda kv: int(kv[0])):
                if here:
                    chips.sensed(ChipEvent(int(slot), True, time_ms))
            collection = chips.no_more_bets(time_ms)
        else:
            collection = chips.manual_collect(manual, time_ms)
        for r in collection.refused:
            why = {
                Refusal.NO_MAIN_BET: "jackpot chip on a seat without a main bet: returned (PT-2001 r.45)",
                Refusal.DUPLICATE: "one jackpot chip per seat (PT-2001 r.47)",
            }.get(r.reason, f"jackpot chip refused: {r.reason}")
            refuse(fx, r.seat, str(r.reason), why, round_id)
        accepted = list(collection.seats)
        if accepted and not jp.playable:
            for seat in accepted:
                if seat not in already:
                    refuse(fx, seat, UNPLAYABLE, f"jackpot chip refused, return it: {jp.reason}", round_id)
            accepted = []
        if jp.mode is Mode.AUTOMATIC:
            for seat in accepted:
                self.levels[str(seat)] = False  # the dealer's collection takes the chip out of the slot
        return accepted, fx
