"""What the pure core asks the shell to do. The shell journals ``JournalRecord``, ``Event`` and
``StateDocument`` in one transaction (the last two as outbox messages, their topics chosen by the shell:
controller/table/messages.py) and only after COMMIT executes ``Alert``, ``ShoeCommand`` and ``GpioWrite``
(CONTRIBUTING: nothing is actuated or published before the state it reports is durable)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from drivers.events import Command


@dataclass(frozen=True, slots=True)
class JournalRecord:
    kind: str
    data: dict[str, Any]


class EventKind(StrEnum):
    """What happened at the table (docs/mqtt.md "events"). The shell maps each kind to its topic
    (controller/table/messages.py); the core never names a topic."""

    CARD = "card"
    ROUND = "round"
    SETTLEMENT = "settlement"
    SHOE = "shoe"
    LID = "lid"
    JAM = "jam"
    DECK_CHECK = "deck_check"
    DEALER_ERROR = "dealer_error"
    JACKPOT = "jackpot"
    SESSION = "session"
    FAULT = "fault"
    DEALER = "dealer"  # the dealer on duty signed in / out (issue 29)
    PLAYER = "player"  # a player seated / unseated (issue 41)


class DocumentName(StrEnum):
    """The retained state documents the core keeps current (docs/mqtt.md "state")."""

    TABLE = "table"
    SHOE = "shoe"
    LID = "lid"
    JAM = "jam"
    ROUND = "round"
    JACKPOT = "jackpot"
    PLAYERS = "players"  # who sits where (issue 41): only once players were seated


@dataclass(frozen=True, slots=True)
class Event:
    """A domain event, committed with the input that caused it and then reported (not retained)."""

    kind: EventKind
    data: dict[str, Any]


class StateDocument:
    """A state document whose content changed: its canonical JSON ``text`` (the core compares texts to know
    what changed), decoded only if someone reads ``data``: the journal stores the text as it is."""

    __slots__ = ("_data", "name", "text")

    def __init__(self, name: DocumentName, text: str) -> None:
        self.name, self.text = name, text
        self._data: dict[str, Any] | None = None

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            data: dict[str, Any] = json.loads(self.text)
            self._data = data
            return data
        return self._data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StateDocument):
            return NotImplemented
        return (self.name, self.data) == (other.name, other.data)

    __hash__ = None  # type: ignore[assignment]  # mutable cache inside: not hashable, like the dataclasses

    def __repr__(self) -> str:
        return f"StateDocument({self.name.value!r}, {self.text!r})"


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str
    severity: str  # "info" | "warning" | "critical"
    reason: str  # cites the rule
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShoeCommand:
    command: Command


@dataclass(frozen=True, slots=True)
class GpioWrite:
    name: str  # "lid_lock" (True = locked) | "warning_light" (True = on)
    value: bool


Effect = JournalRecord | Event | StateDocument | Alert | ShoeCommand | GpioWrite


class Rejected(Exception):
    """A dealer input or supervisor action the rules or the current state forbid; it changed no state."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class JournalWriteFailed(Rejected):
    """A journal commit failed: nothing of it happened (``problem``: a journal_io.JournalProblem). A ``Rejected``,
    so every caller that answers a refusal (MQTT intake, buttons) answers this one with the reason instead of
    going silent. Defined here, beside ``Rejected``; journal_io.py names it too."""

    def __init__(self, problem: Any) -> None:
        super().__init__(f"not done: {problem.text}; the table is in the journal_io fault")
        self.problem = problem
