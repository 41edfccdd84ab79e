"""The typed pieces of the core's state, each with its plain (snapshot) form; which concern owns which:
docs/architecture.md, "The table core" (the snapshot format is persisted in journals: keep it byte for byte)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar, Self

from drivers.events import LidState


@dataclass
class SessionState:
    """The open (or last) session: its id, counters, who opened and closed it, the pinned configuration."""

    id: str | None = None
    no: int = 0
    packets: int = 0  # packets of cards loaded (PT-2001 r.53-54)
    opened_by: str | None = None
    rounds: int = 0
    pinned: dict[str, Any] | None = None  # digests and profile text pinned at open_table (issue 13 §2)
    closed_by: str | None = None

    def update(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "no": self.no,
            "packets": self.packets,
            "opened_by": self.opened_by,
            "rounds": self.rounds,
        }
        if self.pinned is not None:  # the snapshot format: the key only once it was set
            d["pinned"] = self.pinned
        if self.closed_by is not None:
            d["closed_by"] = self.closed_by
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SessionState:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


@dataclass
class ShoeState:
    """The current shoe: its number, cards dealt, the shoe's card sequence, the cut and the last round."""

    no: int = 0
    dealt: int = 0  # cards out since the shoe was shuffled
    last_seq: int = 0
    first_round: bool = True
    last_round: str | None = None  # None | "next" | round_id: the last round of this shoe (PT-2001 r.11)
    cutter: int | str | None = None  # seat (int) or "inspector": who cut the current shoe (r.8)
    shuffling: bool = False
    seq_restart: bool = False  # the shoe rebooted: its shoe_seq may start again at 1

    def update(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "no": self.no,
            "dealt": self.dealt,
            "last_seq": self.last_seq,
            "first_round": self.first_round,
            "last_round": self.last_round,
            "cutter": self.cutter,
            "shuffling": self.shuffling,
        }
        if self.seq_restart:  # the snapshot format: the key only while set
            d["seq_restart"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShoeState:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


class Unlock(StrEnum):
    """Why the lid may open now (``LidStatus.unlock``; state/lid ``unlocked_by``): an authorised supervisor's
    opening is ``supervisor:<user>``."""

    AUTO = "auto"  # after the round, for its cards (r.59-61)
    LOADING = "loading"  # the session's cards go in (r.53-54)
    CLOSING = "closing"  # the discard goes in before the inventory (r.55)
    SUPERVISOR = "supervisor"  # an authorised person (r.51, r.60)


@dataclass
class LidStatus:
    """The lid as the core knows it: the shoe's last report, who may open it now, the deadline to open."""

    state: LidState = LidState.LOCKED  # the shoe's last report (the lid machine's leaf state)
    unlock: Unlock | None = None  # None: locked; else why it may open now (lid.py's one writer)
    by: str | None = None  # who opened it (``Unlock.SUPERVISOR``: the supervisor's name)
    deadline: float | None = None  # ``Unlock.AUTO``: the lid must open before this (r.61)
    auto_before_restart: bool = False  # the service restarted during an automatic opening

    @property
    def unlocked_by(self) -> str | None:
        """``unlock`` as the snapshot, the records and the documents write it: "auto", "supervisor:<user>"."""
        if self.unlock is None:
            return None
        return self.unlock.value if self.by is None else f"{self.unlock.value}:{self.by}"

    def to_dict(self) -> dict[str, Any]:
        d = {"state": str(self.state), "unlock": self.unlocked_by, "deadline": self.deadline}
        if self.auto_before_restart:  # the snapshot format: the key only while set
            d["auto_before_restart"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LidStatus:
        lid = cls(**{key: d[key] for key in ("deadline", "auto_before_restart") if key in d})
        if "state" in d:
            lid.state = LidState(d["state"])
        if d.get("unlock") is not None:
            why, colon, by = str(d["unlock"]).partition(":")
            lid.unlock, lid.by = Unlock(why), (by if colon else None)
        return lid


@dataclass(kw_only=True)
class Plain:
    """Typed state with one plain form: ``to_dict`` gives the snapshot's (and the records' and events') dict,
    ``from_dict(to_dict())`` is the identity, also for an older snapshot missing a typed key (kept missing) or
    holding more (kept in ``untyped``)."""

    KEYS: ClassVar[tuple[str, ...]] = ()
    untyped: dict[str, Any] = field(default_factory=dict)  # keys this class does not type, as given
    absent: frozenset[str] = frozenset()  # typed keys an older snapshot did not have

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.KEYS if k not in self.absent}
        d.update(self.untyped)
        return d

    to_json = to_dict  # rounds.jsonable: a fault in a record or an event is its plain form

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.KEYS and name in self.__dict__.get("absent", ()):  # set again: present again
            object.__setattr__(self, "absent", self.absent - {name})
        object.__setattr__(self, name, value)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        fault = cls(
            **{k: d[k] for k in cls.KEYS if k in d}, untyped={k: v for k, v in d.items() if k not in cls.KEYS}
        )
        object.__setattr__(fault, "absent", frozenset(k for k in cls.KEYS if k not in d))
        return fault


@dataclass(kw_only=True)
class ShoeDevice(Plain):
    """The shoe as it last identified itself (``Identified``) and the newest event of this boot committed here
    (docs/protocol.md §5a); nothing known yet: every key absent (the snapshot's ``{}``)."""

    KEYS = ("continuous", "decks_loaded", "serial", "boot_id", "event_no")
    continuous: bool = True
    decks_loaded: int = 0
    serial: str = ""
    boot_id: Any = None
    event_no: int = 0

    @classmethod
    def unknown(cls) -> ShoeDevice:
        return cls.from_dict({})

    @property
    def known(self) -> bool:
        return bool(self.to_dict())

    @property
    def committed(self) -> tuple[int, int]:
        """(boot id, event number) of the newest shoe event committed here: the resume point (docs/protocol.md
        §5a); (0, 0) when nothing is known."""
        return int(self.boot_id or 0), int(self.event_no or 0)


@dataclass(kw_only=True)
class FaultInfo(Plain):
    """A raised fault (``TableCore.faults``: name -> one of the classes below); its plain form is the snapshot's,
    the ``events/fault`` info and the journal records'."""


@dataclass(kw_only=True)
class Bet(Plain):
    """A seat's bet while betting (minor units); published in state/table ``bets``."""

    KEYS = ("amount", "side_bets")
    amount: int = 0
    side_bets: dict[str, int] = field(default_factory=dict)


@dataclass(kw_only=True)
class PendingReplacement(Plain):
    """A damaged or unreadable card awaiting the chief inspector (PT-2001 r.51)."""

    KEYS = ("shoe_seq", "damaged")
    shoe_seq: int = 0
    damaged: bool = False


@dataclass(kw_only=True)
class DeckCheck(Plain):
    """The last deck check's result (PT-2001 r.55): discrepancies only, never the inventory's order."""

    KEYS = ("ok", "total", "missing", "extra", "unknown", "unreadable")
    ok: bool = False
    total: int = 0
    missing: dict[str, int] = field(default_factory=dict)
    extra: dict[str, int] = field(default_factory=dict)  # more copies of a card than decks (duplicated)
    unknown: dict[str, int] = field(default_factory=dict)
    unreadable: int = 0


@dataclass(kw_only=True)
class JamFault(FaultInfo):
    """PT-2001 r.51: cleared when the shoe reports it clear AND a supervisor clears it."""

    KEYS = ("location", "device_cleared", "cleared_by")
    location: str = "unknown"
    device_cleared: bool = False
    cleared_by: str | None = None


@dataclass(kw_only=True)
class LinkFault(FaultInfo):
    """The shoe link is down, or back (``restored``) and awaiting a supervisor's ``clear_link``."""

    KEYS = ("reason", "restored", "cleared_by")
    reason: str = ""
    restored: bool = False
    cleared_by: str | None = None


@dataclass(kw_only=True)
class TamperFault(FaultInfo):
    KEYS = ("at",)
    at: str = ""


@dataclass(kw_only=True)
class JournalFault(FaultInfo):
    """A journal write failed (issue 14 item 3)."""

    KEYS = ("kind", "reason", "at")
    kind: str = "io_error"
    reason: str = ""
    at: str = ""


@dataclass(kw_only=True)
class IntegrityFault(FaultInfo):
    """The chain, a snapshot or the pinned configuration does not check out (issue 13 §1-2); details untyped."""

    KEYS = ("reason", "at")
    reason: str = ""
    at: str = ""


@dataclass(kw_only=True)
class ShoeLineFault(FaultInfo):
    """``shoe_sequence`` / ``card_count`` (issue 13 §5); the card frame's details untyped."""

    KEYS = ("reason", "cleared_by")
    reason: str = ""
    cleared_by: str | None = None


FAULT_TYPES: dict[str, type[FaultInfo]] = {
    "jam": JamFault,
    "link_down": LinkFault,
    "tamper": TamperFault,
    "journal_io": JournalFault,
    "integrity": IntegrityFault,
    "shoe_sequence": ShoeLineFault,
    "card_count": ShoeLineFault,
}


def fault_from_dict(name: str, d: dict[str, Any]) -> FaultInfo:
    return FAULT_TYPES.get(name, FaultInfo).from_dict(d)
