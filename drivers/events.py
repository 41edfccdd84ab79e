"""Typed device events (shoe/reader -> controller) and commands (controller -> shoe).

This is the vocabulary between drivers/ and controller/: the driver turns frames into these objects and the
table state machine consumes them. Nothing here does I/O. Card codes: drivers/cards.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from drivers.cards import RANKS as RANKS  # the card alphabet (drivers/cards.py), also read as ev.RANKS
from drivers.cards import SUITS as SUITS

if TYPE_CHECKING:
    import asyncio


class LidState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    LOCKED = "locked"
    UNLOCKED = "unlocked"
    FORCED_OPEN = "forced_open"


class JamLocation(StrEnum):
    INPUT = "input"  # discard window / loading tray
    SHUFFLER = "shuffler"
    OUTPUT = "output"  # dealing path / card reader
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class DeviceEvent:
    """Base class. ``event_no``: the shoe's number of the event, 1-based per device boot (protocol v2,
    docs/protocol.md §5a); 0 for events the driver makes itself (LinkUp, LinkDown, Identified) and readers
    that do not number them."""

    device_time_ms: int = field(default=0, kw_only=True)
    event_no: int = field(default=0, kw_only=True)


@dataclass(frozen=True, slots=True)
class Identified(DeviceEvent):
    protocol_version: int
    model: str
    firmware: str
    serial_number: str
    decks_loaded: int
    continuous: bool  # True: continuous shuffler; False: batch shoe
    boot_id: int = field(default=0, kw_only=True)  # random per device power-up (IDENTIFY); 0: unknown


@dataclass(frozen=True, slots=True)
class CardOut(DeviceEvent):
    rank: str
    suit: str
    shoe_seq: int  # per-shoe card sequence number, 1-based, assigned by the device
    face_up: bool = False
    confidence: int = 100  # read confidence, percent

    @property
    def code(self) -> str:
        return f"{self.rank}{self.suit}"


@dataclass(frozen=True, slots=True)
class CardUnreadable(DeviceEvent):
    shoe_seq: int
    damaged: bool = False  # True: the reader reports physical damage (PT-2001 r.51)


@dataclass(frozen=True, slots=True)
class CutCardOut(DeviceEvent):
    """Batch shoe only: the cut card reached the output (end of the playable shoe)."""


@dataclass(frozen=True, slots=True)
class WarningCardOut(DeviceEvent):
    """Batch shoe only: the warning card ('carta-aviso', PT-2001 r.9/r.11) came out."""


@dataclass(frozen=True, slots=True)
class LidChanged(DeviceEvent):
    state: LidState


@dataclass(frozen=True, slots=True)
class ShuffleStarted(DeviceEvent):
    pass


@dataclass(frozen=True, slots=True)
class ShuffleFinished(DeviceEvent):
    cards_inside: int


@dataclass(frozen=True, slots=True)
class Jammed(DeviceEvent):
    location: JamLocation


@dataclass(frozen=True, slots=True)
class JamCleared(DeviceEvent):
    pass


@dataclass(frozen=True, slots=True)
class CardsInside(DeviceEvent):
    count: int


@dataclass(frozen=True, slots=True)
class DiscardInserted(DeviceEvent):
    """Cards put in through the discard window while the lid was open (PT-2001 r.59)."""

    count: int


@dataclass(frozen=True, slots=True)
class DeckCheckResult(DeviceEvent):
    """Inventory of the cards inside: ``counts`` maps card code ("AS") to how many were read."""

    counts: dict[str, int]
    unreadable: int = 0


@dataclass(frozen=True, slots=True)
class DeviceError(DeviceEvent):
    code: int
    text: str = ""


@dataclass(frozen=True, slots=True)
class LinkUp(DeviceEvent):
    """Emitted by the driver (not the device) when the link is (re)established and identified."""


@dataclass(frozen=True, slots=True)
class LinkDown(DeviceEvent):
    """Emitted by the driver when the link is declared down (silence timeout, unplug)."""

    reason: str = ""


# ---- commands -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Command:
    pass


@dataclass(frozen=True, slots=True)
class LockLid(Command):
    pass


@dataclass(frozen=True, slots=True)
class UnlockLid(Command):
    pass


@dataclass(frozen=True, slots=True)
class OpenLid(Command):
    """Automatic opening by the machine (PT-2001 r.60); never by the dealer's hand."""


@dataclass(frozen=True, slots=True)
class StartShuffle(Command):
    pass


@dataclass(frozen=True, slots=True)
class Dispense(Command):
    count: int = 1


@dataclass(frozen=True, slots=True)
class ReportCounts(Command):
    pass


@dataclass(frozen=True, slots=True)
class RunDeckCheck(Command):
    pass


@dataclass(frozen=True, slots=True)
class SetWarningLight(Command):
    on: bool
    blink: bool = False


@dataclass(frozen=True, slots=True)
class CommandResult:
    ok: bool
    error_code: int = 0
    text: str = ""


def drop_queued_after(queue: asyncio.Queue[DeviceEvent], event_no: int) -> int:
    """The shoe was asked again for every event after ``event_no`` (docs/protocol.md §5a): the numbered events
    after it still queued are dropped (they come again: not twice); the rest stay, in order. Returns how many
    were dropped."""
    kept, dropped = [], 0
    while not queue.empty():
        e = queue.get_nowait()
        if e.event_no <= event_no:  # not numbered (0), or not after the point
            kept.append(e)
        else:
            dropped += 1
    for e in kept:
        queue.put_nowait(e)
    return dropped
