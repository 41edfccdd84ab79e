"""Collecting one round's jackpot chips (PT-2001 r.41, r.45, r.47, r.48).

Automatic mode (r.41a): each seat's slot senses a chip; the dealer triggers collection at "no more bets" and
the meter increments by the chips collected. Manual mode (r.41b): the dealer collects the chips by hand,
leaves a marker on each seat and enters those seats. In both modes:

- one chip per player per hand (r.47): one jackpot bet per seat, however often its sensor toggles;
- only a seat with a main bet may play (r.45): its chip is refused and flagged to be returned;
- bets are placed before dealing (r.48): a chip sensed after "no more bets" is refused and flagged.

Input is chip-slot events (seat, present, time) already debounced by the GPIO layer; ``Debouncer`` is the same
filter for raw edges, pure (the caller passes the time).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from controller.jackpot import JackpotError
from controller.jackpot.config import Mode


class Refusal(StrEnum):
    NO_MAIN_BET = "no_main_bet"  # PT-2001 r.45
    LATE = "late"  # PT-2001 r.48: after "no more bets"
    DUPLICATE = "duplicate"  # PT-2001 r.47: a second chip for the seat (manual entry)
    UNKNOWN_SEAT = "unknown_seat"


@dataclass(frozen=True, slots=True)
class ChipEvent:
    seat: int
    present: bool
    time_ms: int


@dataclass(frozen=True, slots=True)
class RefusedChip:
    seat: int
    reason: Refusal
    time_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Collection:
    """Result of "no more bets": the seats whose jackpot bet is accepted, and what was refused."""

    seats: tuple[int, ...]
    refused: tuple[RefusedChip, ...]

    @property
    def count(self) -> int:
        return len(self.seats)


@dataclass
class RoundChips:
    """The jackpot chips of one round. Mutable, no I/O; ``collect`` closes betting."""

    mode: Mode
    table_seats: frozenset[int]
    main_bets: frozenset[int]  # seats with a main bet (PT-2001 r.45)
    late: list[RefusedChip] = field(default_factory=list, init=False)  # after "no more bets" (PT-2001 r.48)
    _present: dict[int, bool] = field(default_factory=dict, init=False, repr=False)
    _closed: bool = field(default=False, init=False)
    _collection: Collection | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        stray = sorted(self.main_bets - self.table_seats)
        if stray:
            raise JackpotError(f"main bets on seats {stray} that the table does not have")

    @property
    def closed(self) -> bool:
        return self._closed

    def sensed(self, event: ChipEvent) -> RefusedChip | None:
        """A debounced chip-slot change (automatic mode). Returns a refusal to flag, or None."""
        if self.mode is not Mode.AUTOMATIC:
            raise JackpotError("chip sensor event on a table in manual mode (PT-2001 r.41b)")
        if event.seat not in self.table_seats:
            return RefusedChip(event.seat, Refusal.UNKNOWN_SEAT, event.time_ms)
        if self._closed:
            if event.present:
                refusal = RefusedChip(event.seat, Refusal.LATE, event.time_ms)  # PT-2001 r.48
                self.late.append(refusal)
                return refusal
            return None
        self._present[event.seat] = event.present
        return None

    def no_more_bets(self, time_ms: int | None = None) -> Collection:
        """Automatic mode: the dealer triggers collection at "no more bets" (PT-2001 r.41a, r.48)."""
        if self.mode is not Mode.AUTOMATIC:
            raise JackpotError("no_more_bets: manual mode; the dealer enters the seats (PT-2001 r.41b)")
        return self._close((s for s, here in self._present.items() if here), time_ms, duplicates=False)

    def manual_collect(self, seats: Iterable[int], time_ms: int | None = None) -> Collection:
        """Manual mode: the seats where the dealer collected a chip and left a marker (PT-2001 r.41b)."""
        if self.mode is not Mode.MANUAL:
            raise JackpotError("manual_collect: automatic mode; the slots sense the chips (PT-2001 r.41a)")
        return self._close(seats, time_ms, duplicates=True)

    def _close(self, seats: Iterable[int], time_ms: int | None, *, duplicates: bool) -> Collection:
        if self._closed:
            raise JackpotError("jackpot chips already collected for this round")
        accepted: list[int] = []
        refused: list[RefusedChip] = []
        for seat in seats:
            if isinstance(seat, bool) or not isinstance(seat, int) or seat not in self.table_seats:
                refused.append(RefusedChip(seat, Refusal.UNKNOWN_SEAT, time_ms))
            elif seat in accepted:
                if duplicates:
                    refused.append(RefusedChip(seat, Refusal.DUPLICATE, time_ms))
            elif seat not in self.main_bets:
                refused.append(RefusedChip(seat, Refusal.NO_MAIN_BET, time_ms))  # PT-2001 r.45
            else:
                accepted.append(seat)
        self._closed = True
        self._collection = Collection(tuple(sorted(accepted)), tuple(refused))
        return self._collection

    @property
    def collection(self) -> Collection | None:
        return self._collection


class Debouncer:
    """A raw input edge filter: a new level counts once it has held for ``settle_ms``.

    Pure: ``feed`` and ``poll`` take the current time, so tests use a fake clock.
    """

    def __init__(self, settle_ms: int, initial: bool = False) -> None:
        if settle_ms < 0:
            raise ValueError("settle_ms must be >= 0")
        self.settle_ms = settle_ms
        self.level = initial
        self._candidate: bool | None = None
        self._since = 0

    def feed(self, raw: bool, now_ms: int) -> bool | None:
        """A raw level sample/edge; returns the new stable level when it changes, else None."""
        if raw == self.level:
            self._candidate = None
        elif raw != self._candidate:
            self._candidate, self._since = raw, now_ms
        return self.poll(now_ms)

    def poll(self, now_ms: int) -> bool | None:
        if self._candidate is not None and now_ms - self._since >= self.settle_ms:
            self.level, self._candidate = self._candidate, None
            return self.level
        return None
